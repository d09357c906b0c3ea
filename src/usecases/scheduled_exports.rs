//! Scheduled exports (SPEC 2.17, 4.7 `/exports/scheduled`): a team's export file, made on a
//! five-field cron schedule in a time zone and sent to one of its alert channels.
//!
//! Body: `name`, `format` (`csv`, `json`, `checklist`, `observation`), `filters` (the export's
//! query names as an object, e.g. `{"days": 7, "minConfidence": 0.8}`), `cron`, `timezone` (IANA,
//! default the team's zone; it decides both the cron's wall clock and the "today" a run's `days`
//! count back from), `channelId` (an email or webhook channel of the team), `enabled`
//! (default true). On `PUT`, fields left out keep their values; the next run is worked out again
//! from now.
//!
//! Runs ([`run_due`], called by `jobs::scheduled_exports`): a due schedule is claimed by moving
//! its next run to the first time after now, so a hub that was down across several times runs
//! it once; then the file is rendered and queued in the alert delivery outbox, whose retries and
//! log it shares. The outbox copies each attempt's outcome back to the schedule (a trigger in
//! the schedule's migration), so `lastStatus` is `sending`, `delivered` or `failed`.

use std::str::FromStr;

use chrono::{DateTime, SecondsFormat};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    exports::{self, ExportFile, Filters, Format},
    in_tx,
};
use crate::{
    domain::{
        channels::ChannelKind,
        cron_schedule::{CronError, CronSchedule},
        validate,
    },
    ids::TenantId,
    store::{
        self, Store,
        alert_deliveries::NewDelivery,
        scheduled_exports::{Fields, ScheduledExport},
    },
    time::Timestamp,
};

/// How many coming run times a response shows.
pub const NEXT_RUNS: usize = 3;
/// The largest file a mail carries (most mail servers refuse more).
pub const MAX_MAIL_BYTES: usize = 20 * 1024 * 1024;
/// The largest file a webhook POST carries.
pub const MAX_WEBHOOK_BYTES: usize = 100 * 1024 * 1024;
/// Schedules a pass runs at most; the rest wait for the next pass.
const PER_PASS: u32 = 16;

#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("{0}")]
    Invalid(String),
    #[error("format must be one of csv, json, checklist, observation, not {0:?}")]
    UnknownFormat(String),
    #[error("{0}")]
    InvalidCron(String),
    #[error("{0:?} is not a time zone name the hub knows: give a place's zone such as Europe/Berlin or UTC")]
    InvalidTimezone(String),
    #[error("filters: {0}")]
    InvalidFilters(String),
    #[error("alert channel {0:?} is not one of this team's channels")]
    UnknownChannel(String),
    #[error("a scheduled export is delivered by an email or webhook channel, not a {0} channel")]
    ChannelType(String),
    #[error("no such scheduled export")]
    NotFound,
    #[error(transparent)]
    Store(store::Error),
}
from_store_error!(ScheduleError, not_found => NotFound);

impl From<CronError> for ScheduleError {
    fn from(e: CronError) -> Self {
        Self::InvalidCron(e.0)
    }
}

/// A schedule body as sent.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScheduleInput {
    pub name: Option<String>,
    pub format: Option<String>,
    pub filters: Option<Value>,
    pub cron: Option<String>,
    pub timezone: Option<String>,
    pub channel_id: Option<String>,
    pub enabled: Option<bool>,
}

/// A schedule as responses show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleView {
    pub id: String,
    pub name: String,
    pub format: String,
    pub filters: Value,
    pub cron: String,
    pub timezone: String,
    /// `null` once the channel was deleted (the runs fail until another is chosen).
    pub channel_id: Option<String>,
    pub enabled: bool,
    /// The next [`NEXT_RUNS`] run times with the zone's offset; empty while disabled.
    pub next_runs: Vec<String>,
    pub last_run_at: Option<Timestamp>,
    /// `sending`, `delivered` or `failed`; `null` before the first run.
    pub last_status: Option<String>,
    pub last_error: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

pub async fn list(store: &Store, tenant: TenantId, now: Timestamp) -> Result<Vec<ScheduleView>, ScheduleError> {
    let rows = store.call(move |c| store::scheduled_exports::list(c, tenant)).await?;
    Ok(rows.into_iter().map(|r| view(r, now)).collect())
}

pub async fn get(store: &Store, tenant: TenantId, id: String, now: Timestamp) -> Result<ScheduleView, ScheduleError> {
    Ok(view(store.call(move |c| store::scheduled_exports::get(c, tenant, &id)).await?, now))
}

pub async fn create(
    store: &Store,
    tenant: TenantId,
    input: ScheduleInput,
    now: Timestamp,
) -> Result<ScheduleView, ScheduleError> {
    let name = validate::name(input.name.as_deref().unwrap_or_default(), "name").map_err(ScheduleError::Invalid)?;
    let format = format(input.format.as_deref().ok_or_else(|| ScheduleError::Invalid("format is required".into()))?)?;
    let cron = CronSchedule::parse(
        input
            .cron
            .as_deref()
            .ok_or_else(|| ScheduleError::InvalidCron("cron is required, e.g. \"0 6 * * 1\"".into()))?,
    )?;
    let zone = match input.timezone.as_deref() {
        Some(z) => zone(z)?,
        None => store.team_zone(tenant).await?,
    };
    let filters = filters(store, tenant, input.filters.unwrap_or_else(|| Value::Object(Map::new())), now).await?;
    let channel_id = input.channel_id.ok_or_else(|| ScheduleError::Invalid("channelId is required".into()))?;
    let enabled = input.enabled.unwrap_or(true);
    let checked = Checked { name, format, filters, cron, zone, channel_id, enabled };
    save(store, tenant, None, checked, now).await
}

pub async fn update(
    store: &Store,
    tenant: TenantId,
    id: String,
    input: ScheduleInput,
    now: Timestamp,
) -> Result<ScheduleView, ScheduleError> {
    let key = id.clone();
    let old = store.call(move |c| store::scheduled_exports::get(c, tenant, &key)).await?;
    let name = match &input.name {
        Some(n) => validate::name(n, "name").map_err(ScheduleError::Invalid)?,
        None => old.name.clone(),
    };
    let format = format(input.format.as_deref().unwrap_or(&old.format))?;
    let cron = CronSchedule::parse(input.cron.as_deref().unwrap_or(&old.cron))?;
    let zone = zone(input.timezone.as_deref().unwrap_or(&old.timezone))?;
    let filters = match input.filters {
        Some(f) => filters(store, tenant, f, now).await?,
        None => old.filters.clone(),
    };
    let Some(channel_id) = input.channel_id.or_else(|| old.channel_id.clone()) else {
        return Err(ScheduleError::Invalid("the export's channel was deleted: send a channelId".into()));
    };
    let enabled = input.enabled.unwrap_or(old.enabled);
    let checked = Checked { name, format, filters, cron, zone, channel_id, enabled };
    save(store, tenant, Some(id), checked, now).await
}

/// A schedule whose every field passed its check, ready to be written.
struct Checked {
    name: String,
    format: Format,
    filters: Map<String, Value>,
    cron: CronSchedule,
    zone: Tz,
    channel_id: String,
    enabled: bool,
}

/// Writes a checked schedule (a new one without `id`) with its next run, after checking in the
/// same transaction that the channel is still the team's.
async fn save(
    store: &Store,
    tenant: TenantId,
    id: Option<String>,
    c: Checked,
    now: Timestamp,
) -> Result<ScheduleView, ScheduleError> {
    let next = next_run(&c.cron, c.zone, now)?;
    let row = in_tx::<_, ScheduleError, _>(store, move |tx| {
        check_channel(tx, tenant, &c.channel_id)?;
        let fields = Fields {
            name: &c.name,
            format: format_str(c.format),
            filters: &c.filters,
            cron: &c.cron.source,
            timezone: c.zone.name(),
            channel_id: &c.channel_id,
            enabled: c.enabled,
            next_run_at: next,
        };
        Ok(match &id {
            None => store::scheduled_exports::insert(tx, tenant, &fields, now)?,
            Some(id) => store::scheduled_exports::update(tx, tenant, id, &fields, now)?,
        })
    })
    .await?;
    Ok(view(row, now))
}

/// Deletes a schedule; returns it for the audit log. A delivery already queued still goes out.
pub async fn delete(store: &Store, tenant: TenantId, id: String) -> Result<ScheduledExport, ScheduleError> {
    in_tx::<_, ScheduleError, _>(store, move |tx| Ok(store::scheduled_exports::delete(tx, tenant, &id)?)).await
}

/// Runs every schedule whose time has come, each once however many of its times passed while
/// the hub was down, and returns how many ran. A failed render or queueing is recorded on the
/// schedule as `failed` with its reason; it does not stop the pass.
pub async fn run_due(env: &exports::Env, now: Timestamp) -> Result<usize, store::Error> {
    let due = env.store.call(move |c| store::scheduled_exports::due(c, now, PER_PASS)).await?;
    let mut ran = 0;
    for s in due {
        let next = CronSchedule::parse(&s.cron)
            .ok()
            .zip(Tz::from_str(&s.timezone).ok())
            .and_then(|(cron, zone)| cron.next_after(now.at(), zone));
        // A stored schedule that no longer evaluates (it was checked when saved) waits a day.
        let next = Timestamp(next.unwrap_or(now.at() + chrono::Duration::days(1)));
        let (id, was) = (s.id.clone(), s.next_run_at);
        let claimed = env
            .store
            .call(move |c| {
                let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                let claimed = store::scheduled_exports::claim(&tx, &id, was, next)?;
                tx.commit()?;
                Ok(claimed)
            })
            .await?;
        if !claimed {
            continue;
        }
        ran += 1;
        let (status, error, delivery) = match run_one(env, &s, now).await {
            Ok(delivery) => ("sending", None, Some(delivery)),
            Err(reason) => {
                tracing::warn!(schedule = %s.id, tenant = %s.tenant_id, error = %reason, "a scheduled export failed");
                ("failed", Some(reason), None)
            }
        };
        let id = s.id.clone();
        env.store
            .call(move |c| {
                let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                store::scheduled_exports::record_run(&tx, &id, now, status, error.as_deref(), delivery.as_deref())?;
                tx.commit()?;
                Ok(())
            })
            .await?;
    }
    Ok(ran)
}

/// Runs one of the team's schedules now ("Run now" on the Exports page), whatever its cron says,
/// and records the run on it; its next scheduled run stays as it was. A failed render is recorded
/// like a scheduled failure and shown in the answer's `lastStatus`/`lastError`.
pub async fn run_now(
    env: &exports::Env,
    tenant: TenantId,
    id: String,
    now: Timestamp,
) -> Result<ScheduleView, ScheduleError> {
    let key = id.clone();
    let s = env.store.call(move |c| store::scheduled_exports::get(c, tenant, &key)).await?;
    let (status, error, delivery) = match run_one(env, &s, now).await {
        Ok(delivery) => ("sending", None, Some(delivery)),
        Err(reason) => ("failed", Some(reason), None),
    };
    let row = in_tx::<_, ScheduleError, _>(&env.store, move |tx| {
        store::scheduled_exports::record_run(tx, &id, now, status, error.as_deref(), delivery.as_deref())?;
        Ok(store::scheduled_exports::get(tx, tenant, &id)?)
    })
    .await?;
    Ok(view(row, now))
}

/// Renders one schedule's file and queues it for its channel; the outbox row's id, or why not.
async fn run_one(env: &exports::Env, s: &ScheduledExport, now: Timestamp) -> Result<String, String> {
    let Some(channel_id) = s.channel_id.clone() else {
        return Err("the export's channel was deleted; choose another channel".into());
    };
    let format = format(&s.format).map_err(|e| e.to_string())?;
    let mut filters: Filters = serde_json::from_value(Value::Object(s.filters.clone()))
        .map_err(|e| format!("the stored filters no longer read: {e}"))?;
    // The run's days are the schedule's: "the last 7 days" ends on today in its zone.
    filters.zone = Tz::from_str(&s.timezone).ok();
    let made = async {
        let lang = exports::language(&env.store, s.tenant_id, None, filters.lang.as_deref()).await?;
        let langs = super::species::reading_languages(&env.store, s.tenant_id, None).await?;
        let filters = exports::name_search(env, filters, langs).await;
        exports::render(env, s.tenant_id, &lang, format, &filters, now.at()).await
    };
    let file = made.await.map_err(|e| format!("the export could not be made: {e}"))?;
    let tenant = s.tenant_id;
    env.store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let channel = match store::alert_channels::get(&tx, tenant, &channel_id) {
                Ok(ch) => ch,
                Err(store::Error::NotFound) => return Ok(Err("the export's channel was deleted".to_owned())),
                Err(e) => return Err(e),
            };
            if let Err(why) = fits(&channel.kind, &file) {
                return Ok(Err(why));
            }
            let d = NewDelivery {
                tenant_id: tenant,
                channel_id: &channel_id,
                alert_id: None,
                event: "scheduled_export",
                content_type: file.content_type,
                body: &file.bytes,
            };
            let id = store::alert_deliveries::enqueue_file(&tx, &d, &file.file_name, now)?;
            tx.commit()?;
            Ok(Ok(id))
        })
        .await
        .map_err(|e| format!("the export could not be queued: {e}"))?
}

/// Whether the channel can carry the file.
fn fits(kind: &str, file: &ExportFile) -> Result<(), String> {
    let mb = |n: usize| n.div_ceil(1024 * 1024);
    let limit = match ChannelKind::parse(kind) {
        Some(ChannelKind::Email) => MAX_MAIL_BYTES,
        Some(ChannelKind::Webhook) => MAX_WEBHOOK_BYTES,
        _ => return Err(format!("a {kind} channel cannot carry a file; choose an email or webhook channel")),
    };
    if file.bytes.len() > limit {
        return Err(format!(
            "the file is {} MB, over the {} MB a {kind} channel carries; narrow the filters (e.g. fewer days)",
            mb(file.bytes.len()),
            mb(limit)
        ));
    }
    Ok(())
}

/// The team's channel `id` if it can carry a file.
fn check_channel(conn: &rusqlite::Connection, tenant: TenantId, id: &str) -> Result<(), ScheduleError> {
    let channel = match store::alert_channels::get(conn, tenant, id) {
        Ok(c) => c,
        Err(store::Error::NotFound) => return Err(ScheduleError::UnknownChannel(id.to_owned())),
        Err(e) => return Err(ScheduleError::Store(e)),
    };
    match ChannelKind::parse(&channel.kind) {
        Some(ChannelKind::Email | ChannelKind::Webhook) => Ok(()),
        _ => Err(ScheduleError::ChannelType(channel.kind)),
    }
}

fn format(raw: &str) -> Result<Format, ScheduleError> {
    serde_json::from_value(Value::String(raw.to_owned())).map_err(|_| ScheduleError::UnknownFormat(raw.to_owned()))
}

fn format_str(f: Format) -> &'static str {
    match f {
        Format::Csv => "csv",
        Format::Json => "json",
        Format::Checklist => "checklist",
        Format::Observation => "observation",
    }
}

fn zone(raw: &str) -> Result<Tz, ScheduleError> {
    Tz::from_str(raw.trim()).map_err(|_| ScheduleError::InvalidTimezone(raw.to_owned()))
}

fn next_run(cron: &CronSchedule, zone: Tz, now: Timestamp) -> Result<Timestamp, ScheduleError> {
    cron.next_after(now.at(), zone)
        .map(Timestamp)
        .ok_or_else(|| ScheduleError::InvalidCron(format!("cron {:?} never fires again", cron.source)))
}

/// Checks the filters as the export will read them: only the export's names, each of the right
/// type, and the values the export accepts for this team (ranges, satellite, language).
async fn filters(
    store: &Store,
    tenant: TenantId,
    raw: Value,
    now: Timestamp,
) -> Result<Map<String, Value>, ScheduleError> {
    let Value::Object(given) = raw else {
        return Err(ScheduleError::InvalidFilters("must be an object, e.g. {\"days\": 7}".into()));
    };
    let known = match serde_json::to_value(Filters::default()) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    if let Some(unknown) = given.keys().find(|k| !known.contains_key(k.as_str())) {
        let names = known.keys().map(String::as_str).collect::<Vec<_>>().join(", ");
        return Err(ScheduleError::InvalidFilters(format!("unknown filter {unknown:?}; the filters are {names}")));
    }
    let parsed: Filters =
        crate::domain::serde_words::from_value(Value::Object(given), "").map_err(ScheduleError::InvalidFilters)?;
    exports::check(store, tenant, &parsed, now.at(), true).await.map_err(|e| match e {
        exports::ExportError::Store(e) => ScheduleError::Store(e),
        other => ScheduleError::InvalidFilters(other.to_string()),
    })?;
    // Stored as the export reads them back (without the defaults), so a run sees what was checked.
    match serde_json::to_value(&parsed) {
        Ok(Value::Object(m)) => Ok(m.into_iter().filter(|(k, v)| known.get(k) != Some(v)).collect()),
        _ => Err(ScheduleError::InvalidFilters("could not be stored".into())),
    }
}

fn view(s: ScheduledExport, now: Timestamp) -> ScheduleView {
    let next_runs = match (s.enabled, CronSchedule::parse(&s.cron), Tz::from_str(&s.timezone)) {
        (true, Ok(cron), Ok(zone)) => cron.upcoming(now.at(), zone, NEXT_RUNS).iter().map(iso).collect(),
        _ => Vec::new(),
    };
    ScheduleView {
        id: s.id,
        name: s.name,
        format: s.format,
        filters: Value::Object(s.filters),
        cron: s.cron,
        timezone: s.timezone,
        channel_id: s.channel_id,
        enabled: s.enabled,
        next_runs,
        last_run_at: s.last_run_at,
        last_status: s.last_status,
        last_error: s.last_error,
        created_at: s.created_at,
        updated_at: s.updated_at,
    }
}

fn iso(t: &DateTime<Tz>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, false)
}
