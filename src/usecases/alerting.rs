//! The alert engine (SPEC 2.15, 4.6, 6.3): decides which rules fire and raises their alerts with
//! one delivery per wired channel, in the caller's transaction, so an alert and its deliveries are
//! committed together or not at all (the outbox; `usecases::alert_delivery` sends them).
//!
//! - Detection rules run inside the inference workers' batch transaction ([`on_detections`]):
//!   a crash can never keep a detection and lose its alert.
//! - Absence and trend rules run every minute (`usecases::alert_watch`, `jobs::alert_watch`).
//! - The satellite monitor raises `satellite_offline` through [`raise`] under the system rule.
//!
//! Cooldowns: a detection rule fires once per cooldown for each satellite and species; an absence
//! rule once per silence of each watched scope; a trend rule once per day.

use std::{collections::HashMap, sync::Arc};

use chrono_tz::Tz;
use rusqlite::Connection;

use crate::{
    config::Settings,
    domain::{
        alert_rules::{self, Conditions, DetectionConditions, DetectionFacts, Trigger},
        channels::ChannelKind,
        settings::TenantSettings,
        zone,
    },
    events::{Bus, Event},
    ids::{SatelliteId, TenantId},
    inference::translations::Translations,
    links::Links,
    notify::{self, Notice, NoticeData},
    store::{self, alert_rules::Rule, alerts::Alert, detections::Stored},
    time::Timestamp,
};

/// What the engine needs besides the database: names in other languages and the hub's links.
#[derive(Clone)]
pub struct AlertContext {
    pub translations: Translations,
    pub links: Links,
    pub settings: Arc<Settings>,
}

impl AlertContext {
    pub fn new(settings: Arc<Settings>, links: Links, translations: Translations) -> Self {
        Self { translations, links, settings }
    }

    /// An absolute link to `path` on the hub (from `http.public_url`, never a request).
    pub fn link(&self, path: &str) -> String {
        format!("{}{path}", self.links.get(&self.settings).http_base)
    }
}

/// An alert that was raised, to announce on the bus once its transaction committed.
#[derive(Debug, Clone)]
pub struct Raised {
    pub tenant_id: TenantId,
    pub alert: Alert,
    pub deliveries: usize,
}

/// Announces committed alerts: WebSocket clients get an `alert` frame, and the sender wakes.
pub fn announce(bus: &Bus, raised: Vec<Raised>) {
    for r in raised {
        let value = serde_json::to_value(&r.alert).unwrap_or_default();
        bus.publish(Event::AlertRaised { tenant_id: r.tenant_id, alert: Arc::new(value) });
    }
}

/// Inserts the alert for `notice` under `rule` and one pending delivery per enabled channel the
/// rule names, rendered now so every retry sends the same bytes. A channel whose body cannot be
/// rendered (a template that fails on this notice) gets a failed delivery saying why.
pub fn raise(conn: &Connection, rule: &Rule, mut notice: Notice, now: Timestamp) -> store::Result<Raised> {
    let data = serde_json::to_value(&notice.data).unwrap_or_default();
    let new = store::alerts::NewAlert {
        tenant_id: rule.tenant_id,
        rule_id: Some(&rule.id),
        kind: &notice.event,
        title: &notice.title,
        message: &notice.message,
        data: &data,
    };
    let alert = store::alerts::insert(conn, &new, now)?;
    notice.alert_id = Some(alert.id.clone());
    let mut deliveries = 0;
    for channel_id in &rule.channel_ids {
        let channel = match store::alert_channels::get(conn, rule.tenant_id, channel_id) {
            Ok(c) if c.enabled => c,
            Ok(_) | Err(store::Error::NotFound) => continue,
            Err(e) => return Err(e),
        };
        let Some(kind) = ChannelKind::parse(&channel.kind) else { continue };
        let rendered = notify::render::for_channel(kind, &channel.config, channel.payload_template.as_deref(), &notice);
        let (content_type, body, error) = match &rendered {
            Ok(r) => (r.content_type, r.body.as_slice(), None),
            Err(e) => ("text/plain", &[][..], Some(e.as_str())),
        };
        let d = store::alert_deliveries::NewDelivery {
            tenant_id: rule.tenant_id,
            channel_id: &channel.id,
            alert_id: Some(&alert.id),
            event: &notice.event,
            content_type,
            body,
        };
        let id = store::alert_deliveries::enqueue(conn, &d, now)?;
        if let Some(error) = error {
            let failed = store::alert_deliveries::Attempt {
                after: store::alert_deliveries::After::Failed,
                http_status: None,
                error: Some(error),
                duration_ms: 0,
            };
            store::alert_deliveries::record_attempt(conn, &id, 0, &failed, now)?;
        }
        deliveries += 1;
    }
    Ok(Raised { tenant_id: rule.tenant_id, alert, deliveries })
}

/// Runs the teams' detection rules over a batch of new detections, inside the batch's transaction.
pub fn on_detections(
    conn: &Connection,
    stored: &[Stored],
    ctx: &AlertContext,
    now: Timestamp,
) -> store::Result<Vec<Raised>> {
    let mut rules: HashMap<TenantId, Vec<(Rule, DetectionConditions)>> = HashMap::new();
    let mut zones: HashMap<SatelliteId, Tz> = HashMap::new();
    let mut raised = Vec::new();
    for d in stored {
        if let std::collections::hash_map::Entry::Vacant(slot) = rules.entry(d.tenant_id) {
            let mut list = Vec::new();
            for rule in store::alert_rules::enabled(conn, d.tenant_id, Trigger::Detection.as_str())? {
                match Conditions::parse(Trigger::Detection, rule.conditions.clone()) {
                    Ok(Conditions::Detection(c)) => list.push((rule, c)),
                    Ok(_) | Err(_) => tracing::error!(rule = %rule.id, "stored detection rule does not parse; skipped"),
                }
            }
            slot.insert(list);
        }
        let team_rules = rules.get(&d.tenant_id).map(Vec::as_slice).unwrap_or_default();
        if team_rules.is_empty() {
            continue;
        }
        // A rule's hours and the alert's text are the detecting station's local time.
        let tz = match zones.get(&d.satellite_id) {
            Some(tz) => *tz,
            None => {
                let tz = store::zones::satellite_zone(conn, &d.satellite_id)?;
                zones.insert(d.satellite_id, tz);
                tz
            }
        };
        let facts = DetectionFacts {
            species_code: &d.species_code,
            scientific_name: &d.scientific_name,
            confidence: d.confidence,
            satellite_id: d.satellite_id.0,
            is_rare: d.is_rare,
            not_expected_here: d.rare_reason.as_deref() == Some("not_expected_here") || d.expected_here == Some(false),
            is_first_of_day: d.is_first_of_day,
            is_first_of_season: d.is_first_of_season,
            is_first_for_team: d.is_first_for_team,
            local_hour: zone::local_hour(d.detected_at.at(), tz),
        };
        let mut settings: Option<TenantSettings> = None;
        for (rule, conditions) in team_rules {
            let Some(event) = conditions.matches(&facts) else { continue };
            let key = format!("{}:{}", d.satellite_id, d.species_code);
            let last = store::alert_rules::last_fired(conn, &rule.id, &key)?;
            if !alert_rules::cooled_down(last.map(Timestamp::at), rule.cooldown_minutes.max(0) as u32, now.at()) {
                continue;
            }
            store::alert_rules::fired(conn, &rule.id, &key, now)?;
            if settings.is_none() {
                settings = Some(store::settings::load(conn, &d.tenant_id.to_string())?);
            }
            let notice = detection_notice(d, event, rule, (settings.as_ref(), tz), ctx, now);
            raised.push(raise(conn, rule, notice, now)?);
        }
    }
    Ok(raised)
}

fn detection_notice(
    d: &Stored,
    event: &str,
    rule: &Rule,
    (settings, tz): (Option<&TenantSettings>, Tz),
    ctx: &AlertContext,
    now: Timestamp,
) -> Notice {
    let mut names = std::collections::BTreeMap::new();
    let languages = settings.map(|s| (s.primary_language.clone(), s.secondary_language.clone()));
    let (primary, secondary) = languages.unwrap_or_else(|| ("en".into(), None));
    for lang in std::iter::once(primary.clone()).chain(secondary) {
        let name = ctx.translations.common_name(&lang, &d.species_code);
        let name = name.or_else(|| (lang == "en").then(|| d.common_name.clone()));
        if let Some(name) = name {
            names.insert(lang, name);
        }
    }
    let common = names.get(&primary).cloned().unwrap_or_else(|| d.common_name.clone());
    let percent = (d.confidence * 100.0).round();
    let (title, why) = match event {
        "rare_species" => (format!("Rare: {common} at {}", d.satellite_name), rare_why(d)),
        "first_for_team" => (format!("New for the team: {common} at {}", d.satellite_name), String::new()),
        "first_of_season" => (format!("First {common} of the season at {}", d.satellite_name), String::new()),
        "first_of_day" => (format!("First {common} today at {}", d.satellite_name), String::new()),
        _ => (format!("{common} at {}", d.satellite_name), String::new()),
    };
    let message = format!(
        "{common} ({}) heard by {} at {} with {percent}% confidence.{why}",
        d.scientific_name,
        d.satellite_name,
        crate::time::readable_in(d.detected_at, tz)
    );
    Notice {
        event: event.to_owned(),
        timestamp: now,
        tenant_id: d.tenant_id,
        alert_id: None,
        rule_name: Some(rule.name.clone()),
        title,
        message,
        link: Some(ctx.link(&format!("/detections/{}", d.id))),
        data: NoticeData {
            species: Some(d.scientific_name.clone()),
            common_name: Some(common),
            common_names: names,
            species_code: Some(d.species_code.clone()),
            confidence: Some(d.confidence),
            satellite_id: Some(d.satellite_id),
            satellite_name: Some(d.satellite_name.clone()),
            detection_id: Some(d.id),
            detected_at: Some(d.detected_at),
            extra: Default::default(),
            zone: Some(tz),
        },
    }
}

/// Why a detection is rare, and whether it is also new for the team. Rare means only "not
/// expected here" (issue 36): a first record alone never raises a `rare_species` alert.
fn rare_why(d: &Stored) -> String {
    let mut why = String::new();
    if d.is_rare {
        why.push_str(" The range model does not expect it at this place and week.");
    }
    if d.is_first_for_team {
        why.push_str(" It is the team's first record of this species.");
    }
    why
}

/// Acknowledges alert `id` of `tenant` (by `user`, none for a key); an unknown id is `NotFound`.
pub async fn acknowledge(
    store: &crate::store::Store,
    clock: &crate::clock::Clock,
    tenant: crate::ids::TenantId,
    id: String,
    user: Option<crate::ids::UserId>,
) -> store::Result<store::alerts::Alert> {
    let now = clock.stamp();
    store.call(move |c| store::alerts::acknowledge(c, tenant, &id, user, now)).await
}
