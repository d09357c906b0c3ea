//! The team's detection settings (what the hub keeps as a detection): the Detection section of
//! Team settings, and the same section at `/team/detection` for everyone in the team (admins
//! edit, the others read). `detection_settings.js` collects the form and sends it to
//! `PUT /api/settings/tenant`; the API's 422 message is shown next to the form.

use std::collections::BTreeMap;

use axum::{
    Router,
    response::{IntoResponse, Response},
    routing::get,
};
use maud::{Markup, html};
use serde_json::Value;

use super::species_pick;
use crate::{
    domain::detection_settings::OWLS,
    web::{WebState, ctx::Ctx, error::PageError, layout},
};

pub fn routes() -> Router<WebState> {
    Router::new().route("/team/detection", get(page))
}

/// The scripts and stylesheet the section needs.
pub const ASSETS: [&str; 2] = ["settings.css", "detection_settings.js"];

/// What "not expected here" can do, with its words.
pub const NOT_EXPECTED: [(&str, &str); 3] = [
    ("flag", "Keep it, flagged \"not expected here\""),
    ("second_look", "Keep it only if a second look confirms it"),
    ("drop", "Drop it"),
];

const UNCONFIRMED: [(&str, &str); 2] =
    [("discard", "Discard it (only a counter remains)"), ("hide", "Keep it hidden (listed under Detection quality)")];

async fn page(ctx: Ctx) -> Response {
    match render(&ctx).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

async fn render(ctx: &Ctx) -> Result<Markup, PageError> {
    ctx.team_id()?;
    let settings: Value = ctx.api.get("/settings/tenant").await?;
    let body = html! {
        h1 { "Detection settings" }
        @if ctx.is_admin() {
            p.muted { "Also under " a href="/team" { "Team settings" } ", with the team's other settings." }
        }
        (section(ctx, &settings["settings"], ctx.is_admin()))
    };
    Ok(layout::page(ctx, "Detection settings", "", &ASSETS, body))
}

/// The hub's own minimum confidence (`inference.threshold`), used where a team sets none.
pub fn hub_threshold(ctx: &Ctx) -> f64 {
    (f64::from(ctx.api_state().settings.inference.threshold) * 100.0).round() / 100.0
}

/// A team setting's codes (a list of strings).
pub fn codes(s: &Value, key: &str) -> Vec<String> {
    s[key].as_array().map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect()).unwrap_or_default()
}

/// A team setting's per-species map.
pub fn species_map(s: &Value, key: &str) -> BTreeMap<String, f64> {
    s[key]
        .as_object()
        .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_f64()?))).collect())
        .unwrap_or_default()
}

fn num(s: &Value, key: &str) -> String {
    s[key].as_f64().map(|v| v.to_string()).unwrap_or_default()
}

/// A number input for setting `key`; `nullable` ones send null when blank (and show what blank
/// means as the placeholder).
fn number(
    s: &Value,
    key: &str,
    text: &str,
    hint: &str,
    range: (&str, &str, &str),
    nullable: bool,
    edit: bool,
) -> Markup {
    let blank = if nullable { hint.rsplit(' ').next().unwrap_or_default() } else { "" };
    let id = format!("ds-{key}");
    html! {
        label for=(id) {
            (text)
            input #(id) type="number" name=(key) data-kind=(if nullable { "num-or-null" } else { "num" })
                min=(range.0) max=(range.1) step=(range.2) value=(num(s, key)) placeholder=(blank) disabled[!edit];
            @if !hint.is_empty() { span.hint.small.muted { (hint) } }
        }
    }
}

fn choice(s: &Value, key: &str, text: &str, options: &[(&str, &str)], edit: bool) -> Markup {
    let current = s[key].as_str().unwrap_or_default();
    let id = format!("ds-{key}");
    html! {
        label for=(id) {
            (text)
            select #(id) name=(key) data-kind="choice" disabled[!edit] {
                @for (v, words) in options { option value=(v) selected[*v == current] { (words) } }
            }
        }
    }
}

fn switch(s: &Value, key: &str, text: &str, edit: bool) -> Markup {
    html! {
        label.check {
            input #(format!("ds-{key}")) type="checkbox" name=(key) data-kind="bool" checked[s[key].as_bool().unwrap_or(false)] disabled[!edit];
            (text)
        }
    }
}

/// The Detection section: every control of what the team keeps; read-only unless `edit`.
pub fn section(ctx: &Ctx, s: &Value, edit: bool) -> Markup {
    let lang = species_pick::lang(ctx);
    let hub = hub_threshold(ctx);
    let team_min = s["min_confidence"].as_f64();
    html! {
        section.card #detection {
            h2 { "Detection" }
            p.muted.small {
                "What the hub keeps as a detection, for every satellite of the team. A satellite can override "
                "the thresholds and lists on its own page. "
                @if !edit { strong { "Only a team admin can change these." } }
            }
            form.stack.detection #detection-form novalidate data-scope="team" data-edit=(edit) {
                fieldset {
                    legend { "Thresholds" }
                    (number(s, "min_confidence", "Minimum confidence",
                        &format!("Blank: the hub's default, {hub:.2}"), ("0.01", "0.99", "0.01"), true, edit))
                    (number(s, "sensitivity", "Sensitivity (0.5 to 1.5; higher finds more, and more wrongly)",
                        "Blank: 1.0", ("0.5", "1.5", "0.05"), true, edit))
                    p.small.muted.effective {
                        "Now kept from confidence "
                        strong.mono #ds-effective { (format!("{:.2}", team_min.unwrap_or(hub))) }
                        @if team_min.is_none() { " (the hub's default)" }
                    }
                }
                fieldset #species_min_confidence {
                    legend { "Minimum confidence per species" }
                    p.small.muted { "A species listed here needs this confidence instead of the team's minimum." }
                    (species_pick::thresholds(ctx, &lang, "species_min_confidence", &species_map(s, "species_min_confidence"), edit))
                }
                fieldset #exclude_species {
                    legend { "Never record these species" }
                    (species_pick::list(ctx, &lang, "exclude_species", &codes(s, "exclude_species"), edit, "bird", "Add a species never to record"))
                }
                fieldset #include_species {
                    legend { "Only record these species" }
                    p.small.muted { "Empty: every species. With species here, every other species is dropped." }
                    (species_pick::list(ctx, &lang, "include_species", &codes(s, "include_species"), edit, "bird", "Add a species to record"))
                }
                fieldset {
                    legend { "Location filter" }
                    (number(s, "range_filter_threshold", "Expected-here threshold (the range model's score, 0 to 0.99)",
                        "Default 0.03; higher expects fewer species", ("0", "0.99", "0.01"), false, edit))
                    (choice(s, "not_expected_action", "A species not expected here this week", &NOT_EXPECTED, edit))
                }
                fieldset {
                    legend { "Second look at borderline calls" }
                    (switch(s, "second_look_enabled", "Hold detections below the sure level until the windows around them confirm them", edit))
                    (number(s, "second_look_sure_confidence", "Sure level (kept at once from here)", "", ("0", "1", "0.01"), false, edit))
                    (number(s, "second_look_min_confidence", "Confirm level (a neighbouring window must reach it)", "", ("0.01", "0.99", "0.01"), false, edit))
                    (number(s, "second_look_wait_sec", "Wait for the next chunk (seconds)", "", ("1", "600", "1"), false, edit))
                    (choice(s, "second_look_unconfirmed", "A held detection that is not confirmed", &UNCONFIRMED, edit))
                }
                fieldset {
                    legend { "Privacy filter" }
                    (switch(s, "privacy_filter_enabled", "Delete a chunk's audio and detections when the model hears a person talking", edit))
                    (number(s, "privacy_min_confidence", "Human voice level", "", ("0.01", "0.99", "0.01"), false, edit))
                }
                fieldset #suppression {
                    legend { "Suppression" }
                    p.small.muted { "When one of these sounds is heard, the species below are not recorded on that satellite for a while." }
                    h3 { "Sounds that suppress" }
                    (species_pick::list(ctx, &lang, "suppress_classes", &codes(s, "suppress_classes"), edit, "other", "Add a sound: dog, engine, siren…"))
                    h3 { "Species they suppress" }
                    (species_pick::list(ctx, &lang, "suppress_species", &codes(s, "suppress_species"), edit, "bird", "Add a species to suppress"))
                    @if edit {
                        // Hidden while the owls are listed; the page shows it again when they are removed.
                        @let listed = codes(s, "suppress_species").iter().any(|c| c == OWLS);
                        div.row { button.add-owls type="button" data-key="suppress_species" hidden[listed] { "Add every owl" } }
                    }
                    (number(s, "suppress_min_confidence", "Sound level", "", ("0.01", "0.99", "0.01"), false, edit))
                    (number(s, "suppress_seconds", "For (seconds)", "", ("1", "3600", "1"), false, edit))
                }
                @if edit {
                    p.error.form-error #detection-error hidden role="alert" {}
                    div.row { button.primary type="submit" { "Save detection settings" } }
                }
            }
        }
    }
}
