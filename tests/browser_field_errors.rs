//! Refused settings say so in words, next to the field (issue 51, defect 4), in a real headless
//! chromium: each bad value is typed into the real form and saved; the field is marked
//! (`aria-invalid`) and a message beside it names the setting by its label and a species by
//! its name, never by a key, "null" or API wording. The API's own answers for the same values
//! keep a machine-readable `field` and a `message` in words. The platform's `channel_targets` is a
//! choice of three with an explanation, not a text box.

mod common;

use common::{PASSWORD, assert_error, browser::Browser, seed};
use serde_json::{Value, json};

const GREAT_TIT: seed::Species = ("parus_major", "Great Tit", "Parus major");

/// What no message a person reads may hold.
fn assert_words(message: &str, keys: &[&str]) {
    for bad in ["null", "`", "IANA", "must be one of public"].iter().chain(keys) {
        assert!(!message.contains(bad), "{bad:?} in {message:?}");
    }
    let first = message.trim_start_matches('\u{201c}').chars().next();
    assert!(first.is_some_and(char::is_uppercase) && message.ends_with('.'), "a sentence: {message:?}");
}

/// The field `css` is marked invalid and the message beside it (inside the field's label or
/// row) is shown; returns that message.
async fn message_beside(b: &Browser, css: &str) -> String {
    let marked =
        format!("const f = document.querySelector({css:?}); return !!f && f.getAttribute('aria-invalid') === 'true';");
    assert!(b.wait_until(&marked, 10).await, "{css} is marked invalid");
    let text = b
        .js(&format!(
            "const f = document.querySelector({css:?}); const box = f.closest('label, tr, .field'); \
             const m = box && box.querySelector('.field-error'); \
             const ids = (f.getAttribute('aria-describedby') || '').split(' ').filter(Boolean); \
             const described = ids.some(id => document.getElementById(id) === m); \
             return m && !m.hidden && m.checkVisibility() && described ? m.textContent : null;"
        ))
        .await;
    text.as_str().unwrap_or_else(|| panic!("no message beside {css} (described by it)")).to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_settings_are_refused_in_words_beside_their_fields() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let admin = hub.user("ada@example.org", true).await;
    let api = hub.login(&admin.email).await;
    let sat = seed::satellite(&hub, admin.tenant, "Garden").await;
    seed::heard(&hub, admin.tenant, sat, "2026-12-06T09:18:00Z", GREAT_TIT, 0.9).await;

    // The API: a field pointer for programs, words for people.
    let (status, body) = api.put("/settings/tenant", json!({ "time_zone": "Mars/Olympus" })).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["field"], "time_zone", "{body}");
    let said = body["message"].as_str().expect("message");
    assert!(said.contains("Mars/Olympus"), "{said}");
    assert_words(said, &["time_zone"]);
    let (status, body) = api.put("/settings/tenant", json!({ "min_confidence": 1.5 })).await;
    assert_eq!((status.as_u16(), body["field"].clone()), (422, json!("min_confidence")), "{body}");
    assert_words(body["message"].as_str().expect("message"), &["min_confidence"]);
    let (status, body) = api.put("/settings/tenant", json!({ "species_min_confidence": { "parus_major": 1.5 } })).await;
    assert_eq!((status.as_u16(), body["field"].clone()), (422, json!("species_min_confidence.parus_major")), "{body}");
    let said = body["message"].as_str().expect("message");
    assert!(said.contains("Great Tit") && said.contains("0.99"), "{said}");
    assert_words(said, &["parus_major", "species_min_confidence"]);
    let (status, body) = api.put("/settings/platform", json!({ "channel_targets": "everywhere" })).await;
    assert_eq!((status.as_u16(), body["field"].clone()), (422, json!("channel_targets")), "{body}");
    assert_words(body["message"].as_str().expect("message"), &["channel_targets"]);
    let gone = api.get("/satellites/00000000-0000-4000-8000-000000000000").await;
    assert_error(&gone, 404, "satellite_not_found");
    assert_words(gone.1["message"].as_str().expect("message"), &[]);

    let b = Browser::start(hub.http_addr.port(), "field-errors").await;
    b.sign_in(&admin.email, PASSWORD, None).await;

    // Team settings: a time zone that is none.
    b.goto("/team").await;
    b.fill("#f-time_zone", "Mars/Olympus").await;
    b.click("form.team-settings button[type=submit]").await;
    let said = message_beside(&b, "#f-time_zone").await;
    assert!(said.contains("Mars/Olympus"), "{said}");
    assert_words(&said, &["time_zone"]);
    b.shot("team-zone").await;

    // Detection settings: a minimum of 1.5, then a species' own minimum of 1.5.
    b.goto("/team/detection").await;
    b.fill("#ds-min_confidence", "1.5").await;
    b.click("#detection-form button[type=submit]").await;
    let said = message_beside(&b, "#ds-min_confidence").await;
    assert!(said.contains("0.99"), "{said}");
    assert_words(&said, &["min_confidence"]);
    b.fill("#ds-min_confidence", "").await;
    b.fill("#pick-species_min_confidence", "great tit").await;
    b.click("#pick-species_min_confidence-results li[data-code=parus_major]").await;
    let row = "#species_min_confidence tr[data-code=parus_major] input";
    b.fill(row, "1.5").await;
    b.click("#detection-form button[type=submit]").await;
    let said = message_beside(&b, row).await;
    assert!(said.contains("Great Tit") && said.contains("0.99"), "{said}");
    assert_words(&said, &["parus_major", "species_min_confidence"]);
    let cleared =
        "const f = document.querySelector('#ds-min_confidence'); return f.getAttribute('aria-invalid') !== 'true';";
    assert!(b.wait_until(cleared, 5).await, "a field that is fine now is no longer marked");
    b.shot("detection-species").await;
    let (_, s) = api.get("/settings/tenant").await;
    assert_eq!(s["settings"]["species_min_confidence"], json!({}), "nothing saved");

    // Platform settings: who channels may reach is a choice of three, explained.
    b.goto("/admin").await;
    assert!(!b.has("input[type=text][name=channel_targets]").await, "not a text box");
    let choices = b
        .js("return Array.from(document.querySelectorAll('[name=channel_targets]')).map(e => e.tagName === 'SELECT' \
             ? Array.from(e.options).map(o => o.value) : [e.value]).flat();")
        .await;
    let mut values: Vec<&str> = choices.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    values.sort_unstable();
    assert_eq!(values, ["lan", "loopback", "public"], "three choices");
    let card = b.text("#channel-targets").await;
    for words in ["internet", "home network", "this machine"] {
        assert!(card.to_lowercase().contains(words), "{words:?} explained: {card}");
    }
    b.shot("platform").await;
    b.assert_no_js_errors().await;
    b.close().await;
}
