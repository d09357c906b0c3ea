//! Managing alert rules (SPEC 4.6): create, change, delete and list a team's rules. Every
//! channel and satellite a rule names must be the team's own. The system rule
//! `satellite_offline` always exists, and so does `satellite_clock` (a satellite's clock found
//! wrong); their channels, cooldown and enabled flag can change, nothing else, and they cannot be
//! deleted.
//!
//! Body (JSON, camelCase): `name`, `trigger` (`detection`, `absence`, `trend`), `conditions` (see
//! `domain::alert_rules`), `channelIds`, `cooldownMinutes` (default 30), `enabled` (default true).
//! On `PUT`, fields left out keep their values. Every species a detection rule names must be a
//! species of the model (a code or a scientific name), or the rule could never fire.

use serde::Deserialize;
use serde_json::Value;

use super::in_tx;
use crate::{
    domain::{
        alert_rules::{self, Conditions, Trigger},
        validate,
    },
    ids::{SatelliteId, TenantId},
    inference::translations::Translations,
    store::{
        self, Store,
        alert_rules::{Rule, RuleFields},
    },
    time::Timestamp,
};

/// At most this many channels per rule.
pub const MAX_CHANNELS: usize = 20;

#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    #[error("{0}")]
    Invalid(String),
    #[error("alert channel {0} is not one of this team's channels")]
    UnknownChannel(String),
    #[error("satellite {0} is not one of this team's satellites")]
    UnknownSatellite(uuid::Uuid),
    #[error("the model knows no species {}: choose species from the list", quoted(.0))]
    UnknownSpecies(Vec<String>),
    #[error(
        "the system rules satellite_offline and satellite_clock cannot be deleted, renamed or given conditions; change their channels, cooldown or enabled flag"
    )]
    SystemRule,
    #[error("no such alert rule")]
    NotFound,
    #[error(transparent)]
    Store(store::Error),
}
from_store_error!(RuleError, not_found => NotFound);

/// A rule body as sent; every field optional so `PUT` can change one.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleInput {
    pub name: Option<String>,
    pub trigger: Option<String>,
    pub conditions: Option<Value>,
    pub channel_ids: Option<Vec<String>>,
    pub cooldown_minutes: Option<i64>,
    pub enabled: Option<bool>,
}

/// The team's rules, the system rule first.
pub async fn list(store: &Store, tenant: TenantId) -> Result<Vec<Rule>, RuleError> {
    Ok(store.call(move |c| store::alert_rules::list(c, tenant)).await?)
}

pub async fn create(
    store: &Store,
    names: &Translations,
    tenant: TenantId,
    input: RuleInput,
    now: Timestamp,
) -> Result<Rule, RuleError> {
    let name = validate::name(input.name.as_deref().unwrap_or_default(), "name").map_err(RuleError::Invalid)?;
    let trigger =
        parse_trigger(input.trigger.as_deref().ok_or_else(|| RuleError::Invalid("trigger is required".into()))?)?;
    let conditions = Conditions::parse(trigger, input.conditions.unwrap_or(Value::Null)).map_err(RuleError::Invalid)?;
    check_species(names, &conditions, None)?;
    let channels = channel_list(input.channel_ids.unwrap_or_default())?;
    let cooldown = cooldown(input.cooldown_minutes.unwrap_or(i64::from(alert_rules::DEFAULT_COOLDOWN_MINUTES)))?;
    let enabled = input.enabled.unwrap_or(true);
    in_tx(store, move |tx| {
        check_references(tx, tenant, &channels, &conditions)?;
        let json = conditions.to_json();
        let fields = RuleFields {
            name: &name,
            trigger: trigger.as_str(),
            conditions: &json,
            channel_ids: &channels,
            cooldown_minutes: cooldown,
            enabled,
        };
        let rule = store::alert_rules::insert(tx, tenant, &fields, now)?;
        Ok(rule)
    })
    .await
}

pub async fn update(
    store: &Store,
    names: &Translations,
    tenant: TenantId,
    id: String,
    input: RuleInput,
    now: Timestamp,
) -> Result<Rule, RuleError> {
    let names = names.clone();
    in_tx(store, move |tx| {
        let old = store::alert_rules::get(tx, tenant, &id)?;
        let system = old.system_key.is_some();
        if system && (input.name.is_some() || input.trigger.is_some() || input.conditions.is_some()) {
            return Err(RuleError::SystemRule);
        }
        let name = match &input.name {
            Some(n) => validate::name(n, "name").map_err(RuleError::Invalid)?,
            None => old.name.clone(),
        };
        let trigger = match &input.trigger {
            Some(t) => parse_trigger(t)?,
            None => Trigger::parse(&old.trigger).unwrap_or(Trigger::Absence),
        };
        let conditions = if system {
            old.conditions.clone()
        } else {
            let raw = input.conditions.clone().unwrap_or_else(|| old.conditions.clone());
            let parsed = Conditions::parse(trigger, raw).map_err(RuleError::Invalid)?;
            // Satellites are checked when the conditions change: one deleted since must not block
            // turning the rule off.
            if input.conditions.is_some() {
                check_references(tx, tenant, &[], &parsed)?;
                let before = Conditions::parse(trigger, old.conditions.clone()).ok();
                check_species(&names, &parsed, before.as_ref())?;
            }
            parsed.to_json()
        };
        let channels = match input.channel_ids.clone() {
            Some(list) => {
                let list = channel_list(list)?;
                check_channels(tx, tenant, &list)?;
                list
            }
            None => old.channel_ids.clone(),
        };
        let fields = RuleFields {
            name: &name,
            trigger: trigger.as_str(),
            conditions: &conditions,
            channel_ids: &channels,
            cooldown_minutes: match input.cooldown_minutes {
                Some(m) => cooldown(m)?,
                None => old.cooldown_minutes,
            },
            enabled: input.enabled.unwrap_or(old.enabled),
        };
        let rule = store::alert_rules::update(tx, tenant, &id, &fields, now)?;
        Ok(rule)
    })
    .await
}

/// Deletes a rule; returns it for the audit log.
pub async fn delete(store: &Store, tenant: TenantId, id: String) -> Result<Rule, RuleError> {
    in_tx(store, move |tx| {
        let rule = store::alert_rules::get(tx, tenant, &id)?;
        if rule.system_key.is_some() {
            return Err(RuleError::SystemRule);
        }
        store::alert_rules::delete(tx, tenant, &id)?;
        Ok(rule)
    })
    .await
}

fn parse_trigger(s: &str) -> Result<Trigger, RuleError> {
    Trigger::parse(s)
        .ok_or_else(|| RuleError::Invalid(format!("trigger must be detection, absence or trend, not {s:?}")))
}

fn cooldown(minutes: i64) -> Result<i64, RuleError> {
    alert_rules::check_cooldown(minutes).map(i64::from).map_err(RuleError::Invalid)
}

fn channel_list(ids: Vec<String>) -> Result<Vec<String>, RuleError> {
    let mut seen = std::collections::HashSet::new();
    let ids: Vec<String> =
        ids.into_iter().map(|s| s.trim().to_ascii_lowercase()).filter(|s| seen.insert(s.clone())).collect();
    if ids.len() > MAX_CHANNELS {
        return Err(RuleError::Invalid(format!("channelIds can name at most {MAX_CHANNELS} channels")));
    }
    Ok(ids)
}

/// Refuses species the model does not know. On a change, only species the change adds are
/// checked: one a newer model dropped never blocks turning the rule off or renaming it.
fn check_species(names: &Translations, next: &Conditions, before: Option<&Conditions>) -> Result<(), RuleError> {
    let species = |c: &Conditions| match c {
        Conditions::Detection(d) => d.species.clone(),
        _ => Vec::new(),
    };
    let had = before.map(species).unwrap_or_default();
    let added: Vec<String> = species(next).into_iter().filter(|s| !had.contains(s)).collect();
    let unknown = crate::usecases::detection_settings::unknown_species(names, &added);
    if unknown.is_empty() { Ok(()) } else { Err(RuleError::UnknownSpecies(unknown)) }
}

fn quoted(list: &[String]) -> String {
    list.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", ")
}

fn check_channels(conn: &rusqlite::Connection, tenant: TenantId, channels: &[String]) -> Result<(), RuleError> {
    let found = store::alert_channels::existing(conn, tenant, channels)?;
    match channels.iter().find(|c| !found.contains(c)) {
        Some(missing) => Err(RuleError::UnknownChannel(missing.clone())),
        None => Ok(()),
    }
}

fn check_references(
    conn: &rusqlite::Connection,
    tenant: TenantId,
    channels: &[String],
    conditions: &Conditions,
) -> Result<(), RuleError> {
    check_channels(conn, tenant, channels)?;
    for s in conditions.satellite_ids() {
        match store::satellites::ensure_in_tenant(conn, tenant, SatelliteId(s)) {
            Ok(()) => {}
            Err(store::Error::NotFound) => return Err(RuleError::UnknownSatellite(s)),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
