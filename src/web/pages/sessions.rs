//! Recording sessions: the list of `GET /api/sessions` (one satellite's unbroken run of chunks
//! with its detection summary) and the last day's timeline from `GET /api/sessions/timeline`,
//! drawn as CSS bars per satellite with a tick per detection.

use std::collections::BTreeMap;

use axum::{
    Router,
    extract::RawQuery,
    response::{IntoResponse, Response},
    routing::get,
};
use chrono::{DateTime, Utc};
use maud::{Markup, html};
use serde_json::Value;

use super::common;
use crate::web::{WebState, ctx::Ctx, error::PageError, layout, words};

pub fn routes() -> Router<WebState> {
    Router::new().route("/sessions", get(sessions_page))
}

fn time_of(v: &Value, key: &str) -> Option<DateTime<Utc>> {
    v.get(key).and_then(Value::as_str).and_then(|s| DateTime::parse_from_rfc3339(s).ok()).map(|t| t.with_timezone(&Utc))
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

async fn sessions_page(ctx: Ctx, RawQuery(raw): RawQuery) -> Response {
    match render(&ctx, raw.as_deref()).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

async fn render(ctx: &Ctx, raw: Option<&str>) -> Result<Markup, PageError> {
    ctx.team_id()?;
    // Only the satellite filter is taken from the URL; the API validates it.
    let sat = url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
        .find(|(k, v)| k == "satelliteId" && !v.trim().is_empty())
        .map(|(_, v)| v.trim().to_owned());
    let filter = sat
        .as_deref()
        .map(|s| format!("satelliteId={}", url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>()))
        .unwrap_or_default();
    let paths = [format!("/sessions?limit=50&sortDir=desc&{filter}"), format!("/sessions/timeline?{filter}")];
    let (list, timeline, sats) = tokio::try_join!(
        ctx.api.get::<Value>(&paths[0]),
        ctx.api.get::<Value>(&paths[1]),
        ctx.api.get::<Value>("/satellites?limit=500"),
    )?;
    let sessions = list.get("sessions").and_then(Value::as_array).cloned().unwrap_or_default();
    let sats = sats.get("satellites").and_then(Value::as_array).cloned().unwrap_or_default();
    // A session's start is written in its station's zone (with the zone's name where the viewer's
    // differs), as detections are.
    let zones: std::collections::HashMap<&str, &str> =
        sats.iter().filter_map(|s| Some((s.get("id")?.as_str()?, s.get("time_zone")?.as_str()?))).collect();
    let body = html! {
        h1 { "Recording sessions" }
        form.filters.card method="get" action="/sessions" {
            div.field {
                label for="s-sat" { "Satellite" }
                select #s-sat name="satelliteId" {
                    option value="" { "All satellites" }
                    @for s in &sats {
                        option value=(text(s, "id")) selected[Some(text(s, "id")) == sat.as_deref()] { (text(s, "name")) }
                    }
                }
            }
            div.field.actions { button.primary type="submit" { "Show" } }
        }
        section.card {
            h2 { "The last 24 hours" }
            (timeline_view(&timeline, &sats))
        }
        section.card {
            h2 { "Sessions" }
            @if sessions.is_empty() {
                (layout::empty("No recording sessions yet", html! {
                    "A session starts when a satellite sends its first audio chunk. "
                    a href="/satellites" { "Check your satellites" }
                }))
            } @else {
                div.table-scroll {
                    table.list {
                        thead { tr { th { "Satellite" } th { "Started" } th { "Length" } th.num { "Chunks" } th.num { "Detections" } th { "Top species" } } }
                        tbody {
                            @for s in &sessions {
                                @let n = |k: &str| s.get(k).and_then(Value::as_i64).unwrap_or(0);
                                tr {
                                    td { (text(s, "satellite_name")) }
                                    td { (layout::ago_in(text(s, "started_at"), zones.get(text(s, "satellite_id")).copied())) }
                                    td { (length(n("duration_ms"))) }
                                    td.num { (n("chunk_count")) }
                                    td.num {
                                        @if n("detection_count") > 0 {
                                            a href=(format!("/detections?satelliteId={}", text(s, "satellite_id"))) { (n("detection_count")) }
                                        } @else { "0" }
                                    }
                                    td {
                                        @for (i, t) in s.get("top_species").and_then(Value::as_array).cloned().unwrap_or_default().iter().enumerate() {
                                            @if i > 0 { ", " }
                                            a href=(format!("/species/{}", text(t, "species_code"))) title=(text(t, "scientific_name")) {
                                                (common::common_name(ctx, text(t, "species_code"), text(t, "common_name")))
                                            }
                                            " (" (t.get("detections").and_then(Value::as_i64).unwrap_or(0)) ")"
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(layout::page(ctx, "Recording sessions", "", &["detections.css"], body))
}

/// "45 s", "12 min" or "2 h 5 min".
fn length(ms: i64) -> String {
    let s = (ms.max(0) + 999) / 1000;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", (s + 59) / 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// One row per satellite: a bar for each recorded chunk and a tick for each detection, across
/// the timeline's range.
fn timeline_view(t: &Value, sats: &[Value]) -> Markup {
    let (Some(from), Some(to)) = (time_of(t, "from"), time_of(t, "to")) else {
        return layout::empty("No timeline", html! { "The hub did not give a time range." });
    };
    let span = (to - from).num_milliseconds().max(1) as f64;
    let pct = |at: DateTime<Utc>| ((at - from).num_milliseconds() as f64 / span * 100.0).clamp(0.0, 100.0);
    let chunks = t.get("chunks").and_then(Value::as_array).cloned().unwrap_or_default();
    let detections = t.get("detections").and_then(Value::as_array).cloned().unwrap_or_default();
    if chunks.is_empty() {
        return layout::empty(
            "Nothing recorded in the last 24 hours",
            html! {
                "Satellites that are online and on schedule show up here as bars."
            },
        );
    }
    let names: BTreeMap<&str, &str> = sats.iter().map(|s| (text(s, "id"), text(s, "name"))).collect();
    let mut rows: BTreeMap<&str, (Vec<&Value>, Vec<&Value>)> = BTreeMap::new();
    for c in &chunks {
        rows.entry(text(c, "satellite_id")).or_default().0.push(c);
    }
    for d in &detections {
        rows.entry(text(d, "satellite_id")).or_default().1.push(d);
    }
    html! {
        div.timeline role="img" aria-label=(format!(
            "{} and {} in the last 24 hours",
            words::count(chunks.len(), "chunk", "chunks"),
            words::count(detections.len(), "detection", "detections")
        )) {
            @for (sat, (cs, ds)) in &rows {
                div.tl-row {
                    span.tl-name { (names.get(sat).copied().unwrap_or("satellite")) }
                    div.tl-track {
                        @for c in cs {
                            @if let Some(at) = time_of(c, "recorded_at") {
                                @let width = c.get("duration_ms").and_then(Value::as_f64).unwrap_or(3000.0) / span * 100.0;
                                span.tl-chunk style=(format!("left:{:.3}%;width:{:.3}%", pct(at), width.max(0.15))) {}
                            }
                        }
                        @for d in ds {
                            @if let Some(at) = time_of(d, "detected_at") {
                                a.tl-det href=(format!("/detections/{}", text(d, "id"))) style=(format!("left:{:.3}%", pct(at)))
                                    title=(format!("{} ({:.0}%)", text(d, "common_name"), d.get("confidence").and_then(Value::as_f64).unwrap_or(0.0) * 100.0)) {}
                            }
                        }
                    }
                }
            }
            div.tl-axis aria-hidden="true" {
                span { (layout::at(&from.to_rfc3339())) }
                span { (layout::at(&to.to_rfc3339())) }
            }
        }
        @if t.get("truncated").and_then(Value::as_bool).unwrap_or(false) {
            p.muted.small { "Only the earliest 5000 chunks are drawn." }
        }
    }
}
