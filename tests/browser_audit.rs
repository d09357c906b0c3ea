//! The audit log on `/admin` in a real browser (issue 51, defect 14): each row says in words
//! what happened to which object ("Satellite "Garden" registered again", "Two-factor sign-in
//! turned on"), settings rows say what changed from → to, and no secret is on the page.

mod common;

use common::{PASSWORD, browser::Browser, sat};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_says_what_changed_to_what() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let ada = hub.user("ada@example.org", false).await;
    let api = hub.login(&ada.email).await;
    let r = sat::register(&api, json!({"name": "Garden", "deviceId": "pi-7"})).await;
    sat::register(&api, json!({"name": "Garden", "deviceId": "pi-7"})).await;
    let token = "bw-station-token-8f3a";
    let (status, body) =
        api.put(&format!("/satellites/{}/birdweather", r.id), json!({"token": token, "enabled": true})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(api.put("/settings/tenant", json!({"heartbeat_interval_sec": 45})).await.0, 200);
    assert_eq!(api.put("/settings/tenant", json!({"heartbeat_interval_sec": 60, "filter_enabled": true})).await.0, 200);
    let (status, key) = api.post("/api-keys", json!({"name": "Home Assistant", "role": "viewer"})).await;
    assert!(status.is_success(), "{key}");
    common::turn_on_totp(&hub, &api).await;

    let b = Browser::start(hub.http_addr.port(), "audit-words").await;
    b.sign_in(&root.email, PASSWORD, None).await;
    b.goto("/admin#audit").await;
    let audit = b.text("#audit").await;
    for words in [
        "Satellite \"Garden\" registered again",
        "Satellite \"Garden\" registered",
        "BirdWeather uploads of satellite \"Garden\" changed",
        "Two-factor sign-in turned on",
        "API key \"Home Assistant\" made",
        "Heartbeat every (seconds): 30 → 45",
        "Heartbeat every (seconds): 45 → 60",
    ] {
        assert!(audit.contains(words), "{words:?} is not in the log: {audit}");
    }
    for code in ["Reregistered", "Api key created", "Mfa enabled", "Satellite birdweather changed", "Started"] {
        assert!(!audit.contains(code), "{code:?} reads like a code: {audit}");
    }
    let page = b.js("return document.documentElement.outerHTML;").await;
    let page = page.as_str().unwrap_or_default();
    for secret in [token, r.api_key.as_str(), key["key"].as_str().unwrap_or("no key")] {
        assert!(!page.contains(secret), "a secret is on the page");
    }
    // The filter's choices are words too.
    let choices = b.text("#audit-action").await;
    assert!(choices.contains("Two-factor sign-in turned on") && !choices.contains("Mfa"), "{choices}");
    assert_eq!(
        b.js("return document.documentElement.scrollWidth <= window.innerWidth;").await,
        json!(true),
        "no sideways scroll"
    );
    b.shot("admin").await;
    b.close().await;
}
