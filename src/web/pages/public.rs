//! A team's public page (`/public/<team id>`), for friends without an account: today's species
//! hour by hour, the newest detections (refreshed every 30 s), the station map and one page per
//! species. Off until a team admin turns it on in Team settings; the use case
//! ([`crate::usecases::public_page`]) decides what strangers may see, and every request counts
//! against the client's per-minute limit.

use axum::{
    Router,
    extract::{FromRequestParts, Path, State},
    http::{StatusCode, header, request::Parts},
    response::{IntoResponse, Response},
    routing::get,
};
use maud::{Markup, html};
use serde_json::json;

use super::{common, map_tiles, stats_map, stats_parts::chart};
use crate::{
    auth::ClientIp,
    usecases::public_page::{self, Heard, PublicError, SpeciesView, Team, Today},
    web::{WebState, error::problem, icons, layout, words},
};

/// How often the newest detections refresh on an open page.
const REFRESH: &str = "every 30s";

pub fn routes() -> Router<WebState> {
    Router::new()
        .route("/public/{team}", get(today_page))
        .route("/public/{team}/recent", get(recent_fragment))
        .route("/public/{team}/species/{code}", get(species_page))
}

/// The team's page after the client's request is counted.
async fn admit(state: &WebState, mut parts: Parts, team: &str) -> Result<Team, PublicError> {
    let Ok(ip) = ClientIp::from_request_parts(&mut parts, &state.app).await;
    public_page::visit(state.app.public_ctx(), &ip.0, team).await
}

fn refused(e: PublicError) -> Response {
    match e {
        PublicError::NotFound => problem(
            StatusCode::NOT_FOUND,
            "No public page here",
            "This team has not made a public page, or the link is not complete. Ask whoever sent it.",
        ),
        PublicError::SpeciesNotFound(_) => problem(
            StatusCode::NOT_FOUND,
            "Not heard here",
            "This station has not heard that species. Its page lists the ones it has.",
        ),
        PublicError::RateLimited => {
            let mut r = problem(
                StatusCode::TOO_MANY_REQUESTS,
                "Slow down a little",
                "This page was asked for very often from your address. Try again in a minute.",
            );
            r.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("60"));
            r
        }
        other => {
            tracing::error!(error = %other, "a public page failed");
            problem(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Something went wrong",
                "The station could not show this page just now. Try again later.",
            )
        }
    }
}

async fn today_page(State(state): State<WebState>, Path(team): Path<String>, parts: Parts) -> Response {
    let result = async {
        let team = admit(&state, parts, &team).await?;
        let view = public_page::today(state.app.public_ctx(), &team).await?;
        Ok::<_, PublicError>(today_html(&team, &view, map_tiles::Tiles::of(&state.app.settings.http)))
    }
    .await;
    result.map_or_else(refused, IntoResponse::into_response)
}

async fn recent_fragment(State(state): State<WebState>, Path(team): Path<String>, parts: Parts) -> Response {
    let result = async {
        let team = admit(&state, parts, &team).await?;
        let view = public_page::today(state.app.public_ctx(), &team).await?;
        Ok::<_, PublicError>(recent_card(&team, &view))
    }
    .await;
    result.map_or_else(refused, IntoResponse::into_response)
}

async fn species_page(
    State(state): State<WebState>,
    Path((team, code)): Path<(String, String)>,
    parts: Parts,
) -> Response {
    let result = async {
        let team = admit(&state, parts, &team).await?;
        let view = public_page::species(state.app.public_ctx(), &team, &code).await?;
        Ok::<_, PublicError>(species_html(&team, &view))
    }
    .await;
    result.map_or_else(refused, IntoResponse::into_response)
}

fn home(team: &Team) -> String {
    format!("/public/{}", team.id)
}

fn species_href(team: &Team, code: &str) -> String {
    format!("/public/{}/species/{code}", team.id)
}

fn today_html(team: &Team, v: &Today, tiles: Option<map_tiles::Tiles>) -> Markup {
    let online = v.stations.iter().filter(|s| s.online).count();
    // Imported history is no station that listens (issue 51, defect 13).
    let stations = v.stations.iter().filter(|s| !s.history).count();
    let lines: Vec<common::GridLine> = v
        .species
        .iter()
        .map(|s| common::GridLine {
            code: &s.species_code,
            name: s.common_name.clone(),
            scientific: &s.scientific_name,
            hourly: &s.hourly,
            total: s.detections,
        })
        .collect();
    let body = html! {
        section.public-hero {
            h1 { "Birds heard at " (v.team_name) }
            p.muted { "Today, " (layout::day(&v.date)) ". This page updates itself; nothing here needs an account." }
        }
        section.numbers.three {
            div.number { span.n { (v.species.len()) } span.l { "species today" } }
            div.number { span.n { (v.detections) } span.l { (words::noun(v.detections, "detection", "detections")) " today" } }
            div.number { span.n { (online) " of " (stations) } span.l { (words::noun(stations, "station", "stations")) " listening" } }
        }
        @if !v.species.is_empty() {
            section.card {
                h2 { "Today's species" }
                ul.species-tiles {
                    @for s in &v.species {
                        li {
                            a href=(species_href(team, &s.species_code)) {
                                (common::thumb(s.image_url.as_ref(), &s.common_name))
                                span.tile-name { strong { (s.common_name) } em.sci { (s.scientific_name) } }
                                span.tile-n { (s.detections) }
                            }
                        }
                    }
                }
            }
        }
        section.card {
            h2 { "Today, hour by hour" }
            @if lines.is_empty() {
                (layout::empty("Nothing heard yet today", html! { "The grid fills in hour by hour as birds are heard." }))
            } @else {
                // Stations' zones are not public: the line says whose hours without naming them.
                p.muted.small.local-hours { (super::stats::EACH_OWN_HOURS) }
                (common::hour_grid(&lines, v.species.iter().flat_map(|s| s.hourly.iter().copied()).max().unwrap_or(0), |c| species_href(team, c), None::<fn(&str) -> String>))
            }
        }
        (recent_card(team, v))
        (stations_card(v, tiles))
    };
    layout::public(&format!("Birds at {}", v.team_name), &v.team_name, &home(team), &["stats.css", "public.css"], body)
}

/// The newest detections; htmx swaps in a fresh copy every 30 seconds.
fn recent_card(team: &Team, v: &Today) -> Markup {
    html! {
        section.card #recent hx-get=(format!("/public/{}/recent", team.id)) hx-trigger=(REFRESH) hx-swap="outerHTML" {
            div.card-head {
                h2 { "Recently heard" }
                span.muted.small { "Updated " (layout::ago(&v.updated_at)) }
            }
            @if v.recent.is_empty() {
                (layout::empty("Nothing heard yet", html! { "Detections appear here as the stations hear birds." }))
            } @else {
                div.feed { @for d in &v.recent { (heard_card(team, d, v.species.iter().find(|s| s.species_code == d.species_code).and_then(|s| s.image_url.as_ref()))) } }
            }
            @if !team.audio { p.muted.small { "This station keeps its recordings private." } }
        }
    }
}

fn heard_card(team: &Team, d: &Heard, image: Option<&String>) -> Markup {
    html! {
        article.det-card {
            (common::thumb(image, &d.common_name))
            div.det-main {
                a.det-title href=(species_href(team, &d.species_code)) { (layout::names(&d.common_name, &d.scientific_name)) }
                div.det-meta {
                    (layout::confidence(d.confidence, false))
                    span.sat { (d.station) }
                    (layout::ago(&d.detected_at))
                }
            }
            @if let Some(url) = &d.audio_url {
                button.play type="button" data-audio=(url) data-start=(d.start_ms) aria-label=(format!("Play {}", d.common_name)) { (icons::play()) }
            }
        }
    }
}

fn stations_card(v: &Today, tiles: Option<map_tiles::Tiles>) -> Markup {
    let pins: Vec<stats_map::Pin> = v
        .stations
        .iter()
        .filter_map(|s| {
            Some(stats_map::Pin {
                name: &s.name,
                lat: s.latitude?,
                lon: s.longitude?,
                detections: s.detections_today,
                species: s.species_today,
            })
        })
        .collect();
    let decimals = if v.exact_locations { 4 } else { public_page::ROUGH_DECIMALS as usize };
    html! {
        section.card {
            h2 { "Stations" }
            @if v.stations.is_empty() {
                (layout::empty("No stations yet", html! { "The team has not set up a recording station." }))
            } @else {
                @if !pins.is_empty() { (stats_map::draw(&pins, decimals, tiles, if v.exact_locations { 16 } else { 13 })) }
                @if !v.exact_locations && !pins.is_empty() { p.muted.small { "Positions are rounded to about a kilometre." } }
                ul.sat-list {
                    @for s in &v.stations {
                        li {
                            span.dot.(if s.online { "on" } else { "off" }) {}
                            strong { (s.name) }
                            span.muted.small {
                                (if s.history { "imported history" } else if s.online { "listening" } else { "offline" }) ", "
                                (s.species_today) " species and " (words::count(s.detections_today, "detection", "detections")) " today"
                            }
                        }
                    }
                }
            }
        }
    }
}

fn species_html(team: &Team, v: &SpeciesView) -> Markup {
    let trend = json!({
        "type": "bar",
        "time": true,
        "x": v.daily.iter().map(|d| &d.0).collect::<Vec<_>>(),
        "series": [{ "label": "Detections", "values": v.daily.iter().map(|d| d.1).collect::<Vec<_>>() }],
    });
    let hourly = json!({
        "type": "bar",
        "x": (0..24).collect::<Vec<i64>>(),
        "xFormat": "hour",
        "series": [{ "label": "Detections", "values": v.hourly }],
    });
    let most = v.stations.iter().map(|s| s.1).max().unwrap_or(0).max(1);
    let body = html! {
        p { a href=(home(team)) { "← All of today's birds at " (v.team_name) } }
        div.species-hero {
            @if let Some(img) = &v.image {
                figure.species-photo {
                    img src=(img.url) alt=(v.common_name) width="320" height="240";
                    figcaption.small.muted {
                        @if !img.attribution.is_empty() { "© " (img.attribution) }
                        @if !img.license.is_empty() { " · " (img.license) }
                    }
                }
            } @else {
                div.species-photo.none aria-hidden="true" { (common::thumb(None, &v.common_name)) }
            }
            div.species-about {
                h1 { (layout::names(&v.common_name, &v.scientific_name)) }
                div.numbers.species-numbers {
                    div.number { span.n { (v.detections) } span.l { (words::noun(v.detections, "detection", "detections")) " in 30 days" } }
                    div.number {
                        span.n.small-n { @if let Some(f) = &v.first_detected_at { (layout::day(f.get(..10).unwrap_or(f))) } @else { "–" } }
                        span.l { "first heard here" }
                    }
                    div.number {
                        span.n.small-n { @if let Some(l) = &v.last_detected_at { (layout::ago(l)) } @else { "–" } }
                        span.l { "last heard" }
                    }
                }
            }
        }
        div.chart-grid {
            section.card {
                h2 { "Detections per day" }
                @if v.detections == 0 { (layout::empty("Not heard in the last 30 days", html! { "It was heard here before that." })) }
                @else { (chart("public-trend", &format!("Detections per day over 30 days: {} in all", v.detections), trend)) }
            }
            section.card {
                h2 { "Time of day" }
                @if v.detections == 0 { (layout::empty("Not heard in the last 30 days", html! { "It was heard here before that." })) }
                @else { (chart("public-hourly", "Detections per hour of the day over 30 days", hourly)) }
            }
            @if v.stations.len() > 1 {
                section.card {
                    h2 { "Per station" }
                    ul.bars {
                        @for (name, n) in &v.stations {
                            li {
                                span.bar-name { (name) }
                                span.bar-track aria-hidden="true" { span style=(format!("width:{:.1}%", *n as f64 * 100.0 / most as f64)) {} }
                                span.bar-n { (n) }
                            }
                        }
                    }
                }
            }
        }
        section.card {
            h2 { "Recently heard" }
            @if v.recent.is_empty() { (layout::empty("No recent detections", html! { "None that anyone may see." })) }
            @else { div.feed { @for d in &v.recent { (heard_card(team, d, v.image.as_ref().map(|i| &i.url))) } } }
        }
    };
    layout::public(
        &format!("{} at {}", v.common_name, v.team_name),
        &v.team_name,
        &home(team),
        &["vendor/uPlot.min.css", "stats.css", "public.css", "vendor/uPlot.min.js", "charts.js"],
        body,
    )
}
