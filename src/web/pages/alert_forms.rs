//! The channels and rules cards of `/alerts`. Channels: list, "Send test" with what happened in
//! words, add and edit (a form that shows only the chosen type's fields), delete. Rules: a table
//! that says in words what fires each rule, and one form for add and edit with a species picker
//! (names in the viewer's language, codes stored), satellite checkboxes, special kinds,
//! confidence, hours and cooldown, whose limits are the API's. `alerts.js` drives both forms.

use std::collections::HashMap;

use maud::{Markup, html};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{
    alert_rule_words::{self, SPECIAL},
    species_pick,
    stats::Sat,
};
use crate::{
    domain::alert_rules::{DEFAULT_COOLDOWN_MINUTES, MAX_MINUTES, OFFLINE_RULE_KEY},
    web::{ctx::Ctx, layout},
};

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Channel {
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
pub struct Channels {
    pub channels: Vec<Channel>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub id: String,
    pub name: String,
    pub trigger: String,
    pub system_key: Option<String>,
    pub conditions: Value,
    pub channel_ids: Vec<String>,
    pub cooldown_minutes: i64,
    pub enabled: bool,
    pub last_fired_at: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Rules {
    pub rules: Vec<Rule>,
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
        _ => s("origin").or_else(|| s("url")).unwrap_or_default(),
    }
}

pub fn channels_card(ctx: &Ctx, channels: &[Channel]) -> Markup {
    let count = |c: &Channel, k: &str| c.deliveries.get(k).and_then(Value::as_u64).unwrap_or(0);
    let data: Vec<Value> = channels
        .iter()
        .map(|c| json!({ "id": c.id, "type": c.kind, "name": c.name, "config": c.config, "enabled": c.enabled }))
        .collect();
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
                            div { strong { (c.name) } " " span.badge { (type_label(&c.kind)) } @if !c.enabled { " " span.badge.no { "off" } } }
                            div.small.mono.wrap { (channel_target(c)) }
                            div.small.muted { (count(c, "delivered")) " delivered · " (count(c, "failed")) " failed · " (count(c, "pending")) " waiting" }
                            div.test-result.small role="status" aria-live="polite" {}
                        }
                        @if ctx.is_admin() {
                            div.row {
                                button type="button" data-test=(c.id) { "Send test" }
                                button type="button" data-edit-channel=(c.id) { "Edit" }
                                button.danger type="button" data-delete-channel=(c.id) data-name=(c.name) { "Delete" }
                            }
                        }
                    }
                }
            }
            @if ctx.is_admin() {
                (layout::json_script("channels-data", &Value::Array(data)))
                details.add #channel-add {
                    summary #channel-summary { "Add a channel" }
                    form.stack #channel-form novalidate data-id="" {
                        div.filters {
                            label { "Type"
                                select #ch-type name="type" {
                                    @for (k, l) in CHANNEL_TYPES { option value=(k) { (l) } }
                                }
                            }
                            label { "Name" input #ch-name name="name" required maxlength="100" placeholder="Home Assistant"; }
                        }
                        div.filters {
                            label data-for="webhook chat_block chat_embed chat_card" { span #ch-url-label { "URL" } input #ch-url type="url" placeholder="http://192.168.1.20:8123/api/webhook/birds"; }
                            label data-for="webhook" { "Signing secret (optional)" input #ch-secret type="password" autocomplete="new-password"; }
                            label data-for="email" hidden { "Email addresses (comma separated, up to 10)" input #ch-to type="text" placeholder="me@example.org, partner@example.org"; }
                            label data-for="chat_bot" hidden { "Bot token" input #ch-token type="password" autocomplete="off"; }
                            label data-for="chat_bot" hidden { "Chat id" input #ch-chat type="text" placeholder="-100123456 or @channel"; }
                        }
                        p.small.muted #ch-keep hidden { "Secrets are never shown again: leave a secret empty to keep the one saved." }
                        label.check { input #ch-enabled type="checkbox" checked; "On (sends alerts)" }
                        div.error #channel-error role="alert" hidden {}
                        div.row {
                            button.primary type="submit" #channel-submit { "Add channel" }
                            button type="reset" #channel-reset { "Clear" }
                        }
                    }
                }
            }
        }
    }
}

fn number(id: &str, label: &str, min: u32, max: u32, value: Option<u32>, step: &str) -> Markup {
    html! {
        label { (label)
            input #(id) type="number" min=(min) max=(max) step=(step) value=[value] inputmode="numeric";
        }
    }
}

/// How often a rule may fire, as its trigger decides: only detection rules and the clock rule
/// have a cooldown to set; a silence fires once per silence, a trend once a day at most.
fn cooldown(r: &Rule) -> Markup {
    html! {
        @if r.system_key.as_deref() == Some(OFFLINE_RULE_KEY) { span.muted { "per outage" } }
        @else if r.system_key.is_some() { (r.cooldown_minutes) " min" }
        @else if r.trigger == "absence" { span.muted { "once per silence" } }
        @else if r.trigger == "trend" { span.muted { "once a day" } }
        @else { (r.cooldown_minutes) " min" }
    }
}

fn sat_checks(sats: &[Sat]) -> Markup {
    html! {
        fieldset.picks data-when="detection absence" {
            legend { "Satellites" }
            @if sats.is_empty() { span.small.muted { "No satellites yet." } }
            @for s in sats { label.check { input type="checkbox" name="rule-sat" value=(s.id); (s.name) } }
            p.small.muted.full { "None ticked: every satellite of the team." }
        }
    }
}

fn detection_fields(ctx: &Ctx, lang: &str) -> Markup {
    html! {
        div.when data-when="detection" {
            div.field {
                span.label-text { "Species" }
                (species_pick::list(ctx, lang, "rule-species", &[], true, "bird", "Add a species: type its name"))
                p.small.muted { "None: any species." }
            }
            fieldset.picks {
                legend { "Only when the detection is" }
                @for (k, l) in SPECIAL { label.check { input type="checkbox" name="rule-special" value=(k); (l) } }
                p.small.muted.full { "None ticked: every detection that matches the rest." }
            }
            p.small.muted.full #rule-hours-note { "Hours are the local time of the station that hears the bird." }
            div.filters {
                label { "Minimum confidence (0 to 1)"
                    input #rule-confidence type="number" min="0" max="1" step="0.01" placeholder="any";
                }
                label { "From (hour)"
                    select #rule-hours-from {
                        option value="" { "Any time" }
                        @for h in 0..24u64 { option value=(h) { (alert_rule_words::hour(ctx, h)) } }
                    }
                }
                label { "Until (hour)"
                    select #rule-hours-to {
                        option value="" { "Any time" }
                        @for h in 0..24u64 { option value=(h) { (alert_rule_words::hour(ctx, h)) } }
                    }
                }
            }
        }
    }
}

fn absence_fields() -> Markup {
    html! {
        div.when.filters data-when="absence" hidden {
            (number("rule-minutes", "Quiet for (minutes)", 1, MAX_MINUTES, Some(60), "1"))
            label { "What counts as quiet"
                select #rule-of {
                    option value="detection" { "No bird detected" }
                    option value="chunk" { "No audio received" }
                }
            }
        }
    }
}

fn trend_fields(sats: &[Sat]) -> Markup {
    html! {
        div.when.filters data-when="trend" hidden {
            label { "Daily number of"
                select #rule-metric {
                    option value="detections" { "Detections" }
                    option value="species" { "Species" }
                }
            }
            label { "Direction"
                select #rule-direction {
                    option value="rise" { "Rises" }
                    option value="fall" { "Falls" }
                    option value="either" { "Rises or falls" }
                }
            }
            (number("rule-percent", "By at least (%)", 1, 10_000, Some(50), "1"))
            (number("rule-baseline", "Against the days before", 1, 90, Some(7), "1"))
            label { "Where"
                select #rule-trend-sat {
                    option value="" { "The whole team" }
                    @for s in sats { option value=(s.id) { (s.name) } }
                }
            }
        }
    }
}

pub fn rules_card(ctx: &Ctx, rules: &[Rule], channels: &[Channel], sats: &[Sat]) -> Markup {
    let lang = species_pick::lang(ctx);
    let names: HashMap<&str, &str> = channels.iter().map(|c| (c.id.as_str(), c.name.as_str())).collect();
    let sat_names: HashMap<&str, &str> = sats.iter().map(|s| (s.id.as_str(), s.name.as_str())).collect();
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
                                td.when-text { (alert_rule_words::describe(ctx, &lang, r, &sat_names)) }
                                td { @if r.channel_ids.is_empty() { span.muted { "none" } } @else {
                                    (r.channel_ids.iter().map(|id| names.get(id.as_str()).copied().unwrap_or("deleted channel")).collect::<Vec<_>>().join(", "))
                                } }
                                td.num { (cooldown(r)) }
                                td.last-fired { @match &r.last_fired_at { Some(t) => (layout::ago(t)), None => span.muted { "never" } } }
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
                (layout::json_script("rules-data", &alert_rule_words::form_data(ctx, &lang, rules)))
                details.add #rule-add {
                    summary #rule-summary { "Add a rule" }
                    form.stack #rule-form novalidate data-id="" {
                        p.small.muted #rule-system-note hidden { "A system rule raises one alert per satellite outage, or per episode of a wrong clock (at most one per cooldown). Choose its channels and whether it is on." }
                        div.filters.rule-head {
                            label { "Name" input #rule-name required maxlength="100" placeholder="Nightingale heard"; }
                            label { "Fires when"
                                select #rule-trigger {
                                    option value="detection" { "A bird is detected" }
                                    option value="absence" { "It stays quiet" }
                                    option value="trend" { "Daily numbers change" }
                                }
                            }
                        }
                        (detection_fields(ctx, &lang))
                        (absence_fields())
                        (trend_fields(sats))
                        (sat_checks(sats))
                        fieldset.picks.channel-picks {
                            legend { "Send to" }
                            @if channels.is_empty() { span.small.muted { "No channels yet: add one above first." } }
                            @for c in channels { label.check { input type="checkbox" name="rule-channel" value=(c.id); (c.name) } }
                        }
                        div.rule-end {
                            div #rule-cooldown-box {
                                (number("rule-cooldown", "Cooldown (minutes)", 1, MAX_MINUTES, Some(DEFAULT_COOLDOWN_MINUTES), "1"))
                                p.small.muted { "At most one alert per satellite and species in this time." }
                            }
                            label.check { input #rule-enabled type="checkbox" checked; "On" }
                        }
                        div.error #rule-error role="alert" hidden {}
                        div.row { button.primary type="submit" #rule-submit { "Save rule" } button type="reset" #rule-reset { "Clear" } }
                    }
                }
            }
        }
    }
}
