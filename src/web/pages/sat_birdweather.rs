//! The satellite page's BirdWeather card (issue 38, docs/birdweather.md): whether the station
//! shares its confirmed detections, the write-only token field, the minimum confidence, the
//! "Test token" button (a read of the station's figures; nothing is posted) and what became of
//! the detections. Everything goes through `/api/satellites/{id}/birdweather` with the
//! declarative forms of `app.js`; only the team's admins see the form. Its times are on the
//! station's clock (the answer's `timeZone`), like every time of the satellite's page.

use maud::{Markup, html};
use serde::Deserialize;

use crate::web::layout;

/// `GET /api/satellites/{id}/birdweather`, the part the card shows.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sharing {
    token_set: bool,
    token_last4: Option<String>,
    enabled: bool,
    min_confidence: f64,
    status: Status,
    /// The station's zone (absent from hubs before issue 51): its times are written in it.
    #[serde(default)]
    time_zone: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    queued: i64,
    sent: i64,
    skipped: i64,
    failed: i64,
    last_success_at: Option<String>,
    last_error: Option<String>,
    last_error_at: Option<String>,
    paused_until: Option<String>,
    recent: Vec<Recent>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Recent {
    common_name: String,
    detected_at: String,
    status: String,
    reason: Option<String>,
}

fn state_words(s: &Sharing) -> &'static str {
    match (s.token_set, s.enabled) {
        (false, _) => "Not shared with BirdWeather.",
        (true, false) => "BirdWeather sharing is paused (turned off here).",
        (true, true) => "Confirmed detections are shared with BirdWeather.",
    }
}

fn status_word(s: &str) -> &'static str {
    match s {
        "sent" => "sent",
        "skipped" => "not sent",
        "failed" => "failed",
        _ => "waiting",
    }
}

pub fn card(sat_id: &str, s: &Sharing, admin: bool) -> Markup {
    let st = &s.status;
    let zone = s.time_zone.as_deref();
    let at = |t: &str| layout::at_in(t, zone);
    let api = format!("/satellites/{sat_id}/birdweather");
    html! {
        section.card #sat-birdweather {
            h2 { "BirdWeather" }
            p #bw-state { (state_words(s)) }
            p.muted.small {
                "Each detection of this satellite that people confirm, at or above the minimum confidence, is "
                "uploaded to its BirdWeather station: the chunk's audio, then the detection. Rejected "
                "detections, non-birds, imported history and chunks the privacy filter emptied are never sent."
            }
            @if s.token_set || st.sent + st.queued + st.skipped + st.failed > 0 {
                p #bw-counts {
                    (st.sent) " sent · " (st.queued) " waiting · " (st.skipped) " not sent · " (st.failed) " failed"
                }
                @if let Some(t) = &st.last_success_at { p.small { "Last upload: " (at(t)) } }
                @if let Some(e) = &st.last_error {
                    p.small.error #bw-error {
                        "Last problem"
                        @if let Some(t) = &st.last_error_at { " (" (at(t)) ")" }
                        ": " (e)
                    }
                }
                @if let Some(until) = &st.paused_until {
                    p.small.error { "Paused after repeated failures until " (at(until)) "." }
                }
                @if !st.recent.is_empty() {
                    details {
                        summary { "Latest detections" }
                        ul.plain #bw-recent {
                            @for r in &st.recent {
                                li {
                                    strong { (r.common_name) } " (" (at(&r.detected_at)) "): "
                                    (status_word(&r.status))
                                    @if let Some(why) = &r.reason { @if r.status != "sent" { " — " (why) } }
                                }
                            }
                        }
                    }
                }
            }
            @if admin {
                form.stack #bw-form style="margin-top: 1rem" data-api=(format!("PUT {api}")) data-then="reload" {
                    label for="bw-token" { "Station token" }
                    input #bw-token type="password" name="token" autocomplete="off" spellcheck="false"
                        placeholder=(match &s.token_last4 {
                            Some(l) => format!("stored: …{l} (type to replace)"),
                            None => "from app.birdweather.com/account/stations".to_owned(),
                        })
                        required[!s.token_set];
                    label.check { input #bw-enabled type="checkbox" name="enabled" checked[s.enabled || !s.token_set]; "Share confirmed detections" }
                    label for="bw-min" { "Minimum confidence" }
                    input #bw-min type="number" name="minConfidence" min="0.01" max="1" step="0.01"
                        value=(format!("{:.2}", s.min_confidence));
                    div.row {
                        button.primary type="submit" { "Save" }
                    }
                    p.error.form-error hidden role="alert" {}
                }
                @if s.token_set {
                    div.row {
                        button #bw-test type="button" data-api=(format!("POST {api}/test")) data-body="{}"
                            data-result="#bw-test-result" data-then="toast" data-done="Test finished" { "Test token" }
                        button #bw-remove type="button" data-api=(format!("DELETE {api}"))
                            data-confirm="Stop sharing with BirdWeather and forget the token?" { "Stop sharing" }
                    }
                    p #bw-test-result hidden role="status" { span data-field="summary" {} }
                    p.muted.small { "The test only reads the station's figures of today; it posts nothing." }
                }
            }
        }
    }
}
