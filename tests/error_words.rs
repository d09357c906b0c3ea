//! Refusals a person reads in the dashboard say what is wrong in words (issue 51, defect 4): no
//! `config.url`, `timeZone:`, "IANA" or "null", and a satellite that is not there is a sentence.

mod common;

use common::{api::assert_error, sat};
use serde_json::json;

/// Words a refusal must not show: API field names and jargon.
const JARGON: [&str; 6] = ["config.", "timeZone:", "IANA", "null", "chat_bot", "chatId"];

fn in_words(message: &str) {
    for bad in JARGON {
        assert!(!message.contains(bad), "{bad:?} in {message:?}");
    }
    assert!(message.ends_with('.'), "a sentence: {message:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alert_channels_and_time_zones_are_refused_in_words() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.com", false).await;
    let api = hub.login(&owner.email).await;

    let refused = [
        (
            json!({"type": "webhook", "name": "Home", "config": {"url": "http://ha.local/api/web hook"}}),
            "The URL must not contain spaces.",
        ),
        (json!({"type": "webhook", "name": "Home", "config": {}}), "A webhook channel needs the URL to send to."),
        (
            json!({"type": "chat_bot", "name": "Bot", "config": {"token": "123:abc"}}),
            "A Telegram bot channel needs the chat id to post in.",
        ),
        (json!({"type": "email", "name": "Mail", "config": {"to": "not-an-address"}}), "is not an email address."),
        (json!({"type": "chat_block", "name": "Slack", "config": {}}), "A Slack-style webhook needs its URL."),
    ];
    for (body, says) in refused {
        let (status, got) = api.post("/alert-rules/channels", body.clone()).await;
        assert!(status.is_client_error(), "{body}: {status} {got}");
        let message = got["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{body}: {message:?} should say {says:?}");
        in_words(message);
    }

    let garden = sat::register(&api, json!({"name": "Garden"})).await;
    let got = api.put(&format!("/satellites/{}/time-zone", garden.id), json!({"timeZone": "EST"})).await;
    assert_error(&got, 422, "invalid_time_zone");
    let message = got.1["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("\"EST\" is not a time zone name"), "{message:?}");
    assert!(message.contains("Europe/Berlin"), "names one that is: {message:?}");
    in_words(message);

    let missing = "00000000-0000-4000-8000-000000000000";
    let got = api.put(&format!("/satellites/{missing}/time-zone"), json!({"timeZone": "Europe/Berlin"})).await;
    assert_eq!(got.0, 404, "{got:?}");
    assert_eq!(got.1["message"], "There is no such satellite in this team.");
}
