//! Exports (`/exports`): download links for the current team (detections as CSV or JSON, the
//! eBird checklist, the iNaturalist observations, the recordings bundle) for a chosen date range
//! and satellite, and the scheduled exports (list for everyone; create and delete for Admin+,
//! sent by `exports.js` through `/api`).

use axum::{
    Router,
    extract::Query,
    response::{IntoResponse, Response},
    routing::get,
};
use chrono::NaiveDate;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use super::{alerts::Channels, sat_parts::SatPage};
use crate::web::{WebState, ctx::Ctx, error::PageError, layout};

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

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Scheduled {
    id: String,
    name: String,
    format: String,
    filters: Value,
    cron: String,
    timezone: String,
    channel_id: Option<String>,
    enabled: bool,
    next_runs: Vec<String>,
    last_run_at: Option<String>,
    last_status: Option<String>,
    last_error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ScheduledList {
    scheduled_exports: Vec<Scheduled>,
}

async fn exports_page(ctx: Ctx, Query(r): Query<Range>) -> Response {
    match page(&ctx, &r).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

fn date(s: &str, what: &str) -> Result<Option<NaiveDate>, PageError> {
    if s.is_empty() {
        return Ok(None);
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .map(Some)
        .map_err(|_| PageError::Invalid(format!("The {what} date must look like 2026-05-31, not {s:?}.")))
}

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

async fn page(ctx: &Ctx, r: &Range) -> Result<Markup, PageError> {
    let team = ctx.team_id()?.to_owned();
    let (from, to) = (date(&r.from, "first")?, date(&r.to, "last")?);
    if let (Some(f), Some(t)) = (from, to)
        && f > t
    {
        return Err(PageError::Invalid("The first date is after the last one.".into()));
    }
    let (sats, scheduled, channels) = tokio::try_join!(
        ctx.api.get::<SatPage>("/satellites?limit=100"),
        ctx.api.get::<ScheduledList>("/exports/scheduled"),
        ctx.api.get::<Channels>("/alert-rules/channels"),
    )?;
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
    let mail_or_hook: Vec<_> = channels.channels.iter().filter(|c| c.kind == "email" || c.kind == "webhook").collect();
    let channel_name = |id: &Option<String>| {
        id.as_ref()
            .and_then(|id| channels.channels.iter().find(|c| &c.id == id))
            .map(|c| c.name.clone())
            .unwrap_or_else(|| "no channel (deleted)".into())
    };
    let body = html! {
        section.card {
            h1 { "Exports" }
            form.filters method="get" action="/exports" {
                label { "First day" input type="date" name="from" value=(r.from); }
                label { "Last day" input type="date" name="to" value=(r.to); }
                label { "Satellite"
                    select name="satelliteId" {
                        option value="" { "all satellites" }
                        @for s in &sats.satellites { option value=(s.id) selected[s.id == r.satellite_id] { (s.name) } }
                    }
                }
                button type="submit" { "Update links" }
            }
            p.muted.small { "Files for " strong { (range_text) } ". Species names are in your language." }
            @if ctx.can_edit() {
                ul.export-links {
                    @for (title, what, href) in &links {
                        li { a.button href=(href) download { (title) } span.small.muted { (what) } }
                    }
                }
            } @else {
                p.notice { "Exports are for members and admins of the team. Ask an admin to make you a member." }
            }
        }
        section.card #scheduled {
            h2 { "Scheduled exports" }
            p.small.muted { "Sent by email or webhook on a schedule (cron, five fields)." }
            @if scheduled.scheduled_exports.is_empty() {
                (layout::empty("No scheduled exports", html! {
                    @if ctx.is_admin() { "Add one below, e.g. every Monday at 07:00 for the last 7 days." } @else { "A team admin can add one." }
                }))
            } @else {
                div.table-scroll {
                    table.list {
                        thead { tr { th scope="col" { "Name" } th scope="col" { "Format" } th scope="col" { "When" } th scope="col" { "To" } th scope="col" { "Next run" } th scope="col" { "Last run" } @if ctx.is_admin() { th scope="col" { span.sr { "Actions" } } } } }
                        tbody {
                            @for s in &scheduled.scheduled_exports {
                                tr #(format!("sched-{}", s.id)) {
                                    th scope="row" { (s.name) @if !s.enabled { " " span.badge.no { "off" } } }
                                    td { (s.format) @if let Some(d) = s.filters.get("days") { br; span.small.muted { "last " (d) " days" } } }
                                    td { code { (s.cron) } br; span.small.muted { (s.timezone) } }
                                    td { (channel_name(&s.channel_id)) }
                                    td.small { (s.next_runs.first().map(|t| t.replace('T', " ")).unwrap_or_else(|| "–".into())) }
                                    td.small {
                                        @match &s.last_run_at { Some(t) => { (layout::ago(t)) " " (s.last_status.as_deref().unwrap_or("")) }, None => span.muted { "not yet" } }
                                        @if let Some(e) = &s.last_error { br; span.error.small { (e) } }
                                    }
                                    @if ctx.is_admin() { td { button.danger type="button" data-delete-sched=(s.id) data-name=(s.name) { "Delete" } } }
                                }
                            }
                        }
                    }
                }
            }
            @if ctx.is_admin() {
                details.add {
                    summary { "Add a scheduled export" }
                    form.stack #sched-form novalidate {
                        div.filters {
                            label { "Name" input #sched-name required maxlength="100" placeholder="Weekly list"; }
                            label { "Format"
                                select #sched-format {
                                    option value="csv" { "Detections CSV" }
                                    option value="json" { "Detections JSON" }
                                    option value="checklist" { "eBird checklist" }
                                    option value="observation" { "iNaturalist CSV" }
                                }
                            }
                            label { "Days covered" input #sched-days type="number" min="1" max="366" value="7"; }
                            label { "Cron (min hour day month weekday)" input #sched-cron value="0 7 * * 1" spellcheck="false"; }
                            label { "Time zone" input #sched-tz value="UTC" spellcheck="false"; }
                            label { "Send to"
                                select #sched-channel {
                                    @for c in &mail_or_hook { option value=(c.id) { (c.name) " (" (c.kind) ")" } }
                                }
                            }
                        }
                        @if mail_or_hook.is_empty() {
                            p.notice.small { "Add an email or webhook channel on the " a href="/alerts#channels" { "Alerts page" } " first." }
                        }
                        div.error #sched-error role="alert" hidden {}
                        div.row { button.primary type="submit" disabled[mail_or_hook.is_empty()] { "Add scheduled export" } }
                    }
                }
            }
        }
    };
    Ok(layout::page(ctx, "Exports", "", &["sats.css", "exports.js"], body))
}
