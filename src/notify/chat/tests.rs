//! The chat shapes, field by field, and their limits.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;
use crate::{
    ids::{DetectionId, SatelliteId, TenantId},
    notify::NoticeData,
};

fn fixture() -> Notice {
    Notice {
        event: "rare_species".to_owned(),
        timestamp: "2026-11-21T17:05:19.123Z".parse().expect("time"),
        tenant_id: TenantId::new(),
        alert_id: Some("al-1".to_owned()),
        rule_name: Some("Rare birds".to_owned()),
        title: "Rare: Northern Cardinal at Backyard".to_owned(),
        message: "A Northern Cardinal was heard at Backyard.".to_owned(),
        link: Some("https://hub.example/detections/d1".to_owned()),
        data: NoticeData {
            species: Some("Cardinalis cardinalis".to_owned()),
            common_name: Some("Northern Cardinal".to_owned()),
            common_names: BTreeMap::from([
                ("de".to_owned(), "Rotkardinal".to_owned()),
                ("en".to_owned(), "Northern Cardinal".to_owned()),
            ]),
            species_code: Some("cardinalis_cardinalis".to_owned()),
            confidence: Some(0.92),
            satellite_id: Some(SatelliteId::new()),
            satellite_name: Some("Backyard".to_owned()),
            detection_id: Some(DetectionId::new()),
            detected_at: Some("2026-11-21T17:05:10.000Z".parse().expect("time")),
            extra: Default::default(),
            zone: None,
        },
    }
}

/// A notice whose every text is far over every limit, with markup characters throughout.
fn oversize() -> Notice {
    let mut n = fixture();
    n.title = "Rare <b> & ".repeat(1000);
    n.message = "a<b & c>d ".repeat(1000);
    n.rule_name = Some("rule & ".repeat(1500));
    n.data.satellite_name = Some("<Backyard> ".repeat(1000));
    n.data.common_name = Some("Cardinal&".repeat(600));
    n
}

const SPECIES: &str = "Northern Cardinal / Rotkardinal (Cardinalis cardinalis)";
/// The detection time as every alert text writes it (the hub's zone).
fn time() -> String {
    crate::time::readable("2026-11-21T17:05:10.000Z".parse().expect("time"))
}

fn chars(v: &Value) -> usize {
    v.as_str().expect("text").chars().count()
}

/// Every `&` starts a whole entity: nothing was cut in the middle of an escape.
fn entities_whole(text: &str) {
    for (i, _) in text.match_indices('&') {
        let rest = &text[i..];
        assert!(
            ["&amp;", "&lt;", "&gt;", "&quot;"].iter().any(|e| rest.starts_with(e)),
            "a broken entity at {}",
            &text[i..(i + 8).min(text.len())]
        );
    }
}

#[test]
fn block_has_the_documented_slack_shape() {
    let time = time();
    let expected = json!({
        "text": "Rare: Northern Cardinal at Backyard",
        "blocks": [
            {"type": "section",
             "text": {"type": "mrkdwn", "text": "*Rare: Northern Cardinal at Backyard*\nA Northern Cardinal was heard at Backyard."},
             "fields": [
                {"type": "mrkdwn", "text": format!("*Species*\n{SPECIES}")},
                {"type": "mrkdwn", "text": "*Confidence*\n0.92"},
                {"type": "mrkdwn", "text": "*Satellite*\nBackyard"},
                {"type": "mrkdwn", "text": format!("*Time*\n{time}")},
             ]},
            {"type": "context", "elements": [
                {"type": "mrkdwn", "text": "birdhub · rule Rare birds"},
                {"type": "mrkdwn", "text": "<https://hub.example/detections/d1|Open in birdhub>"},
            ]},
        ],
    });
    assert_eq!(block(&fixture()), expected);
}

#[test]
fn block_escapes_markup_and_leaves_out_a_missing_link() {
    let mut n = fixture();
    n.title = "<!channel> Cardinal & co".to_owned();
    n.rule_name = None;
    n.event = "test".to_owned();
    n.link = None;
    let v = block(&n);
    assert_eq!(v["text"], "&lt;!channel&gt; Cardinal &amp; co");
    assert_eq!(v["blocks"][1]["elements"], json!([{"type": "mrkdwn", "text": "birdhub · Test notification"}]));
    n.link = Some("https://hub.example/d?a=1&b=2|x".to_owned());
    let v = block(&n);
    assert_eq!(v["blocks"][1]["elements"][1]["text"], "<https://hub.example/d?a=1&amp;b=2%7Cx|Open in birdhub>");
}

#[test]
fn block_stays_within_the_slack_limits() {
    let v = block(&oversize());
    assert!(chars(&v["text"]) <= limits::SLACK_SECTION_TEXT);
    let section = &v["blocks"][0];
    let text = section["text"]["text"].as_str().expect("text");
    assert!(text.chars().count() <= limits::SLACK_SECTION_TEXT);
    assert!(text.ends_with('…'));
    entities_whole(text);
    let fields = section["fields"].as_array().expect("fields");
    assert!(fields.len() <= limits::SLACK_FIELDS);
    assert!(fields.iter().all(|f| chars(&f["text"]) <= limits::SLACK_FIELD_TEXT));
    let elements = v["blocks"][1]["elements"].as_array().expect("elements");
    assert!(elements.len() <= limits::SLACK_CONTEXT_ELEMENTS);
    assert!(elements.iter().all(|e| chars(&e["text"]) <= limits::SLACK_SECTION_TEXT));
}

#[test]
fn bot_has_the_documented_telegram_shape() {
    let time = time();
    let text = format!(
        "<b>Rare: Northern Cardinal at Backyard</b>\nA Northern Cardinal was heard at Backyard.\n\n\
         <b>Species:</b> {SPECIES}\n<b>Confidence:</b> 0.92\n<b>Satellite:</b> Backyard\n<b>Time:</b> {time}\n\n\
         <a href=\"https://hub.example/detections/d1\">Open in birdhub</a>"
    );
    let expected = json!({"chat_id": 123456, "text": text, "parse_mode": "HTML", "disable_web_page_preview": true});
    assert_eq!(bot(&fixture(), "123456"), expected);
}

#[test]
fn bot_sends_numeric_chat_ids_as_numbers_and_channels_as_text() {
    let n = fixture();
    assert_eq!(bot(&n, "123456")["chat_id"], json!(123456));
    assert_eq!(bot(&n, "-1001234567890")["chat_id"], json!(-1001234567890_i64));
    assert_eq!(bot(&n, " 42 ")["chat_id"], json!(42));
    assert_eq!(bot(&n, "@birdhub_alerts")["chat_id"], json!("@birdhub_alerts"));
}

#[test]
fn bot_escapes_user_text_for_html() {
    let mut n = fixture();
    n.title = "Rare: <Cardinal> & co".to_owned();
    n.message = "1 < 2 && 3 > 2".to_owned();
    n.data.satellite_name = Some("<script>".to_owned());
    n.link = Some("https://hub.example/d?a=1&b=\"2\"".to_owned());
    let text = bot(&n, "1")["text"].as_str().expect("text").to_owned();
    assert!(text.starts_with("<b>Rare: &lt;Cardinal&gt; &amp; co</b>\n1 &lt; 2 &amp;&amp; 3 &gt; 2\n"), "{text}");
    assert!(text.contains("<b>Satellite:</b> &lt;script&gt;"), "{text}");
    assert!(text.ends_with("<a href=\"https://hub.example/d?a=1&amp;b=&quot;2&quot;\">Open in birdhub</a>"), "{text}");
}

#[test]
fn bot_text_stays_within_4096_characters() {
    let text = bot(&oversize(), "1")["text"].as_str().expect("text").to_owned();
    assert!(text.chars().count() <= limits::TELEGRAM_TEXT, "{}", text.chars().count());
    assert!(text.contains('…'));
    assert!(text.ends_with("Open in birdhub</a>"), "the facts and the link survive a long message");
    entities_whole(&text);
}

#[test]
fn card_has_the_documented_teams_shape() {
    let time = time();
    let expected = json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": {
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard",
                "version": "1.2",
                "body": [
                    {"type": "TextBlock", "text": "Rare: Northern Cardinal at Backyard", "weight": "bolder", "wrap": true},
                    {"type": "TextBlock", "text": "A Northern Cardinal was heard at Backyard.", "wrap": true},
                    {"type": "FactSet", "facts": [
                        {"title": "Species", "value": SPECIES},
                        {"title": "Confidence", "value": "0.92"},
                        {"title": "Satellite", "value": "Backyard"},
                        {"title": "Time", "value": time},
                    ]},
                ],
                "actions": [{"type": "Action.OpenUrl", "title": "Open in birdhub", "url": "https://hub.example/detections/d1"}],
            },
        }],
    });
    assert_eq!(card(&fixture()), expected);
    let mut n = fixture();
    n.link = None;
    assert!(card(&n)["attachments"][0]["content"].get("actions").is_none());
}

#[test]
fn card_stays_within_28_kb() {
    let mut n = oversize();
    n.message = "\u{1}🐦".repeat(10_000);
    let v = card(&n);
    assert!(v.to_string().len() <= limits::TEAMS_BYTES, "{}", v.to_string().len());
    let message = v["attachments"][0]["content"]["body"][1]["text"].as_str().expect("message");
    assert!(message.ends_with('…') && message.chars().count() > 100, "still says something: {message}");
}

#[test]
fn embed_has_the_documented_discord_shape() {
    let time = time();
    let expected = json!({
        "username": "birdhub",
        "content": "Rare species",
        "embeds": [{
            "title": "Rare: Northern Cardinal at Backyard",
            "description": "A Northern Cardinal was heard at Backyard.",
            "url": "https://hub.example/detections/d1",
            "color": 0x8E24AA,
            "timestamp": "2026-11-21T17:05:19.123Z",
            "fields": [
                {"name": "Species", "value": SPECIES, "inline": true},
                {"name": "Confidence", "value": "0.92", "inline": true},
                {"name": "Satellite", "value": "Backyard", "inline": true},
                {"name": "Time", "value": time, "inline": true},
            ],
            "footer": {"text": "birdhub"},
        }],
        "allowed_mentions": {"parse": []},
    });
    assert_eq!(embed(&fixture()), expected);
}

#[test]
fn embed_colours_rare_species_apart_and_omits_what_is_missing() {
    let others = [
        "detection",
        "first_of_day",
        "first_of_season",
        "first_for_team",
        "absence",
        "trend",
        "satellite_offline",
        "test",
    ];
    assert!(others.iter().all(|e| color(e) != color("rare_species")));
    let mut n = fixture();
    n.event = "satellite_offline".to_owned();
    n.link = None;
    n.data = NoticeData { satellite_name: Some("Backyard".to_owned()), ..Default::default() };
    let v = embed(&n);
    assert_eq!(v["content"], "Satellite offline");
    assert!(v["embeds"][0].get("url").is_none());
    assert_eq!(v["embeds"][0]["color"], json!(0xE53935));
    let names: Vec<&str> =
        v["embeds"][0]["fields"].as_array().expect("fields").iter().filter_map(|f| f["name"].as_str()).collect();
    assert_eq!(names, ["Satellite", "Time"]);
}

#[test]
fn embed_stays_within_every_discord_limit() {
    let v = embed(&oversize());
    assert!(chars(&v["content"]) <= limits::DISCORD_CONTENT);
    let e = &v["embeds"][0];
    assert!(chars(&e["title"]) <= limits::DISCORD_TITLE);
    assert!(chars(&e["description"]) <= limits::DISCORD_DESCRIPTION);
    assert!(e["description"].as_str().expect("description").ends_with('…'));
    let fields = e["fields"].as_array().expect("fields");
    assert!(fields.len() <= limits::DISCORD_FIELDS);
    let mut total = chars(&e["title"]) + chars(&e["description"]) + chars(&e["footer"]["text"]);
    for f in fields {
        assert!(chars(&f["name"]) <= limits::DISCORD_FIELD_NAME);
        assert!(chars(&f["value"]) <= limits::DISCORD_FIELD_VALUE);
        total += chars(&f["name"]) + chars(&f["value"]);
    }
    assert!(total <= limits::DISCORD_EMBED_TOTAL, "{total}");
}
