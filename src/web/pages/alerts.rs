//! Alerts (`/alerts`): the raised alerts with Acknowledge (anyone in the team), the channels that
//! carry them (list, create, delete, "Send test" with the receiver's answer) and the rules that
//! raise them (list, create, edit, delete; Admin+). `alerts.js` sends the changes through `/api`;
//! the alert list is a fragment (`/alerts/list`) it refreshes after an acknowledgement.

use std::collections::HashMap;

use axum::{
    Router,
    extract::Query,
    response::{IntoResponse, Response},
    routing::get,
};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use crate::web::{WebState, ctx::Ctx, error::PageError, layout};

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
    acknowledged: bool,
    acknowledged_at: Option<String>,
    created_at: String,
}

#[derive(Debug, Deserialize)]
struct AlertPage {
    alerts: Vec<Alert>,
    total: i64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Channel {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    pub config: Value,
    pub enabled: bool,
    #[serde(default)]
    pub deliveries: Value,
}

#[derive(Debug, Deserialize)]
pub(super) struct Channels {
    pub channels: Vec<Channel>,
}

#[derive(Debug, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: String,
    name: String,
    trigger: String,
    system_key: Option<String>,
    conditions: Value,
    channel_ids: Vec<String>,
    cooldown_minutes: i64,
    enabled: bool,
    last_fired_at: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Rules {
    rules: Vec<Rule>,
}

/// The channel types the API takes, with a person's label.
const CHANNEL_TYPES: [(&str, &str); 6] = [
    ("webhook", "Webhook (JSON POST)"),
    ("email", "Email"),
    ("chat_block", "Slack-style webhook"),
    ("chat_embed", "Discord-style webhook"),
    ("chat_card", "Teams workflow webhook"),
    ("chat_bot", "Telegram bot"),
];

fn type_label(kind: &str) -> &str {
    CHANNEL_TYPES.iter().find(|(k, _)| *k == kind).map(|(_, l)| *l).unwrap_or(kind)
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
                            div { strong { (a.title) } " " span.badge { (a.kind.replace('_', " ")) } }
                            div.small { (a.message) }
                            div.small.muted { "raised " (layout::ago(&a.created_at))
                                @if let Some(at) = &a.acknowledged_at { " · acknowledged " (layout::ago(at)) } }
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
    let (list, channels, rules) = tokio::try_join!(
        alert_list(ctx, show),
        ctx.api.get::<Channels>("/alert-rules/channels"),
        ctx.api.get::<Rules>("/alert-rules/rules"),
    )?;
    let names: HashMap<&str, &str> = channels.channels.iter().map(|c| (c.id.as_str(), c.name.as_str())).collect();
    let current = if show.is_empty() { "open" } else { show };
    let body = html! {
        section.card {
            div.card-head {
                h1 { "Alerts" }
                nav.seg aria-label="Which alerts" {
                    @for (key, label) in [("open", "Open"), ("acknowledged", "Acknowledged"), ("all", "All")] {
                        a href=(format!("/alerts?show={key}")) aria-current=[(key == current).then_some("page")] { (label) }
                    }
                }
            }
            (list)
        }
        (channels_card(ctx, &channels.channels))
        (rules_card(ctx, &rules.rules, &channels.channels, &names))
    };
    Ok(layout::page(ctx, "Alerts", "alerts", &["sats.css", "alerts.js"], body))
}

fn channel_target(c: &Channel) -> String {
    let cfg = &c.config;
    let s = |k: &str| cfg.get(k).and_then(Value::as_str).map(str::to_owned);
    match c.kind.as_str() {
        "email" => match cfg.get("to") {
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "),
            Some(Value::String(t)) => t.clone(),
            _ => String::new(),
        },
        "webhook" => s("url").unwrap_or_default(),
        "chat_bot" => s("chatId").or_else(|| cfg.get("chatId").map(Value::to_string)).unwrap_or_default(),
        _ => s("origin").unwrap_or_default(),
    }
}

fn channels_card(ctx: &Ctx, channels: &[Channel]) -> Markup {
    let count = |c: &Channel, k: &str| c.deliveries.get(k).and_then(Value::as_u64).unwrap_or(0);
    html! {
        section.card #channels {
            h2 { "Channels" }
            p.small.muted { "Where alerts are sent. A rule names the channels it uses." }
            @if channels.is_empty() {
                (layout::empty("No channels yet", html! {
                    @if ctx.is_admin() { "Add one below (a webhook, an email address or a chat service), then press “Send test”." }
                    @else { "A team admin can add one." }
                }))
            }
            ul.channels {
                @for c in channels {
                    li.channel #(format!("channel-{}", c.id)) {
                        div.channel-main {
                            div { strong { (c.name) } " " span.badge { (type_label(&c.kind)) } @if !c.enabled { " " span.badge.no { "disabled" } } }
                            div.small.mono.wrap { (channel_target(c)) }
                            div.small.muted { (count(c, "delivered")) " delivered · " (count(c, "failed")) " failed · " (count(c, "pending")) " pending" }
                            div.test-result.small role="status" aria-live="polite" {}
                        }
                        @if ctx.is_admin() {
                            div.row {
                                button type="button" data-test=(c.id) { "Send test" }
                                button.danger type="button" data-delete-channel=(c.id) data-name=(c.name) { "Delete" }
                            }
                        }
                    }
                }
            }
            @if ctx.is_admin() {
                details.add #channel-add {
                    summary { "Add a channel" }
                    form.stack #channel-form novalidate {
                        div.filters {
                            label { "Type"
                                select #ch-type name="type" {
                                    @for (k, l) in CHANNEL_TYPES { option value=(k) { (l) } }
                                }
                            }
                            label { "Name" input #ch-name name="name" required maxlength="100" placeholder="Home Assistant"; }
                        }
                        div.filters {
                            label data-for="webhook chat_block chat_embed chat_card" { "URL" input #ch-url type="url" placeholder="http://192.168.1.20:8123/api/webhook/birds"; }
                            label data-for="webhook" { "Signing secret (optional)" input #ch-secret type="password" autocomplete="new-password"; }
                            label data-for="email" hidden { "Email addresses (comma separated)" input #ch-to type="text"; }
                            label data-for="chat_bot" hidden { "Bot token" input #ch-token type="password" autocomplete="off"; }
                            label data-for="chat_bot" hidden { "Chat id" input #ch-chat type="text" placeholder="-100123456 or @channel"; }
                        }
                        div.error #channel-error role="alert" hidden {}
                        div.row { button.primary type="submit" { "Add channel" } }
                    }
                }
            }
        }
    }
}

fn rules_card(ctx: &Ctx, rules: &[Rule], channels: &[Channel], names: &HashMap<&str, &str>) -> Markup {
    let rules_json = serde_json::to_value(rules).unwrap_or(Value::Null);
    html! {
        section.card #rules {
            h2 { "Rules" }
            p.small.muted { "A rule watches detections (a species, a rare bird), silences (no audio for a while) or trends, and sends to its channels." }
            div.table-scroll {
                table.list {
                    thead { tr { th scope="col" { "Rule" } th scope="col" { "When" } th scope="col" { "Channels" } th scope="col" { "Cooldown" } th scope="col" { "Last fired" } @if ctx.is_admin() { th scope="col" { span.sr { "Actions" } } } } }
                    tbody {
                        @for r in rules {
                            tr #(format!("rule-{}", r.id)) {
                                th scope="row" { (r.name) @if !r.enabled { " " span.badge.no { "off" } } @if r.system_key.is_some() { " " span.badge { "system" } } }
                                td { (r.trigger) @if !r.conditions.is_null() && r.conditions != Value::Object(Default::default()) { br; code.small.wrap { (r.conditions.to_string()) } } }
                                td { @if r.channel_ids.is_empty() { span.muted { "none" } } @else {
                                    (r.channel_ids.iter().map(|id| names.get(id.as_str()).copied().unwrap_or("deleted channel")).collect::<Vec<_>>().join(", "))
                                } }
                                td.num { (r.cooldown_minutes) " min" }
                                td { @match &r.last_fired_at { Some(t) => (layout::ago(t)), None => span.muted { "never" } } }
                                @if ctx.is_admin() {
                                    td { div.row.nowrap {
                                        button type="button" data-edit-rule=(r.id) { "Edit" }
                                        @if r.system_key.is_none() { button.danger type="button" data-delete-rule=(r.id) data-name=(r.name) { "Delete" } }
                                    } }
                                }
                            }
                        }
                    }
                }
            }
            @if ctx.is_admin() {
                (layout::json_script("rules-data", &rules_json))
                details.add #rule-add {
                    summary #rule-summary { "Add a rule" }
                    form.stack #rule-form novalidate data-id="" {
                        div.filters {
                            label { "Name" input #rule-name required maxlength="100" placeholder="Nightingale heard"; }
                            label { "Trigger"
                                select #rule-trigger {
                                    option value="detection" { "detection" }
                                    option value="absence" { "absence (silence)" }
                                    option value="trend" { "trend" }
                                }
                            }
                            label { "Cooldown (minutes)" input #rule-cooldown type="number" min="0" step="1" value="30"; }
                            label.check { input #rule-enabled type="checkbox" checked; "Enabled" }
                        }
                        label { "Conditions (JSON)"
                            textarea #rule-conditions rows="3" spellcheck="false" placeholder=r#"{"species": ["Luscinia megarhynchos"], "minConfidence": 0.8}"# {}
                        }
                        p.small.muted { "detection: species, special (rare, first_of_day, first_of_season, not_expected_here), minConfidence, satelliteIds, hours {from, to}. absence: minutes, of (detection|chunk), satelliteIds. trend: metric (detections|species), direction (rise|fall|either), percent, baselineDays." }
                        fieldset.channel-picks {
                            legend { "Send to" }
                            @if channels.is_empty() { span.small.muted { "No channels yet: add one above first." } }
                            @for c in channels { label.check { input type="checkbox" name="rule-channel" value=(c.id); (c.name) } }
                        }
                        div.error #rule-error role="alert" hidden {}
                        div.row { button.primary type="submit" #rule-submit { "Save rule" } button type="reset" #rule-reset { "Clear" } }
                    }
                }
            }
        }
    }
}
