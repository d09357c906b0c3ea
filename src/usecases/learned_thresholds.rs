//! Thresholds learned from votes (issue 35): the "Detection quality" figures of a team's voted
//! species, applying one suggestion as the species' minimum confidence, and applying them by
//! themselves after votes when the team turned `learned_threshold_auto_apply` on. The rule is
//! [`crate::domain::learned_threshold`]; the settings are written like `PUT /settings/tenant`'s
//! (the same keys, then `Event::ConfigChanged`, so the inference worker drops its cached copy),
//! with the audit entry in the same transaction.

use serde::Serialize;
use serde_json::json;

use super::stats::{Names, StatsError};
use crate::{
    clock::Clock,
    domain::{
        learned_threshold::{self, Rules},
        settings::TenantSettings,
    },
    events::{Bus, Event},
    ids::{DetectionId, TenantId, UserId},
    inference::translations::Translations,
    store::{self, Store, audit::Entry},
};

/// The handles every function here needs.
pub struct Ctx<'a> {
    pub store: &'a Store,
    pub labels: &'a Translations,
    /// The hub's `inference.threshold`: a team without `min_confidence` keeps what reaches it.
    pub hub_threshold: f64,
}

/// One voted species on the Detection quality page.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub species_code: String,
    pub common_name: String,
    pub scientific_name: String,
    /// Detections people settled (confirmed + rejected).
    pub votes: u64,
    pub confirmed: u64,
    pub rejected: u64,
    /// Estimated share of right detections at today's threshold.
    pub precision: Option<f64>,
    /// The species' effective threshold today (its own, else the team's, else the hub's).
    pub current_threshold: f64,
    /// Whether `current_threshold` is the species' own entry in `species_min_confidence`.
    pub species_threshold: bool,
    pub suggested_threshold: Option<f64>,
    /// Kept detections between today's threshold and the suggestion.
    pub would_hide: u64,
    /// The species already has the suggested threshold.
    pub applied: bool,
}

/// The team's learning settings and its voted species.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Overview {
    pub precision_target: f64,
    pub min_votes: u32,
    pub auto_apply: bool,
    /// The team's threshold for species without their own.
    pub team_threshold: f64,
    /// Most votes first.
    pub species: Vec<Row>,
}

#[derive(Debug, thiserror::Error)]
pub enum QualityError {
    #[error("no species {0:?} with votes in this team")]
    SpeciesNotFound(String),
    #[error("too few votes, or no threshold reaches the team's precision target")]
    NoSuggestion,
    #[error("unknown language {0:?}; GET /species/languages lists them")]
    UnknownLanguage(String),
    #[error("{0}")]
    InvalidSettings(String),
    #[error(transparent)]
    Store(store::Error),
}

impl From<store::Error> for QualityError {
    fn from(e: store::Error) -> Self {
        Self::Store(e)
    }
}

impl From<StatsError> for QualityError {
    fn from(e: StatsError) -> Self {
        match e {
            StatsError::UnknownLanguage(l) => Self::UnknownLanguage(l),
            StatsError::Store(s) => Self::Store(s),
            other => Self::InvalidSettings(other.to_string()),
        }
    }
}

/// Who applies a threshold, for the audit log: a person (or key), or the hub itself.
#[derive(Debug, Clone, Default)]
pub struct Actor {
    pub user: Option<UserId>,
    pub api_key: Option<String>,
    pub ip: Option<String>,
}

impl Actor {
    /// The hub applying a suggestion by itself (auto-apply): no user, no key, no address.
    pub fn system() -> Self {
        Self::default()
    }
}

/// The team's threshold: its own `min_confidence`, else the hub's (a 32-bit value, shown to 0.001).
fn team_threshold(s: &TenantSettings, hub: f64) -> f64 {
    crate::domain::species_threshold::team(s, hub)
}

fn rules(s: &TenantSettings) -> Rules {
    Rules { precision: s.learned_threshold_precision, min_votes: s.learned_threshold_min_votes }
}

/// The row of one species from its groups and the team's settings.
fn row(code: &str, groups: &[learned_threshold::Group], s: &TenantSettings, hub: f64, names: &Names) -> Row {
    let own = s.species_min_confidence.get(code).copied();
    let current = own.unwrap_or_else(|| team_threshold(s, hub));
    let a = learned_threshold::assess(groups, current, rules(s));
    let named = names.name(code);
    Row {
        species_code: code.to_owned(),
        common_name: named.common_name,
        scientific_name: named.scientific_name,
        votes: a.votes,
        confirmed: a.confirmed,
        rejected: a.rejected,
        precision: a.precision,
        current_threshold: current,
        species_threshold: own.is_some(),
        applied: a.suggested.is_some_and(|t| (t - current).abs() < 1e-9),
        suggested_threshold: a.suggested,
        would_hide: a.would_hide,
    }
}

async fn settings(store: &Store, tenant: TenantId) -> Result<TenantSettings, store::Error> {
    let scope = tenant.to_string();
    store.call(move |c| store::settings::load(c, &scope)).await
}

/// The team's learning settings and a row per species with at least one settled detection.
pub async fn overview(ctx: &Ctx<'_>, tenant: TenantId, lang: Option<&str>) -> Result<Overview, QualityError> {
    let names = Names::load(ctx.store, ctx.labels, tenant, lang).await?;
    let s = settings(ctx.store, tenant).await?;
    let groups = ctx.store.call(move |c| store::learned_thresholds::groups(c, tenant, None)).await?;
    let mut species: Vec<Row> =
        groups.iter().map(|(code, g)| row(code, g, &s, ctx.hub_threshold, &names)).filter(|r| r.votes > 0).collect();
    species.sort_by(|a, b| b.votes.cmp(&a.votes).then_with(|| a.common_name.cmp(&b.common_name)));
    Ok(Overview {
        precision_target: s.learned_threshold_precision,
        min_votes: s.learned_threshold_min_votes,
        auto_apply: s.learned_threshold_auto_apply,
        team_threshold: team_threshold(&s, ctx.hub_threshold),
        species,
    })
}

/// Stores `code`'s suggested threshold in the team's `species_min_confidence`, with the audit
/// entry, in one transaction; then announces the settings change. Answers the updated row.
pub async fn apply(
    ctx: &Ctx<'_>,
    clock: &Clock,
    bus: &Bus,
    tenant: TenantId,
    code: String,
    by: Actor,
) -> Result<Row, QualityError> {
    let names = Names::load(ctx.store, ctx.labels, tenant, None).await?;
    let (hub, now) = (ctx.hub_threshold, clock.stamp());
    let applied = super::in_tx(ctx.store, move |tx| {
        let groups = store::learned_thresholds::groups(tx, tenant, Some(&code))?.remove(&code).unwrap_or_default();
        let mut s: TenantSettings = store::settings::load(tx, &tenant.to_string())?;
        let before = row(&code, &groups, &s, hub, &names);
        if before.votes == 0 {
            return Err(QualityError::SpeciesNotFound(code));
        }
        let Some(threshold) = before.suggested_threshold else { return Err(QualityError::NoSuggestion) };
        let previous = s.species_min_confidence.insert(code.clone(), threshold);
        s.validate().map_err(QualityError::InvalidSettings)?;
        let automatic = by.user.is_none() && by.api_key.is_none();
        let details = json!({
            "changed": ["species_min_confidence"], "learnedThreshold": true,
            "automatic": automatic,
            "speciesCode": code, "speciesName": before.common_name, "threshold": threshold, "previous": previous,
            "votes": before.votes, "precisionTarget": s.learned_threshold_precision,
        });
        save_species_minimums(tx, tenant, &s.species_min_confidence, by, details, now)?;
        Ok(row(&code, &groups, &s, hub, &names))
    })
    .await?;
    bus.publish(Event::ConfigChanged { tenant_id: tenant, satellite_id: None });
    Ok(applied)
}

/// Writes the team's `species_min_confidence` as `PUT /settings/tenant` would, with its audit
/// entry (`admin.tenant_settings_updated`, `details`), inside `tx`. The caller publishes
/// `Event::ConfigChanged` once the transaction is committed.
pub(super) fn save_species_minimums(
    tx: &rusqlite::Connection,
    tenant: TenantId,
    minimums: &std::collections::BTreeMap<String, f64>,
    by: Actor,
    details: serde_json::Value,
    now: crate::time::Timestamp,
) -> Result<(), store::Error> {
    store::settings::save_in(tx, &tenant.to_string(), &json!({ "species_min_confidence": minimums }), now)?;
    let entry = Entry {
        tenant_id: Some(tenant),
        actor_user_id: by.user,
        actor_api_key_id: by.api_key,
        action: "admin.tenant_settings_updated".into(),
        target_type: Some("tenant".into()),
        target_id: Some(tenant.to_string()),
        ip: by.ip,
        details,
    };
    store::audit::record(tx, &entry, now)?;
    Ok(())
}

/// After a vote on `detection` settled (or unsettled) it: when the team applies learned
/// thresholds by themselves and the species' suggestion is not in place, applies it as the
/// hub (the audit entry has no actor). Answers the applied row, if any.
pub async fn after_vote(
    ctx: &Ctx<'_>,
    clock: &Clock,
    bus: &Bus,
    tenant: TenantId,
    detection: DetectionId,
) -> Result<Option<Row>, QualityError> {
    let s = settings(ctx.store, tenant).await?;
    if !s.learned_threshold_auto_apply {
        return Ok(None);
    }
    let Some(code) = ctx.store.call(move |c| store::learned_thresholds::species_of(c, tenant, detection)).await? else {
        return Ok(None);
    };
    let c2 = code.clone();
    let groups = ctx.store.call(move |c| store::learned_thresholds::groups(c, tenant, Some(&c2))).await?;
    let groups = groups.get(&code).map(Vec::as_slice).unwrap_or_default();
    let own = s.species_min_confidence.get(&code).copied();
    let current = own.unwrap_or_else(|| team_threshold(&s, ctx.hub_threshold));
    let suggested = learned_threshold::assess(groups, current, rules(&s)).suggested;
    match suggested {
        Some(t) if (t - current).abs() >= 1e-9 => match apply(ctx, clock, bus, tenant, code, Actor::system()).await {
            Ok(r) => Ok(Some(r)),
            // A vote in between took the suggestion away: nothing to apply.
            Err(QualityError::NoSuggestion) => Ok(None),
            Err(e) => Err(e),
        },
        _ => Ok(None),
    }
}
