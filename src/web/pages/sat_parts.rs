//! Pieces the satellite pages share: the satellite as `GET /api/satellites` lists it, its online
//! state, telemetry sparklines (inline SVG drawn here) and the outbox and filter stats as bars.

use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use crate::web::{client::Api, error::PageError, layout, words};

/// A satellite as the API lists it (`SatelliteView`, snake_case).
#[derive(Debug, Clone, Deserialize)]
pub struct Sat {
    pub id: String,
    pub name: String,
    pub kind: String,
    #[serde(default)]
    pub registered_by_name: Option<String>,
    pub can_manage: bool,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    pub last_seen_at: Option<String>,
    pub is_online: bool,
    /// Only an imported station's history: no device, never online (issue 51, defect 13).
    #[serde(default)]
    pub history_only: bool,
    /// Birds left out in the last 24 hours as not expected here (issue 51, defect 18).
    #[serde(default)]
    pub not_expected_left_out_24h: Option<u64>,
    pub heartbeat_state: Option<String>,
    pub noise_floor_rms: Option<f64>,
    pub uptime_seconds: Option<i64>,
    pub version: Option<String>,
    pub update_status: Option<String>,
    pub target_version: Option<String>,
    /// Why the last update failed (the satellite's report), while `update_status` is `failed`.
    #[serde(default)]
    pub update_error: Option<String>,
    pub filter_stats: Option<Value>,
    /// What the hub's own detection filters did with this satellite's audio (absent on hubs
    /// that do not count it yet).
    #[serde(default, alias = "hubFilterStats")]
    pub hub_filter_stats: Option<Value>,
    pub outbox_stats: Option<Value>,
    /// The clock offset in words (absent before a timestamped heartbeat), whether it is wrong,
    /// when it was measured and how many chunks the hub re-stamped (`sat_clock`).
    #[serde(default)]
    pub clock_text: Option<String>,
    #[serde(default)]
    pub clock_wrong: bool,
    #[serde(default)]
    pub clock_checked_at: Option<String>,
    #[serde(default)]
    pub clock_corrected_chunks: i64,
    /// The effective IANA zone, where it comes from (`override`, `position`, `team`) and the
    /// zone chosen for it (issue 37).
    #[serde(default)]
    pub time_zone: Option<String>,
    #[serde(default)]
    pub time_zone_source: Option<String>,
    #[serde(default)]
    pub time_zone_override: Option<String>,
}

/// `GET /api/satellites` answer.
#[derive(Debug, Deserialize)]
pub struct SatPage {
    pub satellites: Vec<Sat>,
    pub total: i64,
}

/// One telemetry sample (`GET /api/satellites/{id}/telemetry`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Point {
    pub cpu_temp: Option<f64>,
    pub storage_free_bytes: Option<i64>,
}

#[derive(Debug, Deserialize)]
pub struct Telemetry {
    pub points: Vec<Point>,
}

/// The last day of telemetry; an empty list when the API has none for it.
pub async fn telemetry(api: &Api, id: &str) -> Result<Vec<Point>, PageError> {
    Ok(api
        .get_opt::<Telemetry>(&format!("/satellites/{id}/telemetry?hours=24"))
        .await?
        .map(|t| t.points)
        .unwrap_or_default())
}

/// Online / offline with the heartbeat state beside it.
pub fn state(s: &Sat) -> Markup {
    if s.history_only {
        return html! { span.sat-state.history { span.badge title="no device records under this name" { "imported history" } } };
    }
    let label = if s.is_online { "online" } else { "offline" };
    html! {
        span.sat-state.(label) {
            span.dot.(if s.is_online { "on" } else { "off" }) aria-hidden="true" {}
            strong { (label) }
            @if let Some(h) = s.heartbeat_state.as_deref().filter(|_| s.is_online) {
                span.muted.small { " · " (h.replace('_', " ")) }
            }
            @if s.clock_wrong && s.is_online {
                " " span.badge.no.clock-wrong { "clock wrong" }
            }
        }
    }
}

/// "3 min ago", or "never" before the first message.
pub fn last_seen(s: &Sat) -> Markup {
    match &s.last_seen_at {
        Some(t) => layout::ago(t),
        None => html! { span.muted { "never" } },
    }
}

/// The version with the update state (`updating to 1.4.0`, `update failed`).
pub fn version(s: &Sat) -> Markup {
    html! {
        span.mono { (s.version.as_deref().filter(|v| !v.is_empty()).unwrap_or("unknown")) }
        @match s.update_status.as_deref() {
            Some("updating") => span.badge { "updating" @if let Some(t) = &s.target_version { " to " (t) } },
            Some("failed") => span.badge.no title=(s.target_version.as_deref().map(|t| format!("the update to {t} failed")).unwrap_or_default()) { "update failed" },
            Some(other) if !other.is_empty() && other != "idle" && other != "none" => span.badge { (other) },
            _ => {},
        }
    }
}

fn num(v: Option<&Value>, key: &str) -> f64 {
    v.and_then(|o| o.get(key)).and_then(Value::as_f64).unwrap_or(0.0)
}

/// Human bytes: 1.2 MB.
pub fn bytes(n: f64) -> String {
    let units = ["B", "KB", "MB", "GB", "TB"];
    let mut v = n.max(0.0);
    let mut i = 0;
    while v >= 1000.0 && i < units.len() - 1 {
        v /= 1000.0;
        i += 1;
    }
    if i == 0 { format!("{v:.0} {}", units[i]) } else { format!("{v:.1} {}", units[i]) }
}

/// A stacked bar of labelled parts (`class`, label, value) with a legend; `shown` writes a
/// value as a person reads it (a count, or bytes as MB).
fn stacked(title: &str, parts: &[(&str, String, f64)], empty: &str, shown: fn(f64) -> String) -> Markup {
    let total: f64 = parts.iter().map(|p| p.2).sum();
    html! {
        div.statbar {
            div.statbar-title.small { (title) }
            @if total <= 0.0 {
                div.muted.small { (empty) }
            } @else {
                div.bar-track role="img" aria-label=(parts.iter().map(|p| format!("{}: {}", p.1, shown(p.2))).collect::<Vec<_>>().join(", ")) {
                    @for (class, label, v) in parts {
                        @if *v > 0.0 {
                            span.(class) style=(format!("width:{:.2}%", v / total * 100.0)) title=(format!("{label}: {}", shown(*v))) {}
                        }
                    }
                }
                ul.legend.small {
                    @for (class, label, v) in parts {
                        @if *v > 0.0 { li { span.key.(class) aria-hidden="true" {} (label) " " span.num { (shown(*v)) } } }
                    }
                }
            }
        }
    }
}

fn fmt_count(v: f64) -> String {
    if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.1}") }
}

/// What the filter kept and dropped, from the last heartbeat's counters.
pub fn filter_bar(s: &Sat) -> Markup {
    let f = s.filter_stats.as_ref();
    let other = [
        "rejectedAmphibian",
        "rejectedInsect",
        "rejectedAnthropogenic",
        "rejectedHumanVoice",
        "rejectedOtherAnimal",
        "rejectedOther",
    ]
    .iter()
    .map(|k| num(f, k))
    .sum::<f64>();
    stacked(
        "Filter: chunks sent and dropped",
        &[
            ("p1", "sent".into(), num(f, "totalSent")),
            ("p2", "silence".into(), num(f, "rejectedSilence")),
            ("p3", "no bird".into(), num(f, "rejectedClassifier")),
            ("p4", "other sounds".into(), other),
        ],
        "No filter counts yet (they come with the first heartbeat).",
        fmt_count,
    )
}

/// The hub's filter counters (`hubFilterStats`), beside the satellite's own; nothing before the
/// hub counts them.
pub fn hub_filter_bar(s: &Sat) -> Markup {
    let Some(h) = s.hub_filter_stats.as_ref().filter(|v| v.is_object()) else { return html! {} };
    let n = |k: &str| num(Some(h), k);
    let counters = [
        ("belowThreshold", "below the threshold"),
        ("excluded", "excluded species"),
        ("notIncluded", "not on the include list"),
        ("notExpectedDropped", "not expected here"),
        ("privacyDropped", "privacy (a voice)"),
        ("suppressed", "suppressed (dog …)"),
        ("secondLookConfirmed", "second look: confirmed"),
        ("secondLookDiscarded", "second look: discarded"),
        ("secondLookHidden", "second look: hidden"),
    ];
    html! {
        div.hub-filter {
            (stacked(
                "Hub filter: detections confirmed and dropped",
                &[
                    ("p1", "confirmed by a second look".into(), n("secondLookConfirmed")),
                    ("p2", "below the threshold".into(), n("belowThreshold")),
                    ("p3", "species lists and location".into(), n("excluded") + n("notIncluded") + n("notExpectedDropped")),
                    ("p4", "privacy, suppression, unconfirmed".into(),
                        n("privacyDropped") + n("suppressed") + n("secondLookDiscarded") + n("secondLookHidden")),
                ],
                "The hub has not filtered anything from this satellite yet.",
                fmt_count,
            ))
            dl.hub-counts.small {
                @for (k, words) in counters { div { dt { (words) } dd { (fmt_count(n(k))) } } }
            }
        }
    }
}

/// The outbox: what the hub has acknowledged and what still waits to be sent.
pub fn outbox_bar(s: &Sat) -> Markup {
    let o = s.outbox_stats.as_ref();
    let (acked, unacked) = (num(o, "ackedBytes"), num(o, "unackedBytes"));
    html! {
        (stacked(
            "Outbox on the device",
            &[("p1", "acknowledged".into(), acked), ("p4", "waiting".into(), unacked)],
            "The outbox is empty or has not been reported yet.",
            bytes,
        ))
        @if o.is_some() {
            div.muted.small { (words::count(num(o, "unackedCount") as u64, "chunk waiting", "chunks waiting")) " · " (bytes(num(o, "diskBytes"))) " on disk" }
        }
    }
}

/// A sparkline of `values` (oldest first) with the latest value as text.
pub fn sparkline(label: &str, values: &[f64], latest: String) -> Markup {
    let (w, h) = (120.0_f64, 32.0_f64);
    let line = if values.len() >= 2 {
        let (min, max) = values.iter().fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
        let span = if (max - min).abs() < f64::EPSILON { 1.0 } else { max - min };
        let step = w / (values.len() - 1) as f64;
        let pts: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{:.1},{:.1}", i as f64 * step, h - 2.0 - (v - min) / span * (h - 4.0)))
            .collect();
        Some(pts.join(" "))
    } else {
        None
    };
    html! {
        div.spark {
            span.spark-label.small { (label) }
            @if let Some(points) = line {
                svg.spark-svg viewBox=(format!("0 0 {w} {h}")) width="120" height="32" role="img"
                    aria-label=(format!("{label} over the last 24 hours, now {latest}")) preserveAspectRatio="none" {
                    polyline points=(points) {}
                }
            } @else if values.len() == 1 {
                span.spark-none.small.muted { "one sample so far" }
            } @else {
                span.spark-none.small.muted { "no samples in 24 h" }
            }
            span.spark-value { (latest) }
        }
    }
}

/// The telemetry sparklines: temperature, free storage, noise floor (only the latest heartbeat's
/// noise floor is kept, so it is a number, not a line).
pub fn sparklines(s: &Sat, points: &[Point]) -> Markup {
    let temps: Vec<f64> = points.iter().filter_map(|p| p.cpu_temp).collect();
    let storage: Vec<f64> = points.iter().filter_map(|p| p.storage_free_bytes).map(|b| b as f64).collect();
    let temp_now = temps.last().map(|t| format!("{t:.1} °C")).unwrap_or_else(|| "–".into());
    let storage_now = storage.last().map(|b| format!("{} free", bytes(*b))).unwrap_or_else(|| "–".into());
    html! {
        div.sparks {
            (sparkline("Temperature", &temps, temp_now))
            (sparkline("Storage", &storage, storage_now))
            div.spark {
                span.spark-label.small { "Noise floor" }
                span.spark-none.small.muted { "latest heartbeat" }
                span.spark-value { (s.noise_floor_rms.map(|n| format!("{n:.4} RMS")).unwrap_or_else(|| "–".into())) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_like_a_person_writes_them() {
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(1_500_000.0), "1.5 MB");
        assert_eq!(bytes(-3.0), "0 B");
    }

    #[test]
    fn the_outbox_legend_reads_in_megabytes_not_raw_bytes() {
        let sat: Sat = serde_json::from_value(serde_json::json!({
            "id": "s", "name": "n", "kind": "satellite", "can_manage": true, "latitude": null, "longitude": null,
            "last_seen_at": null, "is_online": false, "heartbeat_state": null, "noise_floor_rms": null,
            "uptime_seconds": null, "version": null, "update_status": null, "target_version": null,
            "filter_stats": null, "outbox_stats": {"ackedBytes": 12_500_000, "unackedBytes": 1_500_000,
            "unackedCount": 4, "diskBytes": 14_000_000}
        }))
        .expect("sat");
        let html = outbox_bar(&sat).into_string();
        assert!(html.contains("12.5 MB") && html.contains("1.5 MB"), "{html}");
        assert!(!html.contains("12500000") && !html.contains("1500000"), "no raw byte counts: {html}");
    }

    #[test]
    fn a_sparkline_needs_two_samples_and_stays_inside_its_box() {
        let none = sparkline("T", &[], "–".into()).into_string();
        assert!(none.contains("no samples"), "{none}");
        // One sample is not "no samples" beside its own value.
        let one = sparkline("T", &[1.0], "1".into()).into_string();
        assert!(one.contains("one sample so far") && !one.contains("no samples"), "{one}");
        let flat = sparkline("T", &[5.0, 5.0, 5.0], "5".into()).into_string();
        assert!(flat.contains("<polyline"), "{flat}");
        let line = sparkline("T", &[1.0, 3.0, 2.0], "2".into()).into_string();
        assert!(line.contains("0.0,30.0") && line.contains("60.0,2.0"), "{line}");
    }
}
