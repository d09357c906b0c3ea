//! One satellite (`/satellites/{id}`): its summary ([`sat_summary`]: online state, version and
//! update offer, telemetry sparklines, outbox and filter bars, kept live by `sats_live.js`), its
//! config beside the team defaults, today's schedule with sunrise and sunset (in the satellite's
//! zone and the viewer's 12/24-hour format), and the device actions (update, logs, live audio,
//! rename, key, delete) that `satellite.js` sends through `/api`. Who may act is the API's device
//! rule (`can_manage`).

use axum::{
    Router,
    extract::Path,
    response::{IntoResponse, Response},
    routing::get,
};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{
    detection_settings, sat_birdweather, sat_detection,
    sat_parts::{self, Sat},
    sat_summary,
};
use crate::web::{WebState, ctx::Ctx, error::PageError, icons, layout};

pub fn routes() -> Router<WebState> {
    Router::new()
        .route("/satellites/{id}", get(detail_page))
        .route("/satellites/{id}/summary", get(sat_summary::summary_fragment))
}

/// The overrides a satellite may have, with a label and whether it is on/off.
const SETTINGS: [(&str, &str, bool); 12] = [
    ("filter_enabled", "Sound filter on the device", true),
    ("filter_min_rms", "Filter: minimum loudness (RMS)", false),
    ("classifier_min_bird_prob", "Filter: minimum bird probability", false),
    ("outbox_soft_size_mb", "Outbox soft limit (MB)", false),
    ("outbox_hard_size_mb", "Outbox hard limit (MB)", false),
    ("outbox_max_age_hours", "Outbox maximum age (hours)", false),
    ("heartbeat_interval_sec", "Heartbeat interval (s)", false),
    ("drop_amphibian_at_satellite", "Drop amphibians on the device", true),
    ("drop_insect_at_satellite", "Drop insects on the device", true),
    ("drop_anthropogenic_at_satellite", "Drop human-made noise on the device", true),
    ("drop_human_voice_at_satellite", "Drop human voices on the device", true),
    ("drop_other_animal_at_satellite", "Drop other animals on the device", true),
];

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigAnswer {
    config_locked: bool,
    overrides: Map<String, Value>,
}

/// `GET /api/settings/tenant`: `{tenantId, settings}`.
#[derive(Debug, Deserialize)]
struct TeamSettings {
    settings: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Window {
    start: String,
    end: String,
    reference: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Unresolved {
    reason: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Day {
    date: String,
    sunrise: Option<String>,
    sunset: Option<String>,
    polar: Option<String>,
    windows: Vec<Window>,
    unresolved: Vec<Unresolved>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Schedule {
    timezone: Option<String>,
    profile_type: String,
    recording_now: bool,
    days: Vec<Day>,
}

async fn detail_page(ctx: Ctx, Path(id): Path<String>) -> Response {
    match detail(&ctx, &id).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

/// A clock time of the schedule (RFC 3339 in the satellite's local time, the zone the card
/// names): `HH:MM` as the server writes it, rewritten by `satellite.js` in the viewer's 12/24-hour
/// format, still in the satellite's zone.
fn clock(t: &str) -> Markup {
    html! { time.clock datetime=(t) { (t.get(11..16).unwrap_or(t)) } }
}

async fn detail(ctx: &Ctx, raw_id: &str) -> Result<Markup, PageError> {
    ctx.team_id()?;
    let Some(id) = super::satellites::clean_id(raw_id) else {
        return Err(PageError::NotFound("There is no such satellite in this team.".into()));
    };
    let sat: Sat = ctx.api.get(&format!("/satellites/{id}")).await?;
    let (config_path, schedule_path) = (format!("/satellites/{id}/config"), format!("/satellites/{id}/schedule"));
    let birdweather_path = format!("/satellites/{id}/birdweather");
    let (config, team, schedule, points, newest, birdweather, history) = tokio::try_join!(
        ctx.api.get::<ConfigAnswer>(&config_path),
        ctx.api.get::<TeamSettings>("/settings/tenant"),
        ctx.api.get::<Schedule>(&schedule_path),
        sat_parts::telemetry(&ctx.api, &id),
        sat_summary::latest(&ctx.api),
        ctx.api.get::<sat_birdweather::Sharing>(&birdweather_path),
        super::sat_history::card(&ctx.api, &id),
    )?;
    // An imported station's history has no device: nothing to configure, schedule or listen to.
    let body = html! {
        (sat_summary::summary(&sat, &points, newest.satellite.as_deref()))
        (history)
        (actions(ctx, &sat))
        (super::zones::card(&sat))
        (schedule_card(&sat, &schedule))
        @if !sat.history_only {
            (config_card(ctx, &sat, &config, &team.settings))
            (sat_detection::card(ctx, &sat.id, &config.overrides, &team.settings, editable(ctx, &sat, &config)))
            (sat_birdweather::card(&sat.id, &birdweather, ctx.is_admin()))
        }
    };
    let assets =
        ["sats.css", "satellite.js", "sats_live.js", detection_settings::ASSETS[0], detection_settings::ASSETS[1]];
    Ok(layout::page(ctx, &sat.name, "satellites", &assets, body))
}

fn actions(ctx: &Ctx, sat: &Sat) -> Markup {
    let manage = sat.can_manage;
    html! {
        section.card {
            h2 { (if sat.history_only { "This satellite" } else { "Device" }) }
            @if !manage && !ctx.can_edit() {
                p.muted { "You can look but not change this satellite (viewer)." }
            } @else if !manage {
                p.muted.small { "Only whoever registered this satellite, or a team admin, may change it. You may listen live." }
            }
            div.row.actions {
                @if manage && !sat.history_only {
                    button type="button" #act-logs { "Fetch logs" }
                }
                @if ctx.can_edit() && !sat.history_only {
                    button type="button" #act-live aria-pressed="false" { (icons::play()) span { "Listen live" } }
                }
                @if manage {
                    button type="button" #act-rename { "Rename" }
                    @if !sat.history_only { button type="button" #act-rotate { "Rotate API key" } }
                    button.danger type="button" #act-delete { "Delete" }
                }
            }
            p.small.muted #live-note hidden {}
            div #key-result hidden {
                p.notice { strong { "Shown once." } " The new API key (the old ones stop working): " }
                div.secret { span.secret-label { "API key" } code #new-key {} button type="button" data-copy="#new-key" { (icons::copy()) "Copy" } }
            }
            div #logs-box hidden {
                h3 { "Logs" span.muted.small #logs-state {} }
                pre.logs #logs tabindex="0" {}
            }
            @if manage {
                dialog #rename-dialog {
                    form.stack method="dialog" #rename-form {
                        h2 { "Rename satellite" }
                        label { "New name" input #rename-name required maxlength="100" value=(sat.name); }
                        div.error #rename-error role="alert" hidden {}
                        div.row { button.primary type="submit" value="ok" { "Rename" } button type="button" data-close { "Cancel" } }
                    }
                }
                dialog #delete-dialog {
                    form.stack method="dialog" #delete-form {
                        h2 { "Delete " (sat.name) "?" }
                        p { "Its MQTT login and API keys stop working at once. Its recordings and detections stay with the team." }
                        div.error #delete-error role="alert" hidden {}
                        div.row { button.danger type="submit" value="ok" { "Delete" } button type="button" data-close { "Cancel" } }
                    }
                }
            }
        }
    }
}

/// Whether the schedule card may say "recording now": only of a device that is online. A
/// satellite that never connected, or is offline, records nothing the hub can vouch for.
fn schedule_badge(sat: &Sat, s: &Schedule) -> (&'static str, &'static str) {
    match (sat.last_seen_at.is_some(), sat.is_online, s.recording_now) {
        (false, _, _) => ("idle", "never connected"),
        (true, true, true) => ("ok", "recording now"),
        (true, false, true) => ("idle", "offline: not recording"),
        (true, _, false) => ("idle", "not recording now"),
    }
}

/// Today's sunrise and sunset (or the polar day or night).
fn sun_line(today: &Day) -> Markup {
    html! {
        div.sun {
            @match today.polar.as_deref() {
                Some("day") => span { "The sun does not set today." },
                Some("night") => span { "The sun does not rise today." },
                _ => {
                    span { "Sunrise " strong.mono { @if let Some(t) = &today.sunrise { (clock(t)) } @else { "–" } } }
                    span { "Sunset " strong.mono { @if let Some(t) = &today.sunset { (clock(t)) } @else { "–" } } }
                }
            }
        }
    }
}

/// An imported station's place in the day: its sun times, no schedule (nothing records there).
fn history_sun_card(s: &Schedule) -> Markup {
    html! {
        section.card #sun {
            h2 { "Sun today" }
            @if let Some(today) = s.days.first().filter(|d| d.sunrise.is_some() || d.polar.is_some()) {
                (sun_line(today))
                @if let Some(tz) = &s.timezone { p.small.muted { "Times in " (tz) "." } }
            } @else {
                p.small.muted { "No sun times: the old station's position is not known." }
            }
        }
    }
}

fn schedule_card(sat: &Sat, s: &Schedule) -> Markup {
    if sat.history_only {
        return history_sun_card(s);
    }
    let (class, said) = schedule_badge(sat, s);
    html! {
        section.card #schedule {
            div.card-head {
                h2 { "Schedule" }
                span.badge.(class) { (said) }
            }
            @if sat.last_seen_at.is_none() {
                p.small.muted { "It records by this schedule once its device connects to the hub." }
            }
            p.small.muted { "Profile: " (s.profile_type.replace('_', " ")) @if let Some(tz) = &s.timezone { " · times in " (tz) } }
            @if let Some(today) = s.days.first() {
                (sun_line(today))
                @if today.sunrise.is_none() && today.polar.is_none() {
                    p.small.muted { "No sun times: the satellite has no position. Re-register it with latitude and longitude." }
                }
            }
            @for d in &s.days {
                h3 { time.day datetime=(d.date) { (d.date) } }
                @if d.windows.is_empty() { p.muted.small { "No recording window." } }
                ul.windows {
                    @for w in &d.windows {
                        li {
                            @if w.reference == "allDay" { "all day" }
                            @else { span.mono { (clock(&w.start)) "–" (clock(&w.end)) } " " span.muted.small { (reference(&w.reference)) } }
                        }
                    }
                    @for u in &d.unresolved { li.muted.small { "Not resolved: " (u.reason) } }
                }
            }
        }
    }
}

fn reference(r: &str) -> &str {
    match r {
        "sunrise" => "around sunrise",
        "sunset" => "around sunset",
        "allDay" => "all day",
        _ => "fixed times",
    }
}

fn shown(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "–".into(),
        Some(Value::Bool(b)) => (if *b { "on" } else { "off" }).into(),
        Some(other) => other.to_string(),
    }
}

/// Whether the person may change the satellite's configuration: the device rule, and an admin
/// for a locked one (the API's rule; this only decides which controls to show).
fn editable(ctx: &Ctx, sat: &Sat, config: &ConfigAnswer) -> bool {
    sat.can_manage && (!config.config_locked || ctx.is_admin())
}

fn config_card(ctx: &Ctx, sat: &Sat, config: &ConfigAnswer, team: &Map<String, Value>) -> Markup {
    let editable = editable(ctx, sat, config);
    html! {
        section.card {
            div.card-head {
                h2 { "Configuration" }
                @if config.config_locked { span.badge.rare title="only an admin may change it" { "locked by an admin" } }
            }
            p.small.muted { "Empty means the satellite follows the team's setting. Team defaults are in " a href="/team" { "team settings" } "." }
            form #config-form {
                div.table-scroll {
                    table.list.config {
                        thead { tr { th scope="col" { "Setting" } th scope="col" { "Team default" } th scope="col" { "This satellite" } } }
                        tbody {
                            @for (key, label, boolean) in SETTINGS {
                                @let own = config.overrides.get(key).filter(|v| !v.is_null());
                                tr {
                                    th scope="row" { label for=(format!("ov-{key}")) { (label) } }
                                    td.mono { (shown(team.get(key))) }
                                    td {
                                        @if !editable {
                                            @if let Some(v) = own { strong.mono { (shown(Some(v))) } } @else { span.muted { "team default" } }
                                        } @else if boolean {
                                            select #(format!("ov-{key}")) name=(key) data-kind="bool" {
                                                option value="" selected[own.is_none()] { "default" }
                                                option value="true" selected[own == Some(&Value::Bool(true))] { "on" }
                                                option value="false" selected[own == Some(&Value::Bool(false))] { "off" }
                                            }
                                        } @else {
                                            input #(format!("ov-{key}")) name=(key) data-kind="number" type="number" step="any"
                                                value=(own.map(|v| v.to_string()).unwrap_or_default()) placeholder=(shown(team.get(key)));
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                @if editable {
                    @if ctx.is_admin() {
                        label.check { input type="checkbox" #config-locked checked[config.config_locked]; "Lock: only admins may change this configuration" }
                    }
                    div.error #config-error role="alert" hidden {}
                    div.row { button.primary type="submit" { "Save and push to the satellite" } }
                } @else if sat.can_manage {
                    p.small.muted { "An admin locked this configuration." }
                }
            }
        }
    }
}
