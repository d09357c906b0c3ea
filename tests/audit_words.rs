//! The audit log says what changed (issue 51, defect 14) over real HTTP: each entry of
//! `GET /api/admin/audit-log` keeps its shape and adds `summary` (the action in words, naming its
//! object), `targetName` and `changes` (each setting from → to). Secrets never appear: not a
//! webhook URL's token, a channel's secret, a BirdWeather token nor a satellite's key.

mod common;

use common::sat;
use serde_json::{Value, json};

/// The newest entry of `action`.
async fn newest(admin: &common::Api, action: &str) -> Value {
    let (status, log) = admin.get(&format!("/admin/audit-log?action={action}&limit=1")).await;
    assert_eq!(status, 200, "{log}");
    log["entries"][0].clone()
}

#[tokio::test]
async fn entries_name_their_object_say_what_changed_and_hide_secrets() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let ada = hub.user("ada@example.org", false).await;
    let api = hub.login(&ada.email).await;
    let admin = hub.login(&root.email).await;

    // Team settings: one real change among fields sent unchanged, as the dashboard's form does.
    let (_, now) = api.get("/settings/tenant").await;
    let mut sent = now["settings"].clone();
    sent["filter_enabled"] = json!(!now["settings"]["filter_enabled"].as_bool().unwrap_or(false));
    sent["heartbeat_interval_sec"] = json!(45);
    sent.as_object_mut().expect("object").retain(|k, _| !k.starts_with("public_page_"));
    assert_eq!(api.put("/settings/tenant", sent).await.0, 200);
    let e = newest(&admin, "admin.tenant_settings_updated").await;
    let changes = e["changes"].as_array().expect("changes").clone();
    assert_eq!(changes.len(), 2, "only what changed: {e}");
    let beat = changes.iter().find(|c| c["setting"] == "heartbeat_interval_sec").expect("heartbeat change");
    assert_eq!((beat["from"].clone(), beat["to"].clone()), (json!(30), json!(45)), "{beat}");
    assert!(beat["label"].as_str().is_some_and(|l| l.starts_with("Heartbeat")), "{beat}");
    assert!(e["summary"].as_str().is_some_and(|s| s.starts_with("Team settings")), "{e}");
    assert!(e["details"]["changed"].is_array(), "the old field stays: {e}");

    // A satellite is named, and its actions read as words.
    let r = sat::register(&api, json!({"name": "Garden", "deviceId": "pi-7"})).await;
    let again = sat::register(&api, json!({"name": "Garden", "deviceId": "pi-7"})).await;
    assert_eq!(again.id, r.id);
    let e = newest(&admin, "satellite.reregistered").await;
    assert_eq!(e["targetName"], "Garden", "{e}");
    assert_eq!(e["summary"], "Satellite \"Garden\" registered again", "{e}");
    let token = "bw-station-token-8f3a";
    let (status, body) =
        api.put(&format!("/satellites/{}/birdweather", r.id), json!({"token": token, "enabled": true})).await;
    assert_eq!(status, 200, "{body}");
    let e = newest(&admin, "admin.satellite_birdweather_changed").await;
    assert_eq!(e["summary"], "BirdWeather uploads of satellite \"Garden\" changed", "{e}");
    let e = newest(&admin, "admin.api_key_created").await;
    assert!(e.is_null() || !e["summary"].as_str().unwrap_or_default().contains("Api key"), "{e}");

    // A webhook whose URL carries a token, and a shared secret.
    let hook = "http://127.0.0.1:9/hooks/T0001/B0002/sEcReTpAtHtOkEn?token=qUeRyToKeN";
    let (status, body) = api
        .post(
            "/alert-rules/channels",
            json!({"type": "webhook", "name": "Home", "config": {"url": hook, "secret": "birds-are-real"}}),
        )
        .await;
    assert!(status.is_success(), "{body}");

    // A row written before entries named their object still reads as words.
    let t = ada.tenant;
    let sid = r.id.clone();
    hub.sql(move |c| {
        c.execute(
            "INSERT INTO audit_log (tenant_id, action, target_type, target_id, details_json, created_at)
             VALUES (?1, 'satellite.registered', 'satellite', ?2, '{}', '2026-01-01T00:00:00Z'),
                    (?1, 'admin.tenant_settings_updated', 'tenant', ?1, '{\"changed\":[\"filter_enabled\",\"heartbeat_interval_sec\"]}', '2026-01-01T00:00:00Z')",
            [t.to_string(), sid],
        )
        .expect("old rows")
    });
    let (_, log) = admin.get("/admin/audit-log?limit=200").await;
    let entries = log["entries"].as_array().expect("entries");
    let old = entries.iter().find(|e| e["createdAt"].as_str().is_some_and(|s| s.starts_with("2026-01-01")));
    assert!(old.is_some(), "{log}");
    for e in entries {
        let summary = e["summary"].as_str().unwrap_or_default();
        assert!(!summary.is_empty(), "every entry says what happened: {e}");
        assert!(!summary.contains('_') && !summary.contains("null"), "words, not codes: {summary}");
        if e["action"] == "satellite.registered" {
            assert_eq!(summary, "Satellite \"Garden\" registered", "{e}");
        }
    }
    let old_settings = entries
        .iter()
        .find(|e| e["action"] == "admin.tenant_settings_updated" && e["changes"].as_array().is_some_and(Vec::is_empty))
        .expect("the old settings row");
    assert!(old_settings["changeLines"][0].as_str().is_some_and(|s| s.contains("Heartbeat")), "{old_settings}");

    // No secret anywhere in the log.
    let text = log.to_string();
    for secret in [token, "sEcReTpAtHtOkEn", "qUeRyToKeN", "birds-are-real", r.api_key.as_str(), r.password.as_str()] {
        assert!(!text.contains(secret), "{secret} leaked into the audit log");
    }
}

#[tokio::test]
async fn hub_settings_say_from_and_to() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let admin = hub.login(&root.email).await;
    let (status, body) = admin.put("/settings/platform", json!({"channel_targets": "lan"})).await;
    assert_eq!(status, 200, "{body}");
    let e = newest(&admin, "admin.platform_settings_updated").await;
    let c = &e["changes"][0];
    assert_eq!(
        (c["setting"].clone(), c["from"].clone(), c["to"].clone()),
        (json!("channel_targets"), json!("loopback"), json!("lan")),
        "{e}"
    );
    assert_eq!(e["summary"], "Hub settings updated", "{e}");
    assert!(e["changeLines"][0].as_str().is_some_and(|l| l.contains("→")), "{e}");
}
