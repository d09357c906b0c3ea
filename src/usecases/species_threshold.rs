//! A species' threshold as a detection page reads it, and "raise this species' threshold"
//! (issue 51): a raise that would not raise (the species already needs as much or more, by its
//! own entry, a learned threshold applied, the team's or the hub's minimum) is refused, so the
//! shortcut can never lower what a team set. The rule is [`crate::domain::species_threshold`];
//! the settings are written like `PUT /settings/tenant`'s (then `Event::ConfigChanged`), with
//! the audit entry in the same transaction.

use serde::Serialize;
use serde_json::json;

use super::{
    learned_thresholds::{Actor, Ctx, save_species_minimums},
    stats::{Names, StatsError},
};
use crate::{
    clock::Clock,
    domain::{
        settings::TenantSettings,
        species_threshold::{self, Effective, Source},
    },
    events::{Bus, Event},
    ids::TenantId,
    store,
};

/// A species' threshold today.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Threshold {
    pub species_code: String,
    /// In the team's primary language.
    pub common_name: String,
    pub threshold: f64,
    /// `species` (its own, or a learned one applied), `team` or `hub`.
    pub source: Source,
}

/// A raise done: the species' threshold before and after.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Raised {
    pub species_code: String,
    pub common_name: String,
    pub previous: f64,
    pub previous_source: Source,
    pub threshold: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum RaiseError {
    /// The species already needs `current` or more: this would lower it or change nothing.
    #[error("{name} already needs a confidence of {current:.2}; a raise must be above that")]
    NotARaise { name: String, current: f64 },
    #[error("a species' threshold is between 0.01 and 0.99, not {0}")]
    OutOfRange(f64),
    #[error("the hub's model knows no species {0:?}")]
    UnknownSpecies(String),
    /// Naming the species (the team's names).
    #[error(transparent)]
    Names(#[from] StatsError),
    #[error(transparent)]
    Store(#[from] store::Error),
}

async fn names(ctx: &Ctx<'_>, tenant: TenantId, lang: Option<&str>) -> Result<Names, StatsError> {
    Names::load(ctx.store, ctx.labels, tenant, lang).await
}

fn common(names: &Names, code: &str) -> String {
    let n = names.name(code).common_name;
    if n.is_empty() { code.to_owned() } else { n }
}

/// `code`'s threshold in `tenant` today, the species named in `lang` (default: the team's).
pub async fn current(
    ctx: &Ctx<'_>,
    tenant: TenantId,
    code: String,
    lang: Option<&str>,
) -> Result<Threshold, RaiseError> {
    let names = names(ctx, tenant, lang).await?;
    let scope = tenant.to_string();
    let s: TenantSettings = ctx.store.call(move |c| store::settings::load(c, &scope)).await?;
    let Effective { value, source } = species_threshold::effective(&s, &code, ctx.hub_threshold);
    Ok(Threshold { common_name: common(&names, &code), species_code: code, threshold: value, source })
}

/// What a raise asks for.
pub struct Raise {
    pub code: String,
    pub to: f64,
    /// The language the answer and a refusal name the species in (default: the team's).
    pub lang: Option<String>,
}

/// Sets `code`'s own threshold to `to`, only when that is above what it needs today (read in
/// the same transaction as the write, so a change made meanwhile is never lowered).
pub async fn raise(
    ctx: &Ctx<'_>,
    clock: &Clock,
    bus: &Bus,
    tenant: TenantId,
    Raise { code, to, lang }: Raise,
    by: Actor,
) -> Result<Raised, RaiseError> {
    if !(0.01..=species_threshold::MAX).contains(&to) {
        return Err(RaiseError::OutOfRange(to));
    }
    let to = (to * 100.0).round() / 100.0;
    let names = names(ctx, tenant, lang.as_deref()).await?;
    let name = common(&names, &code);
    let (hub, now, labels) = (ctx.hub_threshold, clock.stamp(), ctx.labels.clone());
    let raised = super::in_tx(ctx.store, move |tx| {
        let before: TenantSettings = store::settings::load(tx, &tenant.to_string())?;
        let was = species_threshold::effective(&before, &code, hub);
        if !species_threshold::raises(to, was.value) {
            return Err(RaiseError::NotARaise { name, current: was.value });
        }
        let mut next = before.clone();
        next.species_min_confidence.insert(code.clone(), to);
        if super::detection_settings::check_codes(&labels, &next, &before).is_err() {
            return Err(RaiseError::UnknownSpecies(code));
        }
        let details = json!({
            "changed": ["species_min_confidence"], "raised": true,
            "speciesCode": code, "speciesName": name, "threshold": to, "previous": was.value, "previousSource": was.source,
        });
        save_species_minimums(tx, tenant, &next.species_min_confidence, by, details, now)?;
        Ok(Raised {
            species_code: code,
            common_name: name,
            previous: was.value,
            previous_source: was.source,
            threshold: to,
        })
    })
    .await?;
    bus.publish(Event::ConfigChanged { tenant_id: tenant, satellite_id: None });
    Ok(raised)
}
