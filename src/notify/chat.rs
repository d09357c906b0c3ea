//! The four chat shapes of FORMATS.md section 4: block layout (Slack), bot message (Telegram),
//! card (Teams Workflows) and rich embed (Discord). Each function returns the JSON to POST and
//! keeps every text within the service's documented limit, cut with "…" where needed.
//!
//! User text (titles, satellite and rule names) is escaped where the service reads markup, so a
//! satellite named `<!channel>` or `@everyone` cannot ping a whole team.

use serde_json::{Map, Value, json};

use super::{
    Notice,
    text::{self, escape_attribute, escape_markup, fit, fit_escaped, one_line},
};

/// Limits of FORMATS.md section 4, in characters unless the name says bytes.
pub mod limits {
    pub const SLACK_SECTION_TEXT: usize = 3000;
    pub const SLACK_FIELDS: usize = 10;
    pub const SLACK_FIELD_TEXT: usize = 2000;
    pub const SLACK_CONTEXT_ELEMENTS: usize = 10;
    pub const TELEGRAM_TEXT: usize = 4096;
    /// "≤28 KB per message", read as 28 000 bytes of JSON to stay clear of any rounding.
    pub const TEAMS_BYTES: usize = 28_000;
    pub const DISCORD_CONTENT: usize = 2000;
    pub const DISCORD_TITLE: usize = 256;
    pub const DISCORD_DESCRIPTION: usize = 4096;
    pub const DISCORD_FIELDS: usize = 25;
    pub const DISCORD_FIELD_NAME: usize = 256;
    pub const DISCORD_FIELD_VALUE: usize = 1024;
    /// Title, description, field names and values, footer and author together.
    pub const DISCORD_EMBED_TOTAL: usize = 6000;
}
use limits::*;

/// Titles are one line; a few hundred characters is already more than any chat shows.
const TITLE_CHARS: usize = 250;
/// A fact value beyond this is noise in a chat message.
const FACT_CHARS: usize = 300;
/// A link longer than this (escaped, where escaped) is left out rather than cut: a cut URL leads
/// nowhere, and the rest of the message must still fit.
const LINK_CHARS: usize = 1000;
const OPEN_LINK: &str = "Open in birdhub";
const NAME: &str = "birdhub";

/// Slack-style blocks: `{"text": fallback, "blocks": [section, context]}`. The section carries
/// the title, the message and the facts as fields; the context names the rule and the link.
/// No image block: the hub has no public image URL to offer.
pub fn block(n: &Notice) -> Value {
    let title = fit_escaped(&one_line(&n.title), TITLE_CHARS, escape_markup);
    let head = format!("*{title}*\n");
    let message = fit_escaped(&n.message, SLACK_SECTION_TEXT - head.chars().count(), escape_markup);
    let fields: Vec<Value> = text::facts(n)
        .into_iter()
        .take(SLACK_FIELDS)
        .map(|f| {
            let label = format!("*{}*\n", f.label);
            let value = fit_escaped(&f.value, SLACK_FIELD_TEXT - label.chars().count(), escape_markup);
            json!({"type": "mrkdwn", "text": format!("{label}{value}")})
        })
        .collect();
    let mut section = json!({"type": "section", "text": {"type": "mrkdwn", "text": format!("{head}{message}")}});
    if !fields.is_empty() {
        section["fields"] = Value::Array(fields);
    }
    let mut context = vec![json!({"type": "mrkdwn", "text": fit_escaped(&sent_by(n), FACT_CHARS, escape_markup)})];
    // Inside `<url|label>` a `|` would end the URL; `&`, `<`, `>` are escaped as everywhere.
    if let Some(url) = escaped_link(n, |c| if c == '|' { Some("%7C") } else { escape_markup(c) }) {
        context.push(json!({"type": "mrkdwn", "text": format!("<{url}|{OPEN_LINK}>")}));
    }
    context.truncate(SLACK_CONTEXT_ELEMENTS);
    json!({
        "text": fit_escaped(&one_line(&n.title), SLACK_SECTION_TEXT, escape_markup),
        "blocks": [section, {"type": "context", "elements": context}],
    })
}

/// Telegram `sendMessage` in HTML mode. A numeric `chat_id` ("123", "-100123") is sent as a
/// number, anything else ("@channel") as text. The text counts its markup towards the 4096
/// limit, so it is within the limit whatever Telegram counts after parsing the entities.
pub fn bot(n: &Notice, chat_id: &str) -> Value {
    let title = format!("<b>{}</b>", fit_escaped(&one_line(&n.title), TITLE_CHARS, escape_markup));
    let mut tail = String::new();
    let facts = text::facts(n);
    if !facts.is_empty() {
        tail.push('\n');
    }
    for f in facts {
        tail.push_str(&format!("\n<b>{}:</b> {}", f.label, fit_escaped(&f.value, FACT_CHARS, escape_markup)));
    }
    if let Some(href) = escaped_link(n, escape_attribute) {
        tail.push_str(&format!("\n\n<a href=\"{href}\">{OPEN_LINK}</a>"));
    }
    let room = TELEGRAM_TEXT.saturating_sub(title.chars().count() + 1 + tail.chars().count());
    let message = fit_escaped(&n.message, room, escape_markup);
    let chat_id = chat_id.trim();
    let chat_id = chat_id.parse::<i64>().map_or_else(|_| json!(chat_id), |id| json!(id));
    json!({
        "chat_id": chat_id,
        "text": format!("{title}\n{message}{tail}"),
        "parse_mode": "HTML",
        "disable_web_page_preview": true,
    })
}

/// A Teams Workflows message with one Adaptive Card 1.2: the title in bold, the message, the
/// facts, and an "Open in birdhub" action when there is a link. At most 28 000 bytes.
pub fn card(n: &Notice) -> Value {
    let mut room = TEAMS_BYTES;
    loop {
        let card = card_with_message(n, &fit(&n.message, room));
        if card.to_string().len() <= TEAMS_BYTES || room == 0 {
            return card;
        }
        room /= 2;
    }
}

fn card_with_message(n: &Notice, message: &str) -> Value {
    let facts: Vec<Value> =
        text::facts(n).into_iter().map(|f| json!({"title": f.label, "value": fit(&f.value, FACT_CHARS)})).collect();
    let mut content = json!({
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.2",
        "body": [
            {"type": "TextBlock", "text": fit(&one_line(&n.title), TITLE_CHARS), "weight": "bolder", "wrap": true},
            {"type": "TextBlock", "text": message, "wrap": true},
            {"type": "FactSet", "facts": facts},
        ],
    });
    if let Some(link) = link(n) {
        content["actions"] = json!([{"type": "Action.OpenUrl", "title": OPEN_LINK, "url": link}]);
    }
    json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": content,
        }],
    })
}

/// A Discord webhook message with one embed, within every per-field limit and the 6000-character
/// total. Mentions are switched off (`allowed_mentions`), so no text in a notice can ping anyone.
pub fn embed(n: &Notice) -> Value {
    let title = fit(&one_line(&n.title), DISCORD_TITLE);
    let fields: Vec<(String, String)> = text::facts(n)
        .into_iter()
        .take(DISCORD_FIELDS)
        .map(|f| (fit(f.label, DISCORD_FIELD_NAME), fit(&f.value, DISCORD_FIELD_VALUE)))
        .collect();
    let used = title.chars().count()
        + fields.iter().map(|(k, v)| k.chars().count() + v.chars().count()).sum::<usize>()
        + NAME.len();
    let description = fit(&n.message, DISCORD_DESCRIPTION.min(DISCORD_EMBED_TOTAL.saturating_sub(used)));

    let mut embed = Map::new();
    if !title.is_empty() {
        embed.insert("title".into(), json!(title));
    }
    if !description.is_empty() {
        embed.insert("description".into(), json!(description));
    }
    if let Some(link) = link(n) {
        embed.insert("url".into(), json!(link));
    }
    embed.insert("color".into(), json!(color(&n.event)));
    embed.insert("timestamp".into(), json!(n.timestamp));
    let fields: Vec<Value> = fields.into_iter().map(|(k, v)| json!({"name": k, "value": v, "inline": true})).collect();
    embed.insert("fields".into(), Value::Array(fields));
    embed.insert("footer".into(), json!({"text": NAME}));
    json!({
        "username": NAME,
        "content": fit(&event_label(&n.event), DISCORD_CONTENT),
        "embeds": [embed],
        "allowed_mentions": {"parse": []},
    })
}

/// The embed colour of an event (0xRRGGBB); a rare species stands out in purple.
pub fn color(event: &str) -> u32 {
    match event {
        text::RARE_SPECIES => 0x8E24AA,
        "first_of_day" | "first_of_season" | "first_for_team" => 0x43A047,
        "detection" => 0x1E88E5,
        "absence" | "trend" | "satellite_clock" => 0xFB8C00,
        "satellite_offline" => 0xE53935,
        _ => 0x607D8B,
    }
}

/// A short human name of the event: "Rare species", "Satellite offline", "Test notification".
pub fn event_label(event: &str) -> String {
    match event {
        "test" => "Test notification".to_owned(),
        "first_of_day" => "First of the day".to_owned(),
        "first_of_season" => "First of the season".to_owned(),
        "first_for_team" => "New for the team".to_owned(),
        other => {
            let words = one_line(&other.replace('_', " "));
            let mut chars = words.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect(),
                None => "Alert".to_owned(),
            }
        }
    }
}

/// "birdhub · rule Rare birds", or "birdhub · Test notification" for a send without a rule.
fn sent_by(n: &Notice) -> String {
    match &n.rule_name {
        Some(rule) => format!("{NAME} · rule {}", one_line(rule)),
        None => format!("{NAME} · {}", event_label(&n.event)),
    }
}

fn link(n: &Notice) -> Option<&str> {
    text::link(n).filter(|l| l.chars().count() <= LINK_CHARS)
}

/// The link escaped for markup, left out when the escaped form is over [`LINK_CHARS`].
fn escaped_link(n: &Notice, escape: impl Fn(char) -> Option<&'static str>) -> Option<String> {
    let escaped: String = link(n)?.chars().map(|c| escape(c).map_or_else(|| c.to_string(), str::to_owned)).collect();
    (escaped.chars().count() <= LINK_CHARS).then_some(escaped)
}

#[cfg(test)]
mod tests;
