//! A person in two teams registers devices in the team the request names, the same way on every
//! route: body `tenantId`, else `?tenantId=` or `X-Tenant-Id`, else their default team.

mod common;

use birdhub::{domain::Role, store};
use common::assert_error;
use serde_json::json;

#[tokio::test]
async fn registration_follows_the_tenant_header_and_query() {
    let hub = common::spawn_hub().await;
    let alice = hub.user("alice@example.org", false).await; // admin of her own (default) team A
    let bob = hub.user("bob@example.org", false).await; // team B
    let (b, a_id) = (bob.tenant, alice.id);
    hub.state().store.call(move |c| store::tenants::add_member(c, b, a_id, Role::Admin)).await.expect("member of B");
    let browser = hub.login(&alice.email).await;

    // The Android app sends the team as a header, with no tenantId in the body.
    let app = browser.clone().header("X-Tenant-Id", &bob.tenant.to_string());
    let (status, body) = app.post("/satellites", json!({"name": "phone", "kind": "mobile"})).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["tenantId"], bob.tenant.to_string(), "registered in the team the header names");
    assert!(body["mqtt"]["topicPrefix"].as_str().is_some_and(|p| p.contains(&bob.tenant.to_string())));
    assert!(body["mqtt"]["clientId"].as_str().is_some_and(|c| c.starts_with("mobile-")));

    // A query parameter does the same.
    let (status, body) = browser.post(&format!("/satellites?tenantId={}", bob.tenant), json!({"name": "pond"})).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["tenantId"], bob.tenant.to_string());

    // Nothing named: the default team.
    let (status, body) = browser.post("/satellites", json!({"name": "garden"})).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["tenantId"], alice.tenant.to_string());

    // The list in each team shows what was registered there.
    let (_, in_b) = browser.get(&format!("/satellites?tenantId={}", bob.tenant)).await;
    let names: Vec<&str> =
        in_b["satellites"].as_array().expect("list").iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["phone", "pond"]);
    let (_, in_a) = browser.get("/satellites").await;
    assert_eq!(in_a["total"], 1);

    // A body that contradicts the header is refused rather than guessed.
    let refused = app.post("/satellites", json!({"name": "x", "tenantId": alice.tenant})).await;
    assert_error(&refused, 400, "tenant_mismatch");
    // A team she is not in is not found, as everywhere.
    let stranger = hub.user("carol@example.org", false).await;
    let other = browser.clone().header("X-Tenant-Id", &stranger.tenant.to_string());
    assert_error(&other.post("/satellites", json!({"name": "y"})).await, 404, "tenant_not_found");
    assert_error(&browser.post("/satellites", json!({"name": "z", "kind": "tablet"})).await, 422, "invalid_kind");
}
