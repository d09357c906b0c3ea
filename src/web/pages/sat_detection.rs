//! A satellite's detection overrides on its page: each setting the team's detection settings
//! let a satellite change, with "inherits team: X" while it is unset and a button that clears
//! it (sends null). `detection_settings.js` sends `PUT /api/satellites/{id}/config`.

use std::collections::BTreeMap;

use maud::{Markup, html};
use serde_json::{Map, Value};

use super::{
    detection_settings::{self, NOT_EXPECTED},
    species_pick,
};
use crate::web::ctx::Ctx;

/// The overrides with one input (labelled by `for`); the others are lists.
const SCALARS: [&str; 4] = ["min_confidence", "sensitivity", "range_filter_threshold", "not_expected_action"];

/// One override block: its label, the team's value, whether it is set, and its control.
fn block(key: &str, text: &str, team: String, set: bool, edit: bool, control: Markup) -> Markup {
    html! {
        div.override.(if set { "set" } else { "unset" }) data-override=(key) {
            div.override-head {
                @if SCALARS.contains(&key) { label for=(format!("ov-{key}")) { (text) } } @else { span.override-title { (text) } }
                @if set {
                    span.inherits { "set here · team: " (team) }
                    @if edit { button.clear-override type="button" data-key=(key) { "Clear (use the team's)" } }
                } @else {
                    span.inherits { "inherits team: " (team) }
                }
            }
            (control)
        }
    }
}

fn number(key: &str, own: Option<f64>, team: &str, range: (&str, &str, &str), edit: bool) -> Markup {
    html! {
        input #(format!("ov-{key}")) type="number" name=(key) data-kind="num-or-null" min=(range.0) max=(range.1) step=(range.2)
            value=(own.map(|v| v.to_string()).unwrap_or_default()) placeholder=(format!("team: {team}")) disabled[!edit];
    }
}

/// The detection overrides card; read-only unless `edit` (the device rule and the lock).
pub fn card(ctx: &Ctx, sat_id: &str, overrides: &Map<String, Value>, team: &Map<String, Value>, edit: bool) -> Markup {
    let lang = species_pick::lang(ctx);
    let t = Value::Object(team.clone());
    let own = |k: &str| overrides.get(k).filter(|v| !v.is_null());
    let f = |v: Option<f64>| v.map(|v| format!("{v:.2}"));
    let hub = detection_settings::hub_threshold(ctx);
    let team_min = f(t["min_confidence"].as_f64()).unwrap_or_else(|| format!("{hub:.2} (the hub's default)"));
    let team_sens = f(t["sensitivity"].as_f64()).unwrap_or_else(|| "1.0 (the default)".into());
    let team_range = f(t["range_filter_threshold"].as_f64()).unwrap_or_default();
    let action = |v: &str| NOT_EXPECTED.iter().find(|(k, _)| *k == v).map_or(v.to_owned(), |(_, w)| w.to_lowercase());
    let team_action = action(t["not_expected_action"].as_str().unwrap_or_default());
    let own_action = own("not_expected_action").and_then(Value::as_str).unwrap_or_default();
    let team_map = detection_settings::species_map(&t, "species_min_confidence");
    let map_text = if team_map.is_empty() {
        "none".to_owned()
    } else {
        team_map
            .iter()
            .map(|(c, v)| format!("{} {v:.2}", species_pick::named(ctx, &lang, c).common))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let own_map: BTreeMap<String, f64> = own("species_min_confidence")
        .and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_f64()?))).collect())
        .unwrap_or_default();
    let own_list = |k: &str| -> Option<Vec<String>> {
        own(k).and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
    };
    let team_list = |k: &str| species_pick::sentence(ctx, &lang, &detection_settings::codes(&t, k));
    let (excl, incl) = (own_list("exclude_species"), own_list("include_species"));
    html! {
        section.card #detection {
            div.card-head { h2 { "Detection" } }
            p.small.muted {
                "What the hub keeps from this satellite. Unset settings follow the team's "
                a href="/team/detection" { "detection settings" } "."
            }
            form.detection #sat-detection-form novalidate data-scope="satellite" data-id=(sat_id) data-edit=(edit) {
                div.overrides {
                    (block("min_confidence", "Minimum confidence", team_min.clone(), own("min_confidence").is_some(), edit,
                        number("min_confidence", own("min_confidence").and_then(Value::as_f64), &team_min, ("0.01", "0.99", "0.01"), edit)))
                    (block("sensitivity", "Sensitivity", team_sens.clone(), own("sensitivity").is_some(), edit,
                        number("sensitivity", own("sensitivity").and_then(Value::as_f64), &team_sens, ("0.5", "1.5", "0.05"), edit)))
                    (block("species_min_confidence", "Minimum confidence per species (replaces the team's for these species)",
                        map_text, !own_map.is_empty(), edit,
                        species_pick::thresholds(ctx, &lang, "species_min_confidence", &own_map, edit)))
                    (block("exclude_species", "Never record here (added to the team's list)", team_list("exclude_species"),
                        excl.is_some(), edit,
                        species_pick::list(ctx, &lang, "exclude_species", &excl.clone().unwrap_or_default(), edit, "bird", "Add a species never to record here")))
                    (block("include_species", "Only record these here (replaces the team's list)", team_list("include_species"),
                        incl.is_some(), edit,
                        species_pick::list(ctx, &lang, "include_species", &incl.clone().unwrap_or_default(), edit, "bird", "Add a species to record here")))
                    (block("range_filter_threshold", "Expected-here threshold", team_range.clone(), own("range_filter_threshold").is_some(), edit,
                        number("range_filter_threshold", own("range_filter_threshold").and_then(Value::as_f64), &team_range, ("0", "0.99", "0.01"), edit)))
                    (block("not_expected_action", "A species not expected here", team_action.clone(), !own_action.is_empty(), edit, html! {
                        select #("ov-not_expected_action") name="not_expected_action" data-kind="choice" disabled[!edit] {
                            option value="" selected[own_action.is_empty()] { "As the team: " (team_action) }
                            @for (v, words) in NOT_EXPECTED { option value=(v) selected[v == own_action] { (words) } }
                        }
                    }))
                }
                @if edit {
                    p.error.form-error #sat-detection-error hidden role="alert" {}
                    div.row { button.primary type="submit" { "Save detection overrides" } }
                }
            }
        }
    }
}
