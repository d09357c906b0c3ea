//! Alerts (`/alerts`): the raised alerts with Acknowledge (anyone in the team) and a link to the
//! detection or satellite behind each, the channels that carry them and the rules that raise them
//! (both in `alert_forms`, Admin+ to change). `alerts.js` sends the changes through `/api` and
//! follows the team's WebSocket: an alert raised while the page is open appears without a
//! reload, through the list fragment (`/alerts/list`) it also refreshes after an acknowledgement.
//! An alert's texts are shown on the viewer's 12/24-hour clock (`time::hours`); what was sent out
//! (mail, chat, webhooks) keeps the 24-hour form it was written in.

use axum::{
    Router,
    extract::Query,
    response::{IntoResponse, Response},
    routing::get,
};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use super::{alert_forms, stats::satellites};
use crate::{
    time::hours::text_as,
    web::{WebState, ctx::Ctx, error::PageError, layout},
};

pub fn routes() -> Router<WebState> {
    Router::new().route("/alerts", get(alerts_page)).route("/alerts/list", get(list_fragment))
}

#[derive(Debug, Deserialize)]
struct Show {
    #[serde(default)]
    show: String,
}

#[derive(Debug, Deserialize)]
struct Alert {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    title: String,
    message: String,
    #[serde(default)]
    data: Value,
    acknowledged: bool,
    acknowledged_at: Option<String>,
    created_at: String,
}

#[derive(Debug, Deserialize)]
struct AlertPage {
    alerts: Vec<Alert>,
    total: i64,
}

/// `open` (default), `acknowledged` or `all`; anything else is refused by the API.
fn ack_query(show: &str) -> &str {
    match show {
        "" | "open" => "&acknowledged=false",
        "acknowledged" => "&acknowledged=true",
        "all" => "",
        _ => "&acknowledged=unknown",
    }
}

/// The kind of an alert in words.
fn kind_label(kind: &str) -> &str {
    match kind {
        "rare_species" => "Rare",
        "first_of_day" => "First today",
        "first_of_season" => "First of the season",
        "first_for_team" => "New for the team",
        "detection" => "Detection",
        "absence" => "Silence",
        "trend" => "Trend",
        "satellite_offline" => "Satellite offline",
        "satellite_clock" => "Wrong satellite clock",
        "test" => "Test",
        _ => "Alert",
    }
}

/// Where an alert leads: its detection, else its satellite.
fn alert_link(a: &Alert) -> Option<(String, &'static str)> {
    let id = |k: &str| a.data.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
    if let Some(d) = id("detectionId") {
        return Some((format!("/detections/{d}"), "Open the detection"));
    }
    id("satelliteId").map(|s| (format!("/satellites/{s}"), "Open the satellite"))
}

async fn alerts_page(ctx: Ctx, Query(s): Query<Show>) -> Response {
    match page(&ctx, &s.show).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

async fn list_fragment(ctx: Ctx, Query(s): Query<Show>) -> Response {
    match alert_list(&ctx, &s.show).await {
        Ok(m) => m.into_response(),
        Err(e) => e.respond(&ctx.uri),
    }
}

async fn alert_list(ctx: &Ctx, show: &str) -> Result<Markup, PageError> {
    let list: AlertPage = ctx.api.get(&format!("/alerts?limit=100{}", ack_query(show))).await?;
    let show = if show.is_empty() { "open" } else { show };
    Ok(html! {
        div #alert-list data-show=(show) {
            @if list.alerts.is_empty() {
                @if show == "open" {
                    (layout::empty("No open alerts", html! { "All quiet. Alerts appear here when a rule fires or a satellite goes offline." }))
                } @else {
                    (layout::empty("No alerts here", html! { "Nothing matches this view yet." }))
                }
            }
            ul.alerts {
                @for a in &list.alerts {
                    li.alert-item.(if a.acknowledged { "acked" } else { "open" }) #(format!("alert-{}", a.id)) {
                        div.alert-main {
                            div { strong { (text_as(&a.title, ctx.hours())) } " " span.badge { (kind_label(&a.kind)) } }
                            div.small { (text_as(&a.message, ctx.hours())) }
                            div.small.muted { "raised " (layout::ago(&a.created_at))
                                @if let Some(at) = &a.acknowledged_at { " · acknowledged " (layout::ago(at)) } }
                            @if let Some((href, text)) = alert_link(a) {
                                div.small { a.alert-link href=(href) { (text) } }
                            }
                        }
                        @if !a.acknowledged {
                            button type="button" data-ack=(a.id) aria-label=(format!("Acknowledge {}", a.title)) { "Acknowledge" }
                        }
                    }
                }
            }
            @if list.total as usize > list.alerts.len() {
                p.small.muted { "Showing the newest " (list.alerts.len()) " of " (list.total) "." }
            }
        }
    })
}

async fn page(ctx: &Ctx, show: &str) -> Result<Markup, PageError> {
    ctx.team_id()?;
    let (list, channels, rules, sats) = tokio::try_join!(
        alert_list(ctx, show),
        ctx.api.get::<alert_forms::Channels>("/alert-rules/channels"),
        ctx.api.get::<alert_forms::Rules>("/alert-rules/rules"),
        satellites(ctx),
    )?;
    let current = if show.is_empty() { "open" } else { show };
    let body = html! {
        section.card {
            div.card-head {
                h1 { "Alerts" span.live-dot #alerts-live title="live: connecting" {} }
                nav.seg aria-label="Which alerts" {
                    @for (key, label) in [("open", "Open"), ("acknowledged", "Acknowledged"), ("all", "All")] {
                        a href=(format!("/alerts?show={key}")) aria-current=[(key == current).then_some("page")] { (label) }
                    }
                }
            }
            (list)
        }
        (alert_forms::channels_card(ctx, &channels.channels))
        (alert_forms::rules_card(ctx, &rules.rules, &channels.channels, &sats))
    };
    let assets = ["sats.css", "settings.css", "alerts.css", "detection_settings.js", "alerts.js"];
    Ok(layout::page(ctx, "Alerts", "alerts", &assets, body))
}
