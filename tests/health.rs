//! The hub answers over real HTTP: health, JSON errors for unknown routes, gzip.

mod common;

use birdhub::api::ErrorBody;
use serde_json::Value;

#[tokio::test]
async fn health_answers_status_version_and_timestamp() {
    let hub = common::spawn_hub().await;
    let resp = reqwest::get(hub.api("/health")).await.expect("request");
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"].to_str().expect("ascii").starts_with("application/json"));
    let body: Value = resp.json().await.expect("json");
    assert_eq!(body["status"], "ok");
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
    let ts = body["timestamp"].as_str().expect("timestamp string");
    let parsed = chrono::DateTime::parse_from_rfc3339(ts).expect("ISO 8601");
    assert!(ts.ends_with('Z'), "UTC: {ts}");
    assert!((chrono::Utc::now() - parsed.with_timezone(&chrono::Utc)).num_seconds().abs() < 60);
    hub.stop().await.expect("clean stop");
}

#[tokio::test]
async fn unknown_routes_and_methods_get_json_errors() {
    let hub = common::spawn_hub().await;
    let client = reqwest::Client::new();

    let resp = client.get(hub.api("/no-such-thing")).send().await.expect("request");
    assert_eq!(resp.status(), 404);
    let err: ErrorBody = resp.json().await.expect("json error");
    assert_eq!(err.code, "not_found");

    let resp = client.delete(hub.api("/health")).send().await.expect("request");
    assert_eq!(resp.status(), 405);
    let err: ErrorBody = resp.json().await.expect("json error");
    assert_eq!(err.code, "method_not_allowed");
}

#[tokio::test]
async fn responses_are_gzipped_when_asked() {
    let hub = common::spawn_hub().await;
    // reqwest is built without gzip support here, so the header is ours and the body arrives raw.
    let resp = reqwest::Client::new()
        .get(hub.api("/no-such-thing"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .expect("request");
    assert_eq!(resp.headers().get("content-encoding").map(|v| v.to_str().expect("ascii")), Some("gzip"));
    let bytes = resp.bytes().await.expect("body");
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip magic");
}

#[tokio::test]
async fn the_hub_registers_itself_in_the_service_registry() {
    let hub = common::spawn_hub().await;
    let mut listed = Vec::new();
    for _ in 0..100 {
        listed = hub.hub().state.cache.registry().await;
        if !listed.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (service, instance, info) = listed.first().expect("registered");
    assert_eq!(service, "hub");
    assert_eq!(instance, &hub.hub().state.instance_id.to_string());
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));
}
