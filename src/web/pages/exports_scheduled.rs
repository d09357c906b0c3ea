//! The scheduled exports on `/exports`: the list for everyone; add, edit, run now and delete for
//! Admin+, sent by `exports.js` through `/api/exports/scheduled`.

use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Value, json};

use super::alert_forms::{Channel, Channels};
use crate::web::{ctx::Ctx, error::PageError, layout, words};

/// The longest range a schedule may cover, as the export checks it (`usecases::exports::MAX_DAYS`).
const MAX_DAYS: i64 = crate::usecases::exports::MAX_DAYS;

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

const FORMATS: [(&str, &str); 4] = [
    ("csv", "Detections CSV"),
    ("json", "Detections JSON"),
    ("checklist", "eBird checklist"),
    ("observation", "iNaturalist CSV"),
];

fn format_words(f: &str) -> &str {
    FORMATS.iter().find(|(k, _)| *k == f).map_or(f, |(_, w)| w)
}

fn status_words(s: &str) -> &str {
    match s {
        "sending" => "sending",
        "failed" => "failed",
        other => other,
    }
}

/// The section: the table and, for Admin+, the form that adds or edits one.
pub async fn section(ctx: &Ctx) -> Result<Markup, PageError> {
    let (list, channels) = tokio::try_join!(
        ctx.api.get::<ScheduledList>("/exports/scheduled"),
        ctx.api.get::<Channels>("/alert-rules/channels"),
    )?;
    let targets: Vec<&Channel> =
        channels.channels.iter().filter(|c| c.kind == "email" || c.kind == "webhook").collect();
    let channel_name = |id: &Option<String>| {
        id.as_ref()
            .and_then(|id| channels.channels.iter().find(|c| &c.id == id))
            .map(|c| c.name.clone())
            .unwrap_or_else(|| "no channel (deleted)".into())
    };
    let admin = ctx.is_admin();
    Ok(html! {
        section.card #scheduled {
            h2 { "Scheduled exports" }
            p.small.muted { "Sent by email or webhook on a schedule (cron, five fields)." }
            @if list.scheduled_exports.is_empty() {
                (layout::empty("No scheduled exports", html! {
                    @if admin { "Add one below, e.g. every Monday at 07:00 for the last 7 days." } @else { "A team admin can add one." }
                }))
            } @else {
                div.table-scroll {
                    table.list.sched {
                        thead { tr {
                            th scope="col" { "Name" } th scope="col" { "Format" } th scope="col" { "When" }
                            th scope="col" { "To" } th scope="col" { "Next run" } th scope="col" { "Last run" }
                            @if admin { th scope="col" { span.sr { "Actions" } } }
                        } }
                        tbody {
                            @for s in &list.scheduled_exports {
                                (row(s, &channel_name(&s.channel_id), admin))
                            }
                        }
                    }
                }
            }
            @if admin { (form(&targets)) }
        }
    })
}

fn row(s: &Scheduled, channel: &str, admin: bool) -> Markup {
    let days = s.filters.get("days").and_then(Value::as_i64);
    // What the edit form is filled with.
    let edit = json!({
        "id": s.id, "name": s.name, "format": s.format, "days": days.unwrap_or(7), "cron": s.cron,
        "timezone": s.timezone, "channelId": s.channel_id, "enabled": s.enabled,
    });
    html! {
        tr #(format!("sched-{}", s.id)) {
            th scope="row" { (s.name) @if !s.enabled { " " span.badge.no { "paused" } } }
            td data-label="Format" { (format_words(&s.format)) @if let Some(d) = days { br; span.small.muted { "last " (words::count(d, "day", "days")) } } }
            td data-label="When" { code { (s.cron) } br; span.small.muted { (s.timezone) } }
            td data-label="To" { (channel) }
            td.small.next-run data-label="Next run" {
                @match s.next_runs.first() { Some(t) => (layout::at(t)), None => span.muted { "paused" } }
            }
            td.small data-label="Last run" {
                @match &s.last_run_at {
                    Some(t) => { (layout::ago(t)) ", " (status_words(s.last_status.as_deref().unwrap_or(""))) }
                    None => span.muted { "not yet" }
                }
                @if let Some(e) = &s.last_error { br; span.error.small { (e) } }
            }
            @if admin {
                td.row-actions {
                    button type="button" data-run-sched=(s.id) data-name=(s.name) { "Run now" }
                    button type="button" data-edit-sched=(edit.to_string()) { "Edit" }
                    button.danger type="button" data-delete-sched=(s.id) data-name=(s.name) { "Delete" }
                }
            }
        }
    }
}

fn form(targets: &[&Channel]) -> Markup {
    html! {
        details.add #sched-details {
            summary #sched-title { "Add a scheduled export" }
            form.stack #sched-form novalidate {
                div.filters {
                    label { "Name" input #sched-name required maxlength="100" placeholder="Weekly list"; }
                    label { "Format"
                        select #sched-format { @for (k, w) in FORMATS { option value=(k) { (w) } } }
                    }
                    label { "Days covered" input #sched-days type="number" min="1" max=(MAX_DAYS) step="1" value="7"; }
                    label { "Cron (min hour day month weekday)" input #sched-cron value="0 7 * * 1" spellcheck="false"; }
                    label { "Time zone" input #sched-tz value="" placeholder="the team's zone" spellcheck="false"; }
                    label { "Send to"
                        select #sched-channel {
                            @for c in targets { option value=(c.id) { (c.name) " (" (c.kind) ")" } }
                        }
                    }
                    label.check { input #sched-enabled type="checkbox" checked; " Enabled" }
                }
                @if targets.is_empty() {
                    p.notice.small { "Add an email or webhook channel on the " a href="/alerts#channels" { "Alerts page" } " first." }
                }
                div.error #sched-error role="alert" hidden {}
                div.row {
                    button.primary #sched-submit type="submit" disabled[targets.is_empty()] { "Add scheduled export" }
                    button #sched-cancel type="button" hidden { "Cancel" }
                }
            }
        }
    }
}
