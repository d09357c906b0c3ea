//! The satellite page's "History" card: how many detections the satellite has, from which day
//! to which, and its species with their counts, so a station imported from BirdNET-Pi or
//! BirdNET-Go (issue 38), whose detections are years old, shows its history like any other.
//! Counts come from `GET /api/detections` (totals, first and last) and `GET /api/stats/top-species`
//! over the satellite's last year of records (the statistics' longest range). Its times are on
//! the station's clock, like every time of the satellite's page (`layout::at_in`).

use maud::{Markup, html};
use serde::Deserialize;

use crate::web::{client::Api, error::PageError, layout, words};

#[derive(Debug, Deserialize)]
struct Page {
    detections: Vec<Row>,
    total: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct Row {
    detected_at: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Top {
    species: Vec<Ranked>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Ranked {
    common_name: String,
    scientific_name: String,
    detections: i64,
}

/// `GET /api/satellites/{id}`, the part the card needs: the zone its times are read in.
#[derive(Debug, Deserialize)]
struct Station {
    #[serde(default)]
    time_zone: Option<String>,
}

/// The statistics' longest range, in days.
const YEAR: i64 = 366;

pub async fn card(api: &Api, sat: &str) -> Result<Markup, PageError> {
    let q = |dir: &str, count: bool| {
        format!("/detections?satelliteId={sat}&limit=1&sortBy=date&sortDir={dir}&withCount={count}")
    };
    // One count is enough: the oldest detection is read for its time only.
    let (desc, asc) = (q("desc", true), q("asc", false));
    let station = format!("/satellites/{sat}");
    let (newest, oldest, station) =
        tokio::try_join!(api.get::<Page>(&desc), api.get::<Page>(&asc), api.get::<Station>(&station))?;
    let zone = station.time_zone.as_deref();
    let total = newest.total.unwrap_or(0);
    let (Some(last), Some(first)) = (newest.detections.first(), oldest.detections.first()) else {
        return Ok(html! {
            section.card #sat-history { h2 { "History" } p.muted { "No detections yet." } }
        });
    };
    let day = |t: &str| chrono::DateTime::parse_from_rfc3339(t).map(|d| d.date_naive()).ok();
    let (Some(to), Some(from)) = (day(&last.detected_at), day(&first.detected_at)) else {
        return Err(PageError::Internal(anyhow::anyhow!("a detection time that is not RFC 3339")));
    };
    // One day of slack each side: the statistics count the satellite's local days.
    let to = to + chrono::Duration::days(1);
    let cut = to - chrono::Duration::days(YEAR - 1);
    let from = (from - chrono::Duration::days(1)).max(cut);
    let top: Top = api.get(&format!("/stats/top-species?satelliteId={sat}&from={from}&to={to}&limit=10")).await?;
    Ok(html! {
        section.card #sat-history {
            h2 { "History" }
            p {
                strong.history-total { (total) } " " (words::noun(total, "detection", "detections"))
                @if first.detected_at == last.detected_at {
                    ", at " (layout::at_in(&last.detected_at, zone)) "."
                } @else {
                    ", from " (layout::at_in(&first.detected_at, zone)) " to " (layout::at_in(&last.detected_at, zone)) "."
                }
            }
            @if !top.species.is_empty() {
                @if from == cut { p.small.muted { "Species of its last year of records:" } }
                ul.history-species {
                    @for s in &top.species {
                        li { (layout::names(&s.common_name, &s.scientific_name)) " " span.count { (s.detections) } }
                    }
                }
            }
            p { a href={ "/detections?satelliteId=" (sat) } { "See all its detections" } }
        }
    })
}
