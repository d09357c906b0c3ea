//! Alert rules in words for the rules table ("A bird is detected · Song Thrush · at Backyard"):
//! species and satellites by name, never codes, UUIDs or JSON. Also the data the rule form is
//! filled from when a rule is edited (its species with their names).

use std::collections::HashMap;

use serde_json::{Value, json};

use super::{alert_forms::Rule, species_pick};
use crate::web::{ctx::Ctx, words};

/// The special kinds a detection rule can ask for, with a person's label.
pub const SPECIAL: [(&str, &str); 5] = [
    ("rare", "Rare"),
    ("first_for_team", "New for the team"),
    ("first_of_day", "First of the day"),
    ("first_of_season", "First of the season"),
    ("not_expected_here", "Not expected here"),
];

/// An hour of the day as the viewer reads times: "22:00", or "10 PM" with the 12-hour preference.
pub fn hour(ctx: &Ctx, h: u64) -> String {
    ctx.hours().hour(u32::try_from(h).unwrap_or(0))
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

fn sat_names(ids: &[String], sats: &HashMap<&str, &str>) -> String {
    ids.iter().map(|id| sats.get(id.as_str()).copied().unwrap_or("a removed satellite")).collect::<Vec<_>>().join(", ")
}

/// What makes `rule` fire, in words.
pub fn describe(ctx: &Ctx, lang: &str, rule: &Rule, sats: &HashMap<&str, &str>) -> String {
    match rule.system_key.as_deref() {
        Some(crate::domain::alert_rules::CLOCK_RULE_KEY) => {
            return "A satellite's clock is more than 2 minutes off the hub's (one alert per episode)".into();
        }
        Some(_) => return "A satellite goes offline (one alert per outage)".into(),
        None => {}
    }
    let c = &rule.conditions;
    let mut parts = Vec::new();
    match rule.trigger.as_str() {
        "detection" => {
            parts.push("A bird is detected".to_owned());
            let species = strings(c, "species");
            if species.is_empty() {
                parts.push("any species".into());
            } else {
                parts.push(species_pick::sentence(ctx, lang, &species_codes(&species)));
            }
            let special: Vec<&str> = strings(c, "special")
                .iter()
                .filter_map(|s| SPECIAL.iter().find(|(k, _)| k == s).map(|(_, l)| *l))
                .collect();
            if !special.is_empty() {
                parts.push(format!("only when {}", special.join(" or ").to_lowercase()));
            }
            if let Some(m) = c.get("minConfidence").and_then(Value::as_f64) {
                parts.push(format!("confidence at least {:.0}%", m * 100.0));
            }
            let ids = strings(c, "satelliteIds");
            parts.push(if ids.is_empty() {
                "at any satellite".into()
            } else {
                format!("at {}", sat_names(&ids, sats))
            });
            if let (Some(from), Some(to)) =
                (c.pointer("/hours/from").and_then(Value::as_u64), c.pointer("/hours/to").and_then(Value::as_u64))
            {
                parts.push(format!("from {} to {}, the station's local time", hour(ctx, from), hour(ctx, to)));
            }
        }
        "absence" => {
            let what = if c.get("of").and_then(Value::as_str) == Some("chunk") {
                "no audio received"
            } else {
                "no bird detected"
            };
            let minutes = c.get("minutes").and_then(Value::as_u64).unwrap_or(0);
            parts.push(format!("Silence: {what} for {}", words::count(minutes, "minute", "minutes")));
            let ids = strings(c, "satelliteIds");
            parts.push(if ids.is_empty() {
                "across the whole team".into()
            } else {
                format!("at {} (each on its own)", sat_names(&ids, sats))
            });
        }
        "trend" => {
            let metric =
                if c.get("metric").and_then(Value::as_str) == Some("species") { "species" } else { "detections" };
            let direction = match c.get("direction").and_then(Value::as_str) {
                Some("rise") => "rise",
                Some("fall") => "fall",
                _ => "rise or fall",
            };
            let percent = c.get("percent").and_then(Value::as_f64).unwrap_or(0.0);
            let days = c.get("baselineDays").and_then(Value::as_u64).unwrap_or(7);
            let before = if days == 1 { "day".to_owned() } else { words::count(days, "day", "days") };
            parts.push(format!("Daily {metric} {direction} by {percent}% against the {before} before"));
            match c.get("satelliteId").and_then(Value::as_str) {
                Some(id) => parts.push(format!("at {}", sat_names(&[id.to_owned()], sats))),
                None => parts.push("across the whole team".into()),
            }
        }
        _ => parts.push("Unknown trigger".into()),
    }
    parts.join(" · ")
}

/// Species entries (codes or scientific names) as the model's codes, for their names.
/// A code is its own slug, and a scientific name's slug is its code.
fn species_codes(entries: &[String]) -> Vec<String> {
    entries.iter().map(|e| crate::inference::labels::species_code(e)).collect()
}

/// The rules as the edit form reads them: each rule with `speciesNames` (code, common and
/// scientific name of every species it names, in the viewer's language) for its chips.
pub fn form_data(ctx: &Ctx, lang: &str, rules: &[Rule]) -> Value {
    let list: Vec<Value> = rules
        .iter()
        .map(|r| {
            let codes = species_codes(&strings(&r.conditions, "species"));
            let named: Vec<Value> = codes
                .iter()
                .map(|code| {
                    let n = species_pick::named(ctx, lang, code);
                    json!({ "code": code, "common": n.common, "sci": n.scientific })
                })
                .collect();
            let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
            if let Some(o) = v.as_object_mut() {
                o.insert("speciesNames".into(), Value::Array(named));
            }
            v
        })
        .collect();
    Value::Array(list)
}
