//! Time zones on the dashboard (issue 37): where a satellite's zone comes from and the form that
//! chooses one, the list of IANA names the zone fields offer, and the line that says the
//! statistics are being moved to a new zone (`app.js` polls it until the move ends).

use maud::{Markup, html};
use serde::Deserialize;

use super::sat_parts::Sat;
use crate::web::{client::Api, error::PageError};

/// The `<datalist>` id of [`names`].
pub const NAMES_ID: &str = "tz-names";

/// Every IANA zone a person may choose (place names and UTC; not `CET` or `EST5EDT`), as a
/// `<datalist>` a text field searches as the person types.
pub fn names() -> Markup {
    html! {
        datalist #(NAMES_ID) {
            @for tz in chrono_tz::TZ_VARIANTS.iter().filter(|tz| crate::domain::zone::parse(tz.name()).is_ok()) {
                option value=(tz.name()) {}
            }
        }
    }
}

/// "America/New_York (from its position)": the satellite's zone and where it comes from.
pub fn words(sat: &Sat) -> Markup {
    let zone = sat.time_zone.as_deref().unwrap_or("the team's zone");
    html! {
        span.zone-name { (zone) }
        @match sat.time_zone_source.as_deref() {
            Some("override") => span.muted { " (chosen here)" },
            Some("position") => span.muted { " (from its position)" },
            _ => span.muted { ", the team's zone: this satellite has no position" },
        }
    }
}

/// The satellite page's time zone card: where the zone comes from, and (for whoever may change
/// the satellite) a field to choose one and a button back to the automatic zone.
pub fn card(sat: &Sat) -> Markup {
    let automatic = if sat.latitude.is_some() && sat.longitude.is_some() {
        "the zone of its position"
    } else {
        "the team's zone, as it has no position"
    };
    html! {
        section.card #sat-zone {
            h2 { "Time zone" }
            p #sat-zone-words { (words(sat)) }
            p.muted.small {
                "Its detections' days and hours (first of the day, the daily and hourly figures) are "
                "counted in this zone, and their times are shown in it."
            }
            @if sat.can_manage {
                form.row.zone-form data-api=(format!("PUT /satellites/{}/time-zone", sat.id)) data-then="reload" {
                    label for="sat-zone-input" { "Choose a zone" }
                    input #sat-zone-input type="text" name="timeZone" list=(NAMES_ID) required autocomplete="off"
                        spellcheck="false" placeholder="e.g. Europe/Berlin" value=[sat.time_zone_override.as_deref()];
                    button.primary type="submit" { "Save zone" }
                    p.error.form-error hidden role="alert" {}
                }
                (names())
                @if sat.time_zone_override.is_some() {
                    button #sat-zone-auto type="button" data-api=(format!("PUT /satellites/{}/time-zone", sat.id))
                        data-body=r#"{"timeZone":null}"# data-then="reload" { "Back to automatic (" (automatic) ")" }
                }
            }
        }
    }
}

/// `GET /api/stats/time-zone-moves`, the part the line needs.
#[derive(Debug, Default, Deserialize)]
pub struct Moves {
    pub running: bool,
    pub done: i64,
    pub total: i64,
}

impl Moves {
    /// How far the moves are, in whole percent.
    pub fn percent(&self) -> i64 {
        if self.total > 0 { (100 * self.done.min(self.total)) / self.total } else { 0 }
    }
}

/// The team's moves (none when the API does not say).
pub async fn moves(api: &Api) -> Result<Moves, PageError> {
    Ok(api.get_opt::<Moves>("/stats/time-zone-moves").await?.unwrap_or_default())
}

/// "Statistics are being moved to the new time zone: 45 %." while a move runs; a hidden line
/// otherwise. `app.js` polls the API and hides it when the move is over.
pub fn moves_line(m: &Moves) -> Markup {
    html! {
        p.notice.zone-moves data-zone-moves role="status" hidden[!m.running] {
            "Statistics are being moved to the new time zone: " span data-zone-pct { (m.percent()) " %" }
            ". Figures stay readable meanwhile."
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sat(source: Option<&str>, zone: Option<&str>) -> Sat {
        serde_json::from_value(serde_json::json!({
            "id": "s", "name": "Garden Pi", "kind": "satellite", "can_manage": true, "latitude": null,
            "longitude": null, "last_seen_at": null, "is_online": true, "heartbeat_state": null,
            "noise_floor_rms": null, "uptime_seconds": null, "version": null, "update_status": null,
            "target_version": null, "filter_stats": null, "outbox_stats": null,
            "time_zone": zone, "time_zone_source": source, "time_zone_override": null
        }))
        .expect("sat")
    }

    #[test]
    fn a_satellite_says_where_its_zone_comes_from() {
        let w = |s: Option<&str>, z: &str| words(&sat(s, Some(z))).into_string();
        assert!(
            w(Some("position"), "America/New_York")
                .contains("America/New_York</span><span class=\"muted\"> (from its position)")
        );
        assert!(w(Some("override"), "Asia/Tokyo").contains("(chosen here)"));
        assert!(w(Some("team"), "Europe/Berlin").contains("the team's zone: this satellite has no position"));
    }

    #[test]
    fn the_zone_list_has_places_and_utc_but_no_abbreviations() {
        let list = names().into_string();
        for name in ["Europe/Berlin", "America/New_York", "UTC", "Asia/Kathmandu"] {
            assert!(list.contains(&format!("\"{name}\"")), "{name}");
        }
        for bad in ["\"CET\"", "\"EST5EDT\""] {
            assert!(!list.contains(bad), "{bad}");
        }
    }

    #[test]
    fn the_moves_line_shows_only_while_a_move_runs() {
        let running = moves_line(&Moves { running: true, done: 90, total: 200 }).into_string();
        assert!(running.contains("45 %") && !running.contains("hidden"), "{running}");
        let idle = moves_line(&Moves::default()).into_string();
        assert!(idle.contains("hidden"), "{idle}");
    }
}
