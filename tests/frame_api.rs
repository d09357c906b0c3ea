//! The API's cross-cutting rules a person meets through every form (issue 36):
//! - defect 3: a POST repeated with the same `Idempotency-Key` (a double click, a retry on a
//!   flaky phone) makes one row, even when both copies arrive at once;
//! - defect 10: no serde message ("invalid value: integer `-1`, expected u32") reaches anyone:
//!   wrong types, missing fields and unknown choices are answered in words naming the field.

mod common;

use common::{api::Api, receiver::Receiver, seed};
use serde_json::{Value, json};

fn count(hub: &common::TestHub, table: &str) -> i64 {
    hub.sql(|c| c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)).expect("count"))
}

/// Sends `body` to `path` twice at once with one key; both answers must be the same success.
async fn twice(api: &Api, key: &str, path: &str, body: Value) -> (Value, Value) {
    let keyed = api.clone().header("Idempotency-Key", key);
    let (a, b) = tokio::join!(keyed.post(path, body.clone()), keyed.post(path, body.clone()));
    assert!(a.0.is_success() && b.0.is_success(), "{path}: {a:?} / {b:?}");
    assert_eq!(a.0, b.0, "{path}: the repeat gets the first answer");
    (a.1, b.1)
}

#[tokio::test]
async fn the_same_post_sent_twice_at_once_with_one_key_makes_one_row() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let sat = seed::satellite(&hub, owner.tenant, "Garden").await;
    let (_, det) = seed::heard(&hub, owner.tenant, sat, "2026-06-01T05:00:00Z", seed::ROBIN, 0.9).await;
    let rx = Receiver::start(None).await;

    let before = count(&hub, "comments");
    let (a, b) =
        twice(&api, "comment-1", &format!("/detections/{det}/comments"), json!({"body": "By the fence"})).await;
    assert_eq!(a["id"], b["id"], "one comment, the same answer twice");
    assert_eq!(count(&hub, "comments"), before + 1, "one comment made");

    let before = count(&hub, "alert_channels");
    let channel = json!({"type": "webhook", "name": "Phone", "config": {"url": rx.url("/hook")}});
    let (ch, again) = twice(&api, "channel-1", "/alert-rules/channels", channel).await;
    assert_eq!(ch["id"], again["id"]);
    assert_eq!(count(&hub, "alert_channels"), before + 1, "one alert channel made");

    let before = count(&hub, "scheduled_exports");
    let export = json!({"name": "Weekly", "format": "csv", "filters": {"days": 7}, "cron": "0 6 * * 1",
        "timezone": "Europe/Berlin", "channelId": ch["id"]});
    twice(&api, "export-1", "/exports/scheduled", export).await;
    assert_eq!(count(&hub, "scheduled_exports"), before + 1, "one scheduled export made");

    let before = count(&hub, "invites");
    let (i1, i2) = twice(&api, "invite-1", "/auth/invites", json!({"role": "member"})).await;
    assert_eq!(i1, i2, "the repeat shows the same invite link");
    assert_eq!(count(&hub, "invites"), before + 1, "one invite made");

    // Later repeats get the first answer too; a new key makes a new row.
    let keyed = api.clone().header("Idempotency-Key", "invite-1");
    assert_eq!(keyed.post("/auth/invites", json!({"role": "member"})).await.1, i1);
    assert_eq!(count(&hub, "invites"), before + 1);
    let other = api.clone().header("Idempotency-Key", "invite-2");
    other.post("/auth/invites", json!({"role": "member"})).await;
    assert_eq!(count(&hub, "invites"), before + 2, "another key is another request");

    // The key belongs to the caller: someone else's request with the same key runs for itself.
    let ben = hub.user("ben@example.org", false).await;
    let ben_api = hub.login(&ben.email).await.header("Idempotency-Key", "invite-1");
    let (status, theirs) = ben_api.post("/auth/invites", json!({"role": "viewer"})).await;
    assert_eq!(status, 201, "{theirs}");
    assert_ne!(theirs, i1, "never another caller's answer");

    // A refused request is not kept: fixed, the same key then works.
    let keyed = api.clone().header("Idempotency-Key", "comment-2");
    let (status, _) = keyed.post(&format!("/detections/{det}/comments"), json!({"body": ""})).await;
    assert!(status.is_client_error(), "an empty comment is refused");
    let (status, _) = keyed.post(&format!("/detections/{det}/comments"), json!({"body": "Fixed"})).await;
    assert!(status.is_success(), "the corrected request runs");

    // Keys are short and plain.
    let long = api.clone().header("Idempotency-Key", &"k".repeat(65));
    common::api::assert_error(
        &long.post("/auth/invites", json!({"role": "member"})).await,
        400,
        "invalid_idempotency_key",
    );
}

/// Serde's own words, which must never reach a person.
const SERDE_WORDS: [&str; 9] = [
    "invalid type",
    "invalid value",
    "expected u32",
    "expected u64",
    "expected i64",
    "at line",
    "unknown variant `",
    "missing field `",
    "Failed to deserialize",
];

#[tokio::test]
async fn wrong_types_and_missing_fields_are_answered_in_words_naming_the_field() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", true).await;
    let api = hub.login(&owner.email).await;
    let sat = seed::satellite(&hub, owner.tenant, "Garden").await;

    let posts: Vec<(&str, String, Value, &str)> = vec![
        (
            "POST",
            "/alert-rules/rules".into(),
            json!({"name": "x", "trigger": "detection", "cooldownMinutes": -1}),
            "cooldownMinutes",
        ),
        ("POST", "/alert-rules/rules".into(), json!({"name": "x", "trigger": "sometimes"}), "trigger"),
        ("POST", "/alert-rules/channels".into(), json!({"type": 5}), "type"),
        ("POST", "/alert-rules/channels".into(), json!({"name": "x", "config": {}}), "type"),
        ("POST", "/auth/invites".into(), json!({"role": "emperor"}), "role"),
        (
            "POST",
            "/exports/scheduled".into(),
            json!({"name": "x", "format": "csv", "filters": {"days": "seven"}, "cron": "0 6 * * 1", "timezone": "UTC"}),
            "days",
        ),
        ("PUT", "/auth/me/preferences".into(), json!({"timeFormat": 12}), "timeFormat"),
        ("PUT", "/settings/tenant".into(), json!({"filter_min_rms": "loud"}), "filter_min_rms"),
        ("PATCH", format!("/satellites/{sat}"), json!({"name": ["a"]}), "name"),
        ("POST", "/auth/login".into(), json!({"email": 5}), "email"),
    ];
    let mut failures = Vec::new();
    for (method, path, body, field) in posts {
        let (status, err) =
            api.send(reqwest::Method::from_bytes(method.as_bytes()).expect("method"), &path, Some(body.clone())).await;
        let message = err["message"].as_str().unwrap_or_default();
        let serde = SERDE_WORDS.iter().any(|w| message.contains(w));
        // The field is named in the message, or (settings, issue 51) by `field` beside words.
        let named = message.contains(field) || err["field"] == field;
        if !(status == 400 || status == 422) || err["code"].as_str().is_none() || serde || !named {
            failures.push(format!("{method} {path} {body}: {status} {err}"));
        }
    }
    // Malformed JSON, bad query strings and bad path parameters.
    let raw = api
        .client
        .post(hub.api("/alert-rules/rules"))
        .header("content-type", "application/json")
        .body("{\"name\": ")
        .send()
        .await
        .expect("send");
    let status = raw.status();
    let err: Value = raw.json().await.expect("json error");
    if status != 400 || SERDE_WORDS.iter().any(|w| err["message"].as_str().unwrap_or_default().contains(w)) {
        failures.push(format!("malformed JSON: {status} {err}"));
    }
    for (path, field) in [
        ("/detections?limit=many", "limit"),
        ("/satellites/not-an-id", "not-an-id"),
        ("/detections?minConfidence=x", "minConfidence"),
    ] {
        let (status, err) = api.get(path).await;
        let message = err["message"].as_str().unwrap_or_default();
        if status != 400 || SERDE_WORDS.iter().any(|w| message.contains(w)) || !message.contains(field) {
            failures.push(format!("GET {path}: {status} {err}"));
        }
    }
    assert!(failures.is_empty(), "serde's words, or no field named:\n{}", failures.join("\n"));
}
