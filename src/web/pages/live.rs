//! Live, the home page: today's numbers, the daily activity grid (species by hour) and the feed
//! of detections, which `live.js` keeps current over the WebSocket without a reload.

use axum::{
    Router,
    extract::{Path, State},
    response::{IntoResponse, Response},
    routing::get,
};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use super::{
    auth::{Anonymous, setup_page},
    common::{self, Detection, DetectionPage},
};
use crate::web::{WebState, ctx::Ctx, error::PageError, layout, words};

pub fn routes() -> Router<WebState> {
    Router::new()
        .route("/", get(home))
        .route("/live/today", get(today_fragment))
        .route("/live/grid", get(grid_fragment))
        .route("/live/satellites", get(satellites_fragment))
        .route("/live/left-out", get(left_out_fragment))
        .route("/live/card/{id}", get(card_fragment))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Counts {
    species: i64,
    detections: i64,
}

#[derive(Debug, Deserialize)]
struct Dashboard {
    today: Counts,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GridRow {
    species_code: String,
    common_name: String,
    scientific_name: String,
    hourly: Vec<i64>,
    total: i64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Grid {
    species: Vec<GridRow>,
    max_cell: i64,
}

async fn home(
    State(state): State<WebState>,
    anon: Anonymous,
    ctx: Result<Ctx, super::super::ctx::Rejection>,
) -> Response {
    if state.setup.still_needed(&state.app.store).await {
        return setup_page(&anon.csrf, ("", ""), None).into_response();
    }
    let ctx = match ctx {
        Ok(c) => c,
        Err(r) => return r.into_response(),
    };
    match live(&ctx).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

async fn live(ctx: &Ctx) -> Result<Markup, PageError> {
    ctx.team_id()?;
    let ((dash, open_alerts), grid, recent, sat_list) = tokio::try_join!(
        today_counts(ctx),
        ctx.api.get::<Grid>("/stats/daily-activity"),
        // The feed shows the newest 20; the total of all of them is not on the page.
        ctx.api.get::<DetectionPage>("/detections?limit=20&sortBy=date&sortDir=desc&withCount=false"),
        satellites(ctx),
    )?;
    let images = common::images(&ctx.api, recent.detections.iter().map(|d| d.species_code.clone())).await?;
    let body = html! {
        (today_row(&dash, open_alerts, &sat_list))
        @if sat_list.is_empty() { (first_steps()) }
        (grid_card(ctx, &grid, &sat_list))
        section.card {
            div.card-head {
                h2 { "Live" span.live-dot #live-state title="connecting" {} }
                span.muted.small #live-note { "New detections appear here as they happen." }
            }
            (left_out_card(&sat_list))
            div.feed #feed aria-live="polite" {
                @for d in &recent.detections { (common::card(ctx, d, images.get(&d.species_code))) }
            }
            @if recent.detections.is_empty() {
                div #feed-empty { (layout::empty("No detections yet", html! { "When a satellite hears a bird, it shows up here at once." })) }
            }
        }
        @if !sat_list.is_empty() { (satellites_card(&sat_list)) }
    };
    Ok(layout::page(ctx, "Live", "live", &["live.js"], body))
}

/// The daily activity grid (refreshed by `live.js` after new detections), saying whose hours it
/// counts: each satellite's local ones.
fn grid_card(ctx: &Ctx, grid: &Grid, sats: &[Value]) -> Markup {
    let zones: Vec<(&str, Option<&str>)> = sats
        .iter()
        .map(|s| {
            let text = |k: &str| s.get(k).and_then(Value::as_str);
            (text("name").unwrap_or("satellite"), text("time_zone"))
        })
        .collect();
    html! {
        section.card #grid hx-get="/live/grid" hx-trigger="refresh" hx-swap="outerHTML" {
            div.card-head {
                h2 { "Today, hour by hour" }
                a.more href="/detections" { "All detections" }
            }
            @if !grid.species.is_empty() { (super::stats::local_hours(ctx.app.clock.now(), &zones)) }
            (activity_grid(ctx, grid))
        }
    }
}

/// The satellites and their online state (refreshed every minute and after new detections).
fn satellites_card(list: &[Value]) -> Markup {
    html! {
        section.card #sats hx-get="/live/satellites" hx-trigger="refresh, every 60s" hx-swap="outerHTML" {
            h2 { "Satellites" }
            ul.sat-list {
                @for s in list {
                    @let online = s.get("is_online").and_then(Value::as_bool).unwrap_or(false);
                    @let state = if history(s) { "imported history" } else if online { "online" } else { "offline" };
                    li {
                        span.dot.(if online { "on" } else { "off" }) title=(state) {}
                        a href=(format!("/satellites/{}", s.get("id").and_then(Value::as_str).unwrap_or_default())) {
                            (s.get("name").and_then(Value::as_str).unwrap_or("satellite"))
                        }
                        span.muted.small { (state) }
                    }
                }
            }
        }
    }
}

/// The team's satellites (`GET /api/satellites`, up to 100).
async fn satellites(ctx: &Ctx) -> Result<Vec<Value>, PageError> {
    let v = ctx.api.get::<Value>("/satellites?limit=100").await?;
    Ok(v.get("satellites").and_then(Value::as_array).cloned().unwrap_or_default())
}

/// Today's counts and the number of open alerts.
async fn today_counts(ctx: &Ctx) -> Result<(Dashboard, i64), PageError> {
    let (dash, alerts) = tokio::try_join!(
        ctx.api.get::<Dashboard>("/stats/dashboard"),
        ctx.api.get::<Value>("/alerts?acknowledged=false&limit=1"),
    )?;
    Ok((dash, alerts.get("total").and_then(Value::as_i64).unwrap_or(0)))
}

/// Birds the team's satellites left out as not expected there, in the last 24 hours (refreshed
/// every minute): why a bird played from a recording made elsewhere does not appear.
fn left_out_card(list: &[Value]) -> Markup {
    let n: u64 = list.iter().filter_map(|s| s.get("not_expected_left_out_24h").and_then(Value::as_u64)).sum();
    html! {
        div #left-out-live hx-get="/live/left-out" hx-trigger="every 60s" hx-swap="outerHTML" {
            (super::sat_summary::left_out(n, "/team/detection#ds-not_expected_action"))
        }
    }
}

async fn left_out_fragment(ctx: Ctx) -> Response {
    match satellites(&ctx).await {
        Ok(list) => left_out_card(&list).into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

/// Whether a satellite is only an imported station's history (no device: never online).
fn history(s: &Value) -> bool {
    s.get("history_only").and_then(Value::as_bool).unwrap_or(false)
}

/// The row of today's numbers (refreshed by `live.js` after each new detection).
fn today_row(dash: &Dashboard, open_alerts: i64, all: &[Value]) -> Markup {
    // Imported history is not a station that listens: counted neither online nor offline.
    let list: Vec<&Value> = all.iter().filter(|s| !history(s)).collect();
    let online = list.iter().filter(|s| s.get("is_online").and_then(Value::as_bool).unwrap_or(false)).count();
    html! {
        section.numbers #today hx-get="/live/today" hx-trigger="refresh" hx-swap="outerHTML" {
            a.number href="/species" { span.n { (dash.today.species) } span.l { "species today" } }
            a.number href="/detections" { span.n { (dash.today.detections) } span.l { (words::noun(dash.today.detections, "detection", "detections")) " today" } }
            a.number href="/satellites" { span.n { (online) " of " (list.len()) } span.l { (words::noun(list.len(), "satellite", "satellites")) " online" } }
            a.number.(if open_alerts > 0 { "warn" } else { "" }) href="/alerts" {
                span.n { (open_alerts) } span.l { (words::noun(open_alerts, "open alert", "open alerts")) }
            }
        }
    }
}

fn first_steps() -> Markup {
    html! {
        section.card.welcome {
            h2 { "Add your first satellite: 3 steps" }
            ol {
                li { "Install birdhub on a Raspberry Pi with a USB microphone (or use the Android app)." }
                li { "On that Pi, run " code { "birdhub satellite register" } ". It finds this hub by itself." }
                li { "Or register it here and copy its credentials: " a href="/satellites/new" { "register a satellite" } "." }
            }
            p.small.muted {
                "Testing with a recording? Birds not expected at the satellite's place at this time of year are "
                "left out, so a warbler recorded elsewhere may not appear. Live says how many were; "
                a href="/team/detection#ds-not_expected_action" { "keep them, flagged, instead" } "."
            }
        }
    }
}

/// Species as rows, 24 hours as columns, cells shaded by count; a cell opens that hour's list.
fn activity_grid(ctx: &Ctx, grid: &Grid) -> Markup {
    if grid.species.is_empty() {
        return layout::empty(
            "Nothing heard yet today",
            html! { "The grid fills in hour by hour as birds are detected." },
        );
    }
    let lines: Vec<common::GridLine> = grid
        .species
        .iter()
        .map(|row| common::GridLine {
            code: &row.species_code,
            name: common::common_name(ctx, &row.species_code, &row.common_name),
            scientific: &row.scientific_name,
            hourly: &row.hourly,
            total: row.total,
        })
        .collect();
    common::hour_grid(
        &lines,
        grid.max_cell,
        |code| format!("/species/{code}"),
        Some(|code: &str| format!("/detections?species={code}")),
    )
}

async fn today_fragment(ctx: Ctx) -> Response {
    match tokio::try_join!(today_counts(&ctx), satellites(&ctx)) {
        Ok(((dash, open_alerts), list)) => today_row(&dash, open_alerts, &list).into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

async fn grid_fragment(ctx: Ctx) -> Response {
    match tokio::try_join!(ctx.api.get::<Grid>("/stats/daily-activity"), satellites(&ctx)) {
        Ok((g, list)) => grid_card(&ctx, &g, &list).into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

async fn satellites_fragment(ctx: Ctx) -> Response {
    match satellites(&ctx).await {
        Ok(list) => satellites_card(&list).into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

async fn card_fragment(ctx: Ctx, Path(id): Path<String>) -> Response {
    let result = async {
        let id: String = id.chars().filter(|c| c.is_ascii_hexdigit() || *c == '-').take(36).collect();
        let d: Detection = ctx.api.get(&format!("/detections/{id}")).await?;
        let images = common::images(&ctx.api, [d.species_code.clone()]).await?;
        Ok::<_, PageError>(common::card(&ctx, &d, images.get(&d.species_code)))
    }
    .await;
    match result {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}
