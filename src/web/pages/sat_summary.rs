//! The head of a satellite's page (`section#sat`): online state, last seen, version and the
//! update offer, uptime, position, sparklines and the stat bars. The page draws it once and
//! `sats_live.js` fetches it again (`GET /satellites/{id}/summary`) when the satellite reports
//! or goes offline, so what it shows follows the device without a reload.
//!
//! The update offer compares the installed version with the newest satellite release the hub
//! knows (`GET /system/versions`): "up to date" when nothing newer is known, a "Request update
//! to X" button (confirmed in the browser) when something is, and a failed update's reason as
//! the satellite reported it.

use axum::{
    extract::Path,
    response::{IntoResponse, Response},
};
use maud::{Markup, html};
use serde::Deserialize;

use super::{
    sat_parts::{self, Point, Sat},
    satellites::clean_id,
};
use crate::{
    domain::versions,
    web::{client::Api, ctx::Ctx, error::PageError, words},
};

/// `GET /api/system/versions`: the newest release of each stream.
#[derive(Debug, Default, Deserialize)]
pub struct Latest {
    pub satellite: Option<String>,
}

/// The newest satellite release the hub knows (none when the API does not say).
pub async fn latest(api: &Api) -> Result<Latest, PageError> {
    Ok(api.get_opt::<Latest>("/system/versions").await?.unwrap_or_default())
}

/// What the page offers for updating the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Offer {
    /// An update is under way to this version.
    Updating(String),
    /// The last update to this version failed, with the satellite's reason.
    Failed { target: String, why: Option<String>, newest: Option<String> },
    /// A newer release than the installed one (or an unknown installed one) is known.
    Available(String),
    /// The installed version is the newest known.
    UpToDate(String),
    /// No release is known at all.
    Unknown,
}

/// The offer for `sat` given the newest release `newest`.
pub fn offer(sat: &Sat, newest: Option<&str>) -> Offer {
    let installed = sat.version.as_deref().and_then(|v| versions::parse(v).ok());
    let newest = newest.and_then(|v| versions::parse(v).ok());
    let newer = match (&installed, &newest) {
        (_, None) => None,
        (None, Some(n)) => Some(n.to_string()),
        (Some(i), Some(n)) => versions::update_available(i, n).then(|| n.to_string()),
    };
    match (sat.update_status.as_deref(), sat.target_version.clone()) {
        (Some("updating"), Some(t)) => return Offer::Updating(t),
        (Some("failed"), Some(t)) => return Offer::Failed { target: t, why: sat.update_error.clone(), newest: newer },
        _ => {}
    }
    match (newer, installed) {
        (Some(n), _) => Offer::Available(n),
        (None, Some(i)) => Offer::UpToDate(i.to_string()),
        (None, None) => Offer::Unknown,
    }
}

fn update_button(sat: &Sat, to: &str, label: &str) -> Markup {
    html! {
        @if sat.can_manage {
            button type="button" #act-update data-target=(to) data-name=(sat.name)
                data-from=(sat.version.as_deref().unwrap_or("an unknown version")) { (label) " " (to) }
        }
    }
}

/// The update line: state, reason of a failure, and the button when there is something newer.
pub fn update_row(sat: &Sat, newest: Option<&str>) -> Markup {
    if sat.kind == "mobile" {
        return html! { p.small.muted #update-row { "The Android app updates itself from the hub's app releases." } };
    }
    html! {
        div.update-row #update-row {
            @match offer(sat, newest) {
                Offer::Updating(t) => p.small { span.badge { "updating to " (t) } " The satellite reports back when it runs the new version." },
                Offer::Failed { target, why, newest } => {
                    div.notice.update-failed role="status" {
                        p { strong { "The update to " (target) " failed." } " The satellite still runs "
                            (sat.version.as_deref().unwrap_or("an unknown version")) "." }
                        @if let Some(why) = why { pre.update-error { (why) } }
                        p.small.muted { "The update command's last lines are in the satellite's logs (Fetch logs)." }
                        @if let Some(n) = newest { (update_button(sat, &n, "Try again: update to")) }
                    }
                }
                Offer::Available(n) => p.small { (update_button(sat, &n, "Request update to")) @if !sat.can_manage { "Version " (n) " is available." } },
                Offer::UpToDate(v) => p.small { span.badge.ok { "up to date" } " " (v) " is the newest release this hub knows." },
                Offer::Unknown => p.small.muted { "No satellite release is known to this hub yet." },
            }
        }
    }
}

fn uptime(s: i64) -> String {
    let (d, h, m) = (s / 86_400, (s % 86_400) / 3600, (s % 3600) / 60);
    if d > 0 {
        format!("{d} d {h} h")
    } else if h > 0 {
        format!("{h} h {m} min")
    } else {
        format!("{m} min")
    }
}

/// "3 birds not expected here were left out in the last 24 hours (change)": why a bird played
/// to a satellite from a recording made elsewhere does not appear (issue 51, defect 18), with a
/// link to the setting at `change`. Nothing when none was.
pub fn left_out(n: u64, change: &str) -> Markup {
    html! {
        @if n > 0 {
            div.notice.left-out #left-out role="status" {
                p {
                    (words::count(n, "bird not expected here was", "birds not expected here were"))
                    " left out in the last 24 hours (" a href=(change) { "change" } ")."
                }
                p.small.muted {
                    "The hub leaves out species that are not expected at the satellite's place at this time of "
                    "year, such as a recording made elsewhere played to its microphone."
                }
            }
        }
    }
}

/// Where the satellite stood, in words.
fn position(sat: &Sat) -> Markup {
    html! {
        @match sat.latitude.zip(sat.longitude) {
            Some((la, lo)) => span.mono { (words::place_to(la, lo, 4)) },
            None => span.muted { "not set" },
        }
    }
}

/// `section#sat` of an imported station's history: no device, so no online state, version,
/// update, uptime, clock or telemetry: what it is, where it stood and how to record there again.
fn history_summary(sat: &Sat) -> Markup {
    html! {
        section.card #sat data-id=(sat.id) data-name=(sat.name) data-history="true" {
            div.card-head {
                h1 #sat-title { (sat.name) }
                (sat_parts::state(sat))
            }
            p.small.muted {
                "The detections of an old station, imported. No device records under this name; to record here "
                "again, register a device with the same name as a team admin."
            }
            dl.facts {
                div { dt { "Position" } dd { (position(sat)) } }
                div { dt { "Time zone" } dd #sat-zone-fact { (super::zones::words(sat)) } }
                @if let Some(by) = &sat.registered_by_name { div { dt { "Imported by" } dd { (by) } } }
            }
        }
    }
}

/// `section#sat`: everything the satellite's heartbeats and telemetry change.
pub fn summary(sat: &Sat, points: &[Point], newest: Option<&str>) -> Markup {
    if sat.history_only {
        return history_summary(sat);
    }
    html! {
        section.card #sat data-id=(sat.id) data-name=(sat.name) {
            div.card-head {
                h1 #sat-title { (sat.name) }
                (sat_parts::state(sat))
            }
            dl.facts {
                div { dt { "Last seen" } dd { (sat_parts::last_seen(sat)) } }
                div { dt { "Version" } dd #sat-version { (sat_parts::version(sat)) } }
                div { dt { "Kind" } dd { (if sat.kind == "mobile" { "Android app" } else { "Raspberry Pi" }) } }
                div { dt { "Uptime" } dd { (sat.uptime_seconds.map(uptime).unwrap_or_else(|| "–".into())) } }
                div { dt { "Clock" } dd #sat-clock { (super::sat_clock::clock(sat)) } }
                div { dt { "Position" } dd { (position(sat)) } }
                div { dt { "Time zone" } dd #sat-zone-fact { (super::zones::words(sat)) } }
                @if let Some(by) = &sat.registered_by_name { div { dt { "Registered by" } dd { (by) } } }
            }
            (left_out(sat.not_expected_left_out_24h.unwrap_or(0), "#ov-not_expected_action"))
            (update_row(sat, newest))
            (sat_parts::sparklines(sat, points))
            div.bars { (sat_parts::outbox_bar(sat)) (sat_parts::filter_bar(sat)) (sat_parts::hub_filter_bar(sat)) }
        }
    }
}

/// `GET /satellites/{id}/summary`: the page's head, for live redraws.
pub async fn summary_fragment(ctx: Ctx, Path(raw): Path<String>) -> Response {
    let result = async {
        ctx.team_id()?;
        let id =
            clean_id(&raw).ok_or_else(|| PageError::NotFound("There is no such satellite in this team.".into()))?;
        let sat: Sat = ctx.api.get(&format!("/satellites/{id}")).await?;
        let (points, newest) = tokio::try_join!(sat_parts::telemetry(&ctx.api, &id), latest(&ctx.api))?;
        Ok::<_, PageError>(summary(&sat, &points, newest.satellite.as_deref()))
    }
    .await;
    match result {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sat(version: Option<&str>, status: Option<&str>, target: Option<&str>) -> Sat {
        serde_json::from_value(serde_json::json!({
            "id": "s", "name": "Garden Pi", "kind": "satellite", "can_manage": true, "latitude": null,
            "longitude": null, "last_seen_at": null, "is_online": true, "heartbeat_state": null,
            "noise_floor_rms": null, "uptime_seconds": null, "version": version, "update_status": status,
            "target_version": target, "update_error": "exit status 100", "filter_stats": null, "outbox_stats": null
        }))
        .expect("sat")
    }

    #[test]
    fn the_installed_version_is_never_offered() {
        assert_eq!(offer(&sat(Some("0.1.0"), None, None), Some("0.1.0")), Offer::UpToDate("0.1.0".into()));
        assert_eq!(offer(&sat(Some("0.2.0"), None, None), Some("0.1.0")), Offer::UpToDate("0.2.0".into()));
        assert_eq!(offer(&sat(Some("0.1.0"), None, None), Some("0.2.0")), Offer::Available("0.2.0".into()));
        assert_eq!(offer(&sat(None, None, None), Some("0.2.0")), Offer::Available("0.2.0".into()));
        assert_eq!(offer(&sat(None, None, None), None), Offer::Unknown);
        assert_eq!(
            offer(&sat(Some("0.1.0"), Some("updating"), Some("0.2.0")), Some("0.2.0")),
            Offer::Updating("0.2.0".into())
        );
        let failed = offer(&sat(Some("0.1.0"), Some("failed"), Some("0.2.0")), Some("0.2.0"));
        assert_eq!(
            failed,
            Offer::Failed { target: "0.2.0".into(), why: Some("exit status 100".into()), newest: Some("0.2.0".into()) }
        );
        let row = update_row(&sat(Some("0.1.0"), None, None), Some("0.1.0")).into_string();
        assert!(row.contains("up to date") && !row.contains("act-update"), "{row}");
    }
}
