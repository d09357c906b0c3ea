//! The parts of one species' page that come from its profile (`GET /api/stats/species/{code}`,
//! SPEC 4.8): the range selector, the charts (trend over days, hourly activity, confidence
//! histogram, per-satellite counts), the expected-here status and the newest detections.

use maud::{Markup, html};
use serde::Deserialize;
use serde_json::json;

use super::{
    stats::Filters,
    stats::{RANGES, Sat},
    stats_parts::{Named, chart},
};
use crate::{
    time::hours::HourFormat,
    web::{ctx::Ctx, layout},
};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SatelliteCount {
    pub satellite_id: String,
    pub name: String,
    pub detections: i64,
}

#[derive(Debug, Deserialize)]
pub struct Band {
    pub from: f64,
    pub detections: i64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Recent {
    pub id: String,
    pub satellite_id: String,
    pub confidence: f64,
    pub detected_at: String,
}

/// A species profile as the API gives it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    #[serde(flatten)]
    pub species: Named,
    pub detections: i64,
    pub confirmed: i64,
    pub first_detected_at: Option<String>,
    pub last_detected_at: Option<String>,
    pub daily: Vec<(String, i64)>,
    pub hourly: Vec<i64>,
    pub satellites: Vec<SatelliteCount>,
    pub confidence: Vec<Band>,
    pub recent: Vec<Recent>,
}

/// The range model's word on a species at one placed satellite this week.
#[derive(Debug)]
pub struct Place {
    pub satellite: String,
    /// The range model's week as its days ("1–7 Dec").
    pub days: String,
    /// The occurrence score when the species is on the week's list.
    pub score: Option<f64>,
}

/// The expected-here status, or why there is none.
#[derive(Debug)]
pub enum Expected {
    /// No satellite has a position, so there is no place to ask about.
    NoPlace,
    /// The range model is not installed or failed.
    Unavailable(String),
    Places(Vec<Place>),
}

pub fn expected_here(e: &Expected) -> Markup {
    match e {
        Expected::NoPlace => html! {
            p.expected.unknown {
                "Expected here: unknown. No satellite has a location, so the hub cannot check this week's expected species. "
                "Set a satellite's latitude and longitude to see it."
            }
        },
        Expected::Unavailable(why) => html! {
            p.expected.unknown title=(why) { "Expected here: unknown. The range model is not installed on this hub, so it cannot say which species to expect this week." }
        },
        Expected::Places(list) if list.is_empty() => html! {
            p.expected.unknown { "Expected here: unknown. The expected-species check did not answer for any satellite." }
        },
        Expected::Places(list) => html! {
            ul.expected {
                @for p in list {
                    li {
                        @match p.score {
                            Some(s) => {
                                span.badge.ok title=(format!("range model score {:.0}%", s * 100.0)) { "Expected here" }
                                " at " (p.satellite) " this week (" (p.days) ", score " (format!("{:.0}", s * 100.0)) "%)"
                            }
                            None => {
                                span.badge.unexpected title="not on the range model's list for this place and week" { "Not expected here" }
                                " at " (p.satellite) " this week (" (p.days) ")"
                            }
                        }
                    }
                }
            }
        },
    }
}

/// The range choice of a species page, kept in the URL.
pub fn range_selector(f: &Filters, code: &str) -> Markup {
    html! {
        nav.range-tabs aria-label="Range" {
            @for d in RANGES {
                a href=(format!("/species/{code}?days={d}")) aria-current=[(f.days == d.to_string()).then_some("page")] { (d) " days" }
            }
        }
    }
}

/// The four profile charts, each with an empty state that says why.
/// Hours are on the viewer's clock (`hours`).
pub fn charts(p: &Profile, f: &Filters, hours: HourFormat) -> Markup {
    let none = || {
        layout::empty(
            &format!("No detections in {}", f.range_words()),
            html! { "Pick a longer range above, or wait for the next one." },
        )
    };
    let total = p.detections;
    let trend = json!({
        "type": "bar",
        "time": true,
        "x": p.daily.iter().map(|d| &d.0).collect::<Vec<_>>(),
        "series": [{ "label": "Detections", "values": p.daily.iter().map(|d| d.1).collect::<Vec<_>>() }],
    });
    let hourly = json!({
        "type": "bar",
        "x": (0..24).collect::<Vec<i64>>(),
        "xFormat": "hour",
        "series": [{ "label": "Detections", "values": p.hourly }],
    });
    let conf = json!({
        "type": "bar",
        "x": p.confidence.iter().map(|b| (b.from * 100.0).round() / 100.0).collect::<Vec<_>>(),
        "xFormat": "pct",
        "series": [{ "label": "Detections", "values": p.confidence.iter().map(|b| b.detections).collect::<Vec<_>>() }],
    });
    let peak =
        p.hourly.iter().enumerate().max_by_key(|(i, n)| (**n, std::cmp::Reverse(*i))).map(|(i, _)| i).unwrap_or(0);
    let busiest = hours.hour(peak as u32);
    let most_sat = p.satellites.iter().map(|s| s.detections).max().unwrap_or(0).max(1);
    html! {
        div.chart-grid {
            section.card {
                h2 { "Detections per day" }
                @if total == 0 { (none()) } @else {
                    (chart("species-trend", &format!("Detections per day over {}: {total} in all", f.range_words()), trend))
                }
            }
            section.card {
                h2 { "Activity by hour" }
                @if total == 0 { (none()) } @else {
                    p.muted.small #busiest { "Busiest around " (busiest) "." }
                    (chart("species-hourly", &format!("Detections per hour of day; busiest at {busiest}"), hourly))
                }
            }
            section.card {
                h2 { "Confidence" }
                @if total == 0 { (none()) } @else {
                    p.muted.small { "How sure the classifier was, in steps of 5 %." }
                    (chart("species-confidence", "Detections per confidence band", conf))
                }
            }
            section.card {
                h2 { "Per satellite" }
                @if p.satellites.is_empty() || total == 0 { (none()) } @else {
                    ul.bars {
                        @for s in &p.satellites {
                            li {
                                a.bar-name href=(format!("/satellites/{}", s.satellite_id)) { (s.name) }
                                span.bar-track aria-hidden="true" {
                                    span style=(format!("width:{:.1}%", s.detections as f64 * 100.0 / most_sat as f64)) {}
                                }
                                span.bar-n { (s.detections) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The ten newest detections, linked to their pages.
pub fn recent(ctx: &Ctx, p: &Profile, sats: &[Sat]) -> Markup {
    let name = super::common::common_name(ctx, &p.species.species_code, &p.species.common_name);
    html! {
        section.card {
            div.card-head {
                h2 { "Recent detections" }
                a.more href=(format!("/detections?species={}", p.species.species_code)) { "All of them" }
            }
            @if p.recent.is_empty() {
                (layout::empty(&format!("{name} has not been detected yet"), html! {
                    "When a satellite hears it, the detection shows here."
                }))
            } @else {
                ul.recent-list {
                    @for r in &p.recent {
                        @let sat = sats.iter().find(|s| s.id == r.satellite_id).map(|s| s.name.as_str())
                            .or_else(|| p.satellites.iter().find(|s| s.satellite_id == r.satellite_id).map(|s| s.name.as_str()))
                            .unwrap_or("a satellite");
                        li {
                            a href=(format!("/detections/{}", r.id)) { (layout::ago(&r.detected_at)) }
                            span.sat { (sat) }
                            (layout::confidence(r.confidence, false))
                        }
                    }
                }
            }
        }
    }
}
