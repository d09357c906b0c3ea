//! The role matrix (SPEC 5.2): each guard level allowed and denied, and other teams' ids as 404.

mod common;

use birdhub::domain::Role;
use common::assert_error;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn every_guard_level_allows_and_denies_the_right_callers() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let owner = hub.user("owner@example.org", false).await;
    let outsider = hub.user("outsider@example.org", false).await;
    hub.member_of("viewer@example.org", owner.tenant, Role::Viewer).await;
    hub.member_of("member@example.org", owner.tenant, Role::Member).await;
    let t = owner.tenant;

    let anon = hub.anon();
    let viewer = hub.login("viewer@example.org").await;
    let member = hub.login("member@example.org").await;
    let admin = hub.login(&owner.email).await;
    let other = hub.login(&outsider.email).await;
    let platform = hub.login(&root.email).await;

    // (method, path, body, minimum level) with the team named explicitly.
    let q = format!("tenantId={t}");
    let routes: Vec<(Method, String, Option<serde_json::Value>, &str)> = vec![
        (Method::GET, "/health".into(), None, "public"),
        (Method::GET, "/auth/me".into(), None, "authenticated"),
        (Method::GET, "/tenants".into(), None, "authenticated"),
        (Method::GET, format!("/settings/tenant?{q}"), None, "viewer"),
        (Method::PUT, format!("/settings/tenant?{q}"), Some(json!({"heartbeat_interval_sec": 45})), "admin"),
        (Method::GET, format!("/auth/invites?{q}"), None, "admin"),
        (Method::GET, format!("/auth/members?{q}"), None, "admin"),
        (Method::GET, format!("/api-keys?{q}"), None, "admin"),
        (Method::GET, "/admin/users".into(), None, "platform"),
        (Method::GET, "/admin/audit-log".into(), None, "platform"),
        (Method::GET, "/settings/platform".into(), None, "platform"),
    ];
    let rank = |level: &str| {
        ["public", "authenticated", "viewer", "member", "admin", "platform"].iter().position(|l| *l == level)
    };
    // Each caller with the highest level they hold in team `t` (the outsider is signed in but not a member).
    let callers = [
        ("anon", &anon, 0),
        ("outsider", &other, 1),
        ("viewer", &viewer, 2),
        ("member", &member, 3),
        ("admin", &admin, 4),
        ("platform", &platform, 5),
    ];
    for (method, path, body, level) in &routes {
        let need = rank(level).expect("level");
        for (who, api, have) in &callers {
            let (status, resp) = api.send(method.clone(), path, body.clone()).await;
            let allowed = *have >= need;
            if allowed {
                assert!(status.is_success(), "{who} may {method} {path}: {status} {resp}");
            } else {
                let expected = match (*have, need) {
                    (0, _) => 401,
                    (1, 2..=4) => 404, // not a member: the team is invisible
                    _ => 403,
                };
                assert_eq!(status.as_u16(), expected, "{who} may not {method} {path}: {resp}");
                assert!(resp["code"].is_string() && resp["message"].is_string(), "{resp}");
            }
        }
    }
}

#[tokio::test]
async fn other_teams_ids_answer_404_never_403_or_data() {
    let hub = common::spawn_hub().await;
    let ada = hub.user("ada@example.org", false).await;
    let bob = hub.user("bob@example.org", false).await;
    let ada_api = hub.login(&ada.email).await;
    let bob_api = hub.login(&bob.email).await;

    let (_, invite) = bob_api.post("/auth/invites", json!({"role": "viewer"})).await;
    let (_, key) = bob_api.post("/api-keys", json!({"name": "bob's", "role": "viewer"})).await;

    assert_error(&ada_api.get(&format!("/settings/tenant?tenantId={}", bob.tenant)).await, 404, "tenant_not_found");
    assert_error(&ada_api.header_tenant(bob.tenant).await, 404, "tenant_not_found");
    assert_error(
        &ada_api.put(&format!("/settings/tenant?tenantId={}", bob.tenant), json!({"heartbeat_interval_sec": 45})).await,
        404,
        "tenant_not_found",
    );
    assert_error(
        &ada_api.post("/auth/invites", json!({"tenantId": bob.tenant, "role": "admin"})).await,
        404,
        "tenant_not_found",
    );
    assert_error(
        &ada_api.delete(&format!("/auth/invites/{}", invite["id"].as_str().expect("id"))).await,
        404,
        "invite_not_found",
    );
    assert_error(
        &ada_api.delete(&format!("/api-keys/{}", key["id"].as_str().expect("id"))).await,
        404,
        "api_key_not_found",
    );
    assert_error(&ada_api.post_empty(&format!("/tenants/{}/leave", bob.tenant)).await, 404, "tenant_not_found");
    assert_error(
        &ada_api.get(&format!("/auth/members?tenantId={}", uuid::Uuid::new_v4())).await,
        404,
        "tenant_not_found",
    );
    assert_error(&ada_api.get("/auth/members?tenantId=not-a-uuid").await, 400, "invalid_tenant_id");
    // Bob's things are untouched.
    assert_eq!(bob_api.get("/auth/invites").await.1["invites"].as_array().map(Vec::len), Some(1));
}

trait HeaderTenant {
    fn header_tenant(
        &self,
        t: birdhub::ids::TenantId,
    ) -> impl std::future::Future<Output = (reqwest::StatusCode, serde_json::Value)>;
}

impl HeaderTenant for common::Api {
    async fn header_tenant(&self, t: birdhub::ids::TenantId) -> (reqwest::StatusCode, serde_json::Value) {
        self.clone().header("x-tenant-id", &t.to_string()).get("/settings/tenant").await
    }
}

#[tokio::test]
async fn the_member_guard_admits_members_and_above_only() {
    use birdhub::auth::{AuthContext, Principal, guard};
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let viewer = hub.member_of("viewer@example.org", owner.tenant, Role::Viewer).await;
    let member = hub.member_of("member@example.org", owner.tenant, Role::Member).await;
    let outsider = hub.user("outsider@example.org", false).await;
    let ctx = |u: &common::TestUser| AuthContext {
        principal: Principal::User { user_id: u.id, session_id: "s".into() },
        is_platform_admin: false,
        default_tenant: Some(u.tenant),
        mfa_enrollment_due: false,
    };
    let state = hub.state().clone();
    let tenant = owner.tenant;
    let check = |u: &common::TestUser| {
        let (c, state) = (ctx(u), state.clone());
        // The guard's refusal as the client meets it (auth::AuthError through api's one mapping).
        async move {
            guard::access(&state, &c, Some(tenant), Role::Member)
                .await
                .map(|a| a.role)
                .map_err(birdhub::api::ApiError::from)
        }
    };
    assert!(matches!(check(&viewer).await, Err(birdhub::api::ApiError::Forbidden("insufficient_role", _))));
    assert_eq!(check(&member).await.ok(), Some(Role::Member));
    assert_eq!(check(&owner).await.ok(), Some(Role::Admin));
    assert!(matches!(check(&outsider).await, Err(birdhub::api::ApiError::NotFound("tenant_not_found", _))));
    let key = AuthContext {
        principal: Principal::ApiKey { key_id: "k".into(), tenant_id: owner.tenant, role: Role::Member },
        is_platform_admin: false,
        default_tenant: Some(owner.tenant),
        mfa_enrollment_due: false,
    };
    assert_eq!(
        guard::access(hub.state(), &key, None, Role::Member).await.ok().map(|a| a.tenant_id),
        Some(owner.tenant)
    );
    assert!(guard::access(hub.state(), &key, None, Role::Admin).await.is_err());
}
