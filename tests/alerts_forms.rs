//! The alert API as the rebuilt Alerts page uses it (issue 36): a rule naming a species the model
//! does not know is refused (5); the system rule saves as it is listed and records when it fired
//! (6); a test send has the shape of a real alert with a species of the model, and alert texts
//! write readable times (22); an email channel's test says where the mail went (18).

mod common;

use std::time::Duration;

use common::{api::assert_error, receiver::Receiver, seed};
use serde_json::{Value, json};

fn iso_free(text: &str) -> bool {
    let b = text.as_bytes();
    // `2026-11-27T04:10` or `+00:00` anywhere is raw ISO.
    let t = (0..b.len().saturating_sub(12)).any(|i| {
        b[i..i + 4].iter().all(u8::is_ascii_digit) && b[i + 4] == b'-' && b[i + 7] == b'-' && b[i + 10] == b'T'
    });
    !t && !text.contains("+00:00")
}

#[tokio::test]
async fn a_species_the_model_does_not_know_is_refused_by_name_on_create_and_update() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login(&owner.email).await;

    let got = admin
        .post(
            "/alert-rules/rules",
            json!({"name": "Robins", "trigger": "detection", "conditions": {"species": ["Robin"]}}),
        )
        .await;
    assert_error(&got, 422, "unknown_species");
    assert!(got.1["message"].as_str().is_some_and(|m| m.contains("\"Robin\"")), "{}", got.1);

    // Codes and scientific names of the model are taken.
    let rule = admin
        .create(
            "/alert-rules/rules",
            json!({"name": "Thrushes", "trigger": "detection",
                   "conditions": {"species": ["turdus_merula", "Turdus philomelos"]}}),
        )
        .await;
    let path = format!("/alert-rules/rules/{}", rule["id"].as_str().expect("id"));
    let got = admin.put(&path, json!({"conditions": {"species": ["turdus_merula", "Robin", "norcar"]}})).await;
    assert_error(&got, 422, "unknown_species");
    let m = got.1["message"].as_str().unwrap_or_default();
    assert!(m.contains("\"Robin\"") && m.contains("\"norcar\"") && !m.contains("turdus_merula"), "{m}");
    // Nothing was changed by the refused update.
    let (_, rules) = admin.get("/alert-rules/rules").await;
    let saved = rules["rules"].as_array().and_then(|r| r.iter().find(|r| r["id"] == rule["id"])).cloned();
    assert_eq!(saved.map(|r| r["conditions"]["species"].clone()), Some(json!(["turdus_merula", "Turdus philomelos"])));
}

#[tokio::test]
async fn the_system_rule_saves_as_listed_and_shows_when_it_last_fired() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login(&owner.email).await;
    let (_, rules) = admin.get("/alert-rules/rules").await;
    let system = rules["rules"][0].clone();
    assert_eq!(system["systemKey"], "satellite_offline", "{rules}");
    let cooldown = system["cooldownMinutes"].as_i64().expect("cooldown");
    assert!((1..=43_200).contains(&cooldown), "the listed cooldown is one the API takes: {cooldown}");
    assert_eq!(system["lastFiredAt"], Value::Null);

    // Saved back exactly as listed: accepted.
    let path = format!("/alert-rules/rules/{}", system["id"].as_str().expect("id"));
    let body = json!({"channelIds": system["channelIds"], "cooldownMinutes": cooldown, "enabled": system["enabled"]});
    let (status, saved) = admin.put(&path, body).await;
    assert_eq!(status, 200, "{saved}");

    // A satellite goes quiet; the monitor raises the outage and the rule says when.
    let sat = seed::satellite(&hub, owner.tenant, "quiet pi").await;
    let s = hub.state();
    let now = s.clock.stamp();
    s.store.call(move |c| birdhub::store::satellites::seen(c, owner.tenant, sat, now)).await.expect("seen");
    s.clock.advance(Duration::from_secs(6 * 60));
    let pass = birdhub::usecases::monitor::check(&s.store, &s.bus, &s.clock, &s.alerts).await.expect("pass");
    assert_eq!(pass.went_offline, 1);
    let (_, rules) = admin.get("/alert-rules/rules").await;
    assert!(rules["rules"][0]["lastFiredAt"].is_string(), "last fired is recorded: {}", rules["rules"][0]);
    let (_, alerts) = admin.get("/alerts").await;
    let message = alerts["alerts"][0]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains("quiet pi") && iso_free(&message), "a readable time: {message}");
    assert!(message.contains(&birdhub::time::readable(now)), "{message}");
}

#[tokio::test]
async fn a_test_send_has_the_shape_of_a_real_alert_and_texts_write_readable_times() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login(&owner.email).await;
    let rx = Receiver::start(None).await;
    let hook = admin
        .create("/alert-rules/channels", json!({"type": "webhook", "name": "Home", "config": {"url": rx.url("/a")}}))
        .await;
    let (status, report) =
        admin.post_empty(&format!("/alert-rules/channels/{}/test", hook["id"].as_str().expect("id"))).await;
    assert_eq!((status.as_u16(), report["delivered"].clone()), (200, json!(true)), "{report}");
    assert!(report["summary"].as_str().is_some_and(|s| s.contains("HTTP 200")), "{report}");
    let test = rx.wait_for(1, 10).await[0].json();

    // The species is one of the model's, under the code real alerts carry.
    let code = test["data"]["speciesCode"].as_str().expect("code").to_owned();
    let labels = hub.state().names.classes().expect("the model's labels");
    assert!(labels.index_of(&code).is_some(), "{code} is a species of the model");
    assert_eq!(code, birdhub::inference::labels::species_code(test["data"]["species"].as_str().expect("species")));
    assert!(iso_free(test["message"].as_str().expect("message")), "{test}");

    // A real alert to the same receiver.
    admin
        .create("/alert-rules/rules", json!({"name": "Every bird", "trigger": "detection", "channelIds": [hook["id"]]}))
        .await;
    let sat = seed::satellite(&hub, owner.tenant, "Backyard").await;
    let heard = seed::bird_alert(&hub, owner.tenant, sat).await;
    let real = rx.wait_for(2, 20).await[1].json();
    let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
    assert_eq!(keys(&test), keys(&real), "the same top-level keys:\n{test}\n{real}");
    assert_eq!(keys(&test["data"]), keys(&real["data"]), "the same data keys:\n{test}\n{real}");
    let message = real["message"].as_str().expect("message");
    assert!(iso_free(message) && message.contains(&birdhub::time::readable(heard)), "{message}");
    assert!(
        real["link"].as_str().is_some_and(
            |l| l.ends_with(&format!("/detections/{}", real["data"]["detectionId"].as_str().unwrap_or("?")))
        ),
        "{real}"
    );
}

#[tokio::test]
async fn an_email_test_says_where_the_mail_went_or_why_not() {
    let (hub, sink) = common::spawn_hub_with_mail().await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login(&owner.email).await;
    let mail = admin
        .create(
            "/alert-rules/channels",
            json!({"type": "email", "name": "Us", "config": {"to": ["a@example.org", "b@example.org"]}}),
        )
        .await;
    let (_, report) =
        admin.post_empty(&format!("/alert-rules/channels/{}/test", mail["id"].as_str().expect("id"))).await;
    assert_eq!(report["delivered"], true, "{report}");
    assert_eq!(report["summary"], "Sent to 2 addresses: a@example.org, b@example.org.", "{report}");
    assert_eq!(sink.wait_for(1).await.len(), 1);

    // A hub without a mail server: the answer says so, in words, not "no HTTP status".
    let bare = common::spawn_hub().await;
    let owner = bare.user("owner@example.org", false).await;
    let admin = bare.login(&owner.email).await;
    let mail = admin
        .create("/alert-rules/channels", json!({"type": "email", "name": "Us", "config": {"to": ["a@example.org"]}}))
        .await;
    let (_, report) =
        admin.post_empty(&format!("/alert-rules/channels/{}/test", mail["id"].as_str().expect("id"))).await;
    let summary = report["summary"].as_str().unwrap_or_default();
    assert_eq!(report["delivered"], false, "{report}");
    assert!(summary.starts_with("Not sent: ") && summary.len() > "Not sent: .".len(), "{report}");
    assert!(!summary.contains("HTTP"), "{report}");
}
