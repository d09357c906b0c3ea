//! Every route picks the team the same way: the body's `tenantId`, else `?tenantId=` or the
//! `X-Tenant-Id` header, else the key's team or the user's default team. A user in two teams who
//! names the second one acts in it, never silently in their default team.

mod common;

use birdhub::{domain::Role, store};
use common::{TestHub, TestUser, assert_error};
use serde_json::json;

/// Ada (default team A, her own) is also an admin of Bob's team B.
async fn two_teams(hub: &TestHub) -> (TestUser, TestUser) {
    let ada = hub.user("ada@example.org", false).await;
    let bob = hub.user("bob@example.org", false).await;
    let (b, a) = (bob.tenant, ada.id);
    hub.state().store.call(move |c| store::tenants::add_member(c, b, a, Role::Admin)).await.expect("member of B");
    (ada, bob)
}

#[tokio::test]
async fn an_invite_lands_in_the_team_named_by_the_header_or_query() {
    let hub = common::spawn_hub().await;
    let (ada, bob) = two_teams(&hub).await;
    let api = hub.login(&ada.email).await;
    let in_b = api.clone().header("X-Tenant-Id", &bob.tenant.to_string());
    let (status, invite) = in_b.post("/auth/invites", json!({"role": "member"})).await;
    assert_eq!(status, 201, "{invite}");
    assert_eq!(invite["tenantId"], bob.tenant.to_string(), "the header named team B");

    let (status, invite) = api.post(&format!("/auth/invites?tenantId={}", bob.tenant), json!({"role": "viewer"})).await;
    assert_eq!(status, 201, "{invite}");
    assert_eq!(invite["tenantId"], bob.tenant.to_string(), "the query named team B");

    let (_, invite) = api.post("/auth/invites", json!({"role": "viewer"})).await;
    assert_eq!(invite["tenantId"], ada.tenant.to_string(), "nothing named: the default team");

    let (status, invite) = in_b.post("/auth/invites", json!({"role": "viewer", "tenantId": bob.tenant})).await;
    assert_eq!((status.as_u16(), invite["tenantId"].clone()), (201, json!(bob.tenant.to_string())));
    assert_error(
        &in_b.post("/auth/invites", json!({"role": "viewer", "tenantId": ada.tenant})).await,
        400,
        "tenant_mismatch",
    );
}

#[tokio::test]
async fn an_api_key_lands_in_the_team_named_by_the_header() {
    let hub = common::spawn_hub().await;
    let (ada, bob) = two_teams(&hub).await;
    let api = hub.login(&ada.email).await;
    let in_b = api.clone().header("X-Tenant-Id", &bob.tenant.to_string());
    let (status, key) = in_b.post("/api-keys", json!({"name": "weather", "role": "viewer"})).await;
    assert_eq!(status, 201, "{key}");
    assert_eq!(key["tenantId"], bob.tenant.to_string());
    let (_, listed) = in_b.get("/api-keys").await;
    assert_eq!(listed["apiKeys"][0]["id"], key["id"], "listed in team B");
    let (_, in_a) = api.get("/api-keys").await;
    assert_eq!(in_a["apiKeys"], json!([]), "not in the default team A");

    assert_error(
        &in_b.post("/api-keys", json!({"name": "x", "role": "viewer", "tenantId": ada.tenant})).await,
        400,
        "tenant_mismatch",
    );
    assert_error(
        &api.clone()
            .header("X-Tenant-Id", "not-a-uuid")
            .post("/api-keys", json!({"name": "x", "role": "viewer"}))
            .await,
        400,
        "invalid_tenant_id",
    );
    let stranger = hub.user("eve@example.org", false).await;
    assert_error(
        &hub.login(&stranger.email)
            .await
            .header("X-Tenant-Id", &bob.tenant.to_string())
            .post("/api-keys", json!({"name": "x", "role": "viewer"}))
            .await,
        404,
        "tenant_not_found",
    );
}
