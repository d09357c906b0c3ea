//! Pieces several pages share: the detection row as the API lists it, species names in the
//! viewer's language, cached species images, and the detection card.

use std::collections::HashMap;

use axum::http::Method;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::json;

use crate::{
    domain::detection_flags::RareReason,
    web::{client::Api, ctx::Ctx, error::PageError, icons, layout},
};

/// A detection as `GET /api/detections` lists it (SPEC 2.9, snake_case).
#[derive(Debug, Clone, Deserialize)]
pub struct Detection {
    pub id: String,
    pub satellite_id: String,
    pub satellite_name: String,
    pub audio_chunk_id: String,
    pub species_code: String,
    pub scientific_name: String,
    pub common_name: String,
    pub confidence: f64,
    pub detected_at: String,
    #[serde(default)]
    pub start_ms: i64,
    #[serde(default)]
    pub end_ms: i64,
    pub is_rare: bool,
    pub rare_reason: Option<String>,
    pub is_first_of_day: bool,
    pub is_first_of_season: bool,
    /// The team's first detection of the species ("New for the team").
    #[serde(default)]
    pub is_first_for_team: bool,
    pub expected_here: Option<bool>,
    pub verification_status: String,
    pub calibrated_confidence: Option<f64>,
    /// Retention deleted the recording ("audio expired").
    #[serde(default)]
    pub audio_expired_at: Option<String>,
    /// The satellite's IANA zone: its time is written in it (issue 37).
    #[serde(default)]
    pub time_zone: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct DetectionPage {
    pub detections: Vec<Detection>,
    #[serde(default)]
    pub total: Option<i64>,
    /// `total` is a lower bound: counting on would have read too many rows ("10,000+").
    #[serde(default, rename = "totalIsLowerBound")]
    pub total_is_lower_bound: bool,
}

/// The common name in the viewer's language where the model ships one.
pub fn common_name(ctx: &Ctx, code: &str, stored: &str) -> String {
    if ctx.language == "en" {
        return stored.to_owned();
    }
    ctx.api_state().names.common_name(&ctx.language, code).unwrap_or_else(|| stored.to_owned())
}

/// The proxy URLs of the species images that are cached, by species code. Asking queues the
/// missing ones for download, so the next visit has them.
pub async fn images(api: &Api, codes: impl IntoIterator<Item = String>) -> Result<HashMap<String, String>, PageError> {
    let mut codes: Vec<String> = codes.into_iter().collect();
    codes.sort();
    codes.dedup();
    codes.truncate(200);
    if codes.is_empty() {
        return Ok(HashMap::new());
    }
    let answer = api.send(Method::POST, "/species/images", Some(&json!({ "codes": codes }))).await?;
    let mut out = HashMap::new();
    if let Some(map) = answer.body.get("images").and_then(|v| v.as_object()) {
        for (code, info) in map {
            if let Some(url) = info.get("url").and_then(|u| u.as_str()) {
                out.insert(code.clone(), url.to_owned());
            }
        }
    }
    Ok(out)
}

/// The image, or a drawn placeholder when none is cached.
pub fn thumb(url: Option<&String>, alt: &str) -> Markup {
    html! {
        @if let Some(u) = url { img.thumb src=(u) alt=(alt) loading="lazy" width="56" height="56"; }
        @else { span.thumb.placeholder aria-hidden="true" { (icons::bird()) } }
    }
}

/// The badges of a detection, each with its reason in words as a tooltip. "Rare" means not
/// expected at this place and week (the range model); a team's first record of a species is its
/// own badge, "New for the team" (issue 36).
pub fn badges(d: &Detection) -> Markup {
    let rare_tip =
        d.rare_reason.as_deref().and_then(RareReason::words).unwrap_or("not expected at this place and time of year");
    html! {
        @if d.is_rare {
            span.badge.rare title=(rare_tip) { "Rare" }
        }
        @if d.is_first_for_team {
            span.badge.new title="the team's first detection of this species ever" { "New for the team" }
        }
        @if d.is_first_of_season && !d.is_first_for_team { span.badge.first title="the first of this species this season" { "First this season" } }
        @else if d.is_first_of_day && !d.is_first_for_team { span.badge.first title="the first of this species today" { "First today" } }
        @if d.expected_here == Some(false) && !d.is_rare {
            span.badge.unexpected title="not on the expected-species list for this place and week" { "Not expected here" }
        }
        @match d.verification_status.as_str() {
            "confirmed" => span.badge.ok { "Confirmed" },
            "rejected" => span.badge.no { "Rejected" },
            _ => {},
        }
    }
}

/// The play button: `app.js` plays `/api/audio/{chunk}` in one shared player.
pub fn play(d: &Detection, label: &str) -> Markup {
    if d.audio_expired_at.is_some() {
        return html! { span.expired.small.muted title="retention deleted the recording to keep the disk from filling" { "audio expired" } };
    }
    html! {
        button.play type="button" data-audio=(format!("/api/audio/{}", d.audio_chunk_id))
            data-start=(d.start_ms) aria-label=(format!("Play {label}")) { (icons::play()) }
    }
}

/// One detection as a card (Live feed, lists).
pub fn card(ctx: &Ctx, d: &Detection, image: Option<&String>) -> Markup {
    let name = common_name(ctx, &d.species_code, &d.common_name);
    html! {
        article.det-card #(format!("det-{}", d.id)) data-id=(d.id) {
            (thumb(image, &name))
            div.det-main {
                a.det-title href=(format!("/detections/{}", d.id)) { (layout::names(&name, &d.scientific_name)) }
                div.det-meta {
                    (layout::confidence(d.calibrated_confidence.unwrap_or(d.confidence), d.calibrated_confidence.is_some()))
                    span.sat { (d.satellite_name) }
                    (layout::ago_in(&d.detected_at, d.time_zone.as_deref()))
                }
                div.badges { (badges(d)) }
            }
            (play(d, &name))
        }
    }
}

/// One species' row of the hour grid.
pub struct GridLine<'a> {
    pub code: &'a str,
    pub name: String,
    pub scientific: &'a str,
    /// Detections per local hour, 0 to 23.
    pub hourly: &'a [i64],
    pub total: i64,
}

/// Species as rows, 24 hours as columns, cells shaded by count (at most 30 rows). A species
/// links to `species_href`; a cell links to `cell_href` when given.
pub fn hour_grid(
    lines: &[GridLine],
    max_cell: i64,
    species_href: impl Fn(&str) -> String,
    cell_href: Option<impl Fn(&str) -> String>,
) -> Markup {
    let max = max_cell.max(1) as f64;
    html! {
        div.grid-scroll {
            table.activity {
                caption.sr { "Detections per species and hour today" }
                thead { tr { th scope="col" { "Species" } @for h in 0..24 { th.(if h % 6 == 0 { "major" } else { "minor" }) scope="col" { (format!("{h:02}")) } } th scope="col" { "Total" } } }
                tbody {
                    @for row in lines.iter().take(30) {
                        tr {
                            th scope="row" { a href=(species_href(row.code)) title=(row.scientific) { (row.name) } }
                            @for (h, n) in row.hourly.iter().enumerate() {
                                @let level = if *n == 0 { 0 } else { 1 + ((*n as f64 / max) * 4.0).ceil().min(4.0) as i64 };
                                td.(format!("l{level}")) {
                                    @if *n > 0 {
                                        @let tip = format!("{}: {n} at {h:02}:00", row.name);
                                        @if let Some(href) = &cell_href { a href=(href(row.code)) title=(tip) { (n) } }
                                        @else { span title=(tip) { (n) } }
                                    }
                                }
                            }
                            td.total { (row.total) }
                        }
                    }
                }
            }
        }
    }
}
