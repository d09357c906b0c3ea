//! Exports (`/exports`): download links for the current team (detections as CSV or JSON, the
//! eBird checklist, the iNaturalist observations, the recordings bundle) for a chosen date range
//! and satellite (a range that cannot be exported keeps the form and says why), and the
//! scheduled exports (`exports_scheduled`).

use axum::{
    Router,
    extract::Query,
    response::{IntoResponse, Response},
    routing::get,
};
use chrono::NaiveDate;
use maud::{Markup, html};
use serde::Deserialize;

use super::{exports_scheduled, sat_parts::SatPage};
use crate::web::{WebState, ctx::Ctx, error::PageError, layout, words};

pub fn routes() -> Router<WebState> {
    Router::new().route("/exports", get(exports_page))
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Range {
    #[serde(default)]
    from: String,
    #[serde(default)]
    to: String,
    #[serde(default)]
    satellite_id: String,
}

async fn exports_page(ctx: Ctx, Query(r): Query<Range>) -> Response {
    match page(&ctx, &r).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

/// The chosen range, or what is wrong with it in words (shown above the kept form).
fn range(r: &Range, today: NaiveDate) -> Result<(Option<NaiveDate>, Option<NaiveDate>), String> {
    let date = |s: &str, what: &str| {
        if s.is_empty() {
            return Ok(None);
        }
        NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .map(Some)
            .map_err(|_| format!("The {what} day must be a date like 2026-05-31, not \"{s}\"."))
    };
    let (from, to) = (date(&r.from, "first")?, date(&r.to, "last")?);
    if let Some(f) = from
        && f > today
    {
        return Err(format!("The first day ({}) is in the future: there is nothing to export yet.", words::date(f)));
    }
    if let (Some(f), Some(t)) = (from, to)
        && f > t
    {
        return Err(format!(
            "The first day ({}) is after the last day ({}). Swap them, or clear one.",
            words::date(f),
            words::date(t)
        ));
    }
    Ok((from, to))
}

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

async fn page(ctx: &Ctx, r: &Range) -> Result<Markup, PageError> {
    let team = ctx.team_id()?.to_owned();
    // The ranges are days of the team's zone, as the export reads them.
    let tenant: crate::ids::TenantId = team.parse().map_err(|_| PageError::NotFound("No such team.".into()))?;
    let zone = ctx.app.store.team_zone(tenant).await.map_err(|e| PageError::Internal(e.into()))?;
    let today = crate::domain::zone::local_day(ctx.app.clock.now(), zone);
    let checked = range(r, today);
    let (from, to) = checked.clone().unwrap_or_default();
    let (sats, scheduled) =
        tokio::try_join!(ctx.api.get::<SatPage>("/satellites?limit=100"), exports_scheduled::section(ctx))?;
    let mut query = format!("tenantId={}", enc(&team));
    match (from, to) {
        (None, None) => query.push_str("&days=7"),
        _ => {
            if let Some(f) = from {
                query.push_str(&format!("&from={f}"));
            }
            if let Some(t) = to {
                query.push_str(&format!("&to={t}"));
            }
        }
    }
    if !r.satellite_id.is_empty() {
        query.push_str(&format!("&satelliteId={}", enc(&r.satellite_id)));
    }
    let range_text = match (from, to) {
        (None, None) => "the last 7 days".to_owned(),
        (Some(f), None) => format!("{f} to today"),
        (None, Some(t)) => format!("up to {t}"),
        (Some(f), Some(t)) => format!("{f} to {t}"),
    };
    let links: [(&str, &str, String); 5] = [
        (
            "Detections (CSV)",
            "every field, one row per detection; opens in a spreadsheet",
            format!("/api/export/detections?format=csv&{query}"),
        ),
        ("Detections (JSON)", "the same rows as JSON", format!("/api/export/detections?format=json&{query}")),
        (
            "eBird checklist",
            "eBird Record Format, one checklist per day",
            format!("/api/export/checklist?groupBy=day&{query}"),
        ),
        (
            "iNaturalist observations",
            "bulk-import CSV, one observation per species and day",
            format!("/api/export/observation?groupBy=day&{query}"),
        ),
        (
            "Recordings (ZIP)",
            "WAVs with metadata.csv, at most 500 recordings",
            format!("/api/export/recording?{query}"),
        ),
    ];
    let body = html! {
        section.card {
            h1 { "Exports" }
            form.filters method="get" action="/exports" {
                label { "First day" input #export-from type="date" name="from" max=(today) value=(r.from); }
                label { "Last day" input #export-to type="date" name="to" value=(r.to); }
                label { "Satellite"
                    select name="satelliteId" {
                        option value="" { "all satellites" }
                        @for s in &sats.satellites { option value=(s.id) selected[s.id == r.satellite_id] { (s.name) } }
                    }
                }
                button type="submit" { "Update links" }
            }
            @if let Err(problem) = &checked {
                p.error #range-error role="alert" { (problem) }
            } @else {
                p.muted.small { "Files for " strong { (range_text) } ". Species names are in your language." }
            }
            @if checked.is_err() {
            } @else if ctx.can_edit() {
                ul.export-links {
                    @for (title, what, href) in &links {
                        li { a.button href=(href) download { (title) } span.small.muted { (what) } }
                    }
                }
            } @else {
                p.notice { "Exports are for members and admins of the team. Ask an admin to make you a member." }
            }
        }
        (scheduled)
    };
    Ok(layout::page(ctx, "Exports", "", &["sats.css", "exports.js"], body))
}
