//! Platform admin routes (SPEC 4.13), keys, the internal key and the audit log over real HTTP.

mod common;

use birdhub::domain::Role;
use common::{PASSWORD, assert_error};
use serde_json::json;

#[tokio::test]
async fn admins_list_search_and_filter_users() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let ada = hub.user("ada@example.org", false).await;
    hub.user("bob@example.org", false).await;
    hub.member_of("carol@example.org", ada.tenant, Role::Viewer).await;
    let admin = hub.login(&root.email).await;

    let (status, all) = admin.get("/admin/users").await;
    assert_eq!(status, 200);
    assert_eq!(all["total"], 4);
    let (_, found) = admin.get("/admin/users?search=ADA").await;
    assert_eq!(found["total"], 1);
    assert_eq!(found["users"][0]["email"], "ada@example.org");
    let (_, in_team) = admin.get(&format!("/admin/users?tenantId={}", ada.tenant)).await;
    assert_eq!(in_team["total"], 2);
    admin.post_empty(&format!("/admin/users/{}/block", ada.id)).await;
    assert_eq!(admin.get("/admin/users?status=blocked").await.1["total"], 1);
    assert_eq!(admin.get("/admin/users?status=active").await.1["total"], 3);
    let (_, page) = admin.get("/admin/users?limit=2&offset=2").await;
    assert_eq!((page["users"].as_array().map(Vec::len), page["total"].clone()), (Some(2), json!(4)));
    assert_error(&admin.get("/admin/users?status=gone").await, 400, "invalid_status");
    assert_error(&admin.get("/admin/users?limit=0").await, 400, "invalid_limit");
    assert_error(&admin.get("/admin/users?limit=-3").await, 400, "invalid_query");

    let (status, detail) = admin.get(&format!("/admin/users/{}", ada.id)).await;
    assert_eq!(status, 200);
    assert_eq!(detail["tenants"][0]["id"], ada.tenant.to_string());
    assert_error(&admin.get(&format!("/admin/users/{}", uuid::Uuid::new_v4())).await, 404, "user_not_found");
    assert_error(&admin.get("/admin/users/not-a-uuid").await, 400, "invalid_path");
    assert_error(&hub.login("bob@example.org").await.get("/admin/users").await, 403, "platform_admin_required");
}

#[tokio::test]
async fn platform_admin_is_read_from_the_database_on_every_request() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let second = hub.user("second@example.org", true).await;
    let token = hub.token(&second.email).await;
    let api = common::Api::with_bearer(&hub.base_url, &token);
    assert_eq!(api.get("/admin/users").await.0, 200);
    let admin = hub.login(&root.email).await;
    let (status, user) = admin.put(&format!("/admin/users/{}", second.id), json!({"isPlatformAdmin": false})).await;
    assert_eq!((status.as_u16(), user["isPlatformAdmin"].clone()), (200, json!(false)));
    assert_error(&api.get("/admin/users").await, 403, "platform_admin_required");
    assert_error(
        &admin.put(&format!("/admin/users/{}", root.id), json!({"isPlatformAdmin": false})).await,
        409,
        "last_platform_admin",
    );
    assert_error(
        &admin.put(&format!("/admin/users/{}", second.id), json!({"email": "root@example.org"})).await,
        409,
        "email_taken",
    );
    let edited: i64 = hub.sql(|c| {
        c.query_row("SELECT count(*) FROM audit_log WHERE action = 'admin.user_edited'", [], |r| r.get(0)).expect("n")
    });
    assert_eq!(edited, 1);
}

#[tokio::test]
async fn admin_reset_password_gives_a_working_link() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let ada = hub.user("ada@example.org", false).await;
    let (status, body) =
        hub.login(&root.email).await.post_empty(&format!("/admin/users/{}/reset-password", ada.id)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["mailed"], false, "no SMTP configured here");
    let url = body["resetUrl"].as_str().expect("url");
    let token = url.rsplit('=').next().expect("token");
    assert_eq!(
        hub.anon().post("/auth/reset-password", json!({"token": token, "password": "set by link 1"})).await.0,
        204
    );
    assert_eq!(hub.anon().post("/auth/login", json!({"email": ada.email, "password": "set by link 1"})).await.0, 200);
}

#[tokio::test]
async fn adding_removing_and_deleting_users() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let ada = hub.user("ada@example.org", false).await;
    let bob = hub.user("bob@example.org", false).await;
    let admin = hub.login(&root.email).await;

    let path = format!("/admin/users/{}/tenants", bob.id);
    let (status, added) = admin.post(&path, json!({"tenantId": ada.tenant, "role": "member"})).await;
    assert_eq!(status, 201, "{added}");
    assert_error(&admin.post(&path, json!({"tenantId": ada.tenant, "role": "viewer"})).await, 409, "already_member");
    assert_error(
        &admin.post(&path, json!({"tenantId": uuid::Uuid::new_v4(), "role": "viewer"})).await,
        404,
        "tenant_not_found",
    );
    assert_error(&admin.post(&path, json!({"tenantId": ada.tenant, "role": "owner"})).await, 422, "invalid_body");
    let member_id = added["membershipId"].as_str().expect("membership id").to_owned();

    let (status, m) = admin.put(&format!("/admin/members/{member_id}/role"), json!({"role": "admin"})).await;
    assert_eq!((status.as_u16(), m["role"].clone()), (200, json!("admin")));
    let (status, m) = admin.post_empty(&format!("/admin/members/{member_id}/transfer-ownership")).await;
    assert_eq!((status.as_u16(), m["isOwner"].clone()), (200, json!(true)));
    let owner: String = hub.sql(|c| {
        c.query_row("SELECT owner_user_id FROM tenants WHERE id = ?1", [ada.tenant.to_string()], |r| r.get(0))
            .expect("owner")
    });
    assert_eq!(owner, bob.id.to_string());
    assert_error(
        &admin.put(&format!("/admin/members/{member_id}/role"), json!({"role": "viewer"})).await,
        400,
        "owner_must_be_admin",
    );
    assert_error(
        &admin.delete(&format!("/admin/users/{}/tenants/{}", bob.id, ada.tenant)).await,
        400,
        "OWNER_CANNOT_LEAVE",
    );
    assert_error(&admin.delete(&format!("/admin/users/{}", bob.id)).await, 409, "transfer_ownership_first");
    assert_eq!(
        admin.delete(&format!("/admin/users/{}/tenants/{}", ada.id, ada.tenant)).await.0,
        204,
        "the former owner can now be removed"
    );
    assert_error(
        &admin.delete(&format!("/admin/users/{}/tenants/{}", ada.id, ada.tenant)).await,
        404,
        "member_not_found",
    );

    assert_error(&admin.delete(&format!("/admin/users/{}", root.id)).await, 400, "cannot_delete_self");
    assert_eq!(admin.delete(&format!("/admin/users/{}", ada.id)).await.0, 204);
    assert_error(&admin.delete(&format!("/admin/users/{}", ada.id)).await, 404, "user_not_found");

    let actions: Vec<String> = hub.sql(|c| {
        let mut s = c.prepare("SELECT action FROM audit_log WHERE action LIKE 'admin.%' ORDER BY id").expect("q");
        s.query_map([], |r| r.get(0)).expect("rows").map(|r| r.expect("row")).collect()
    });
    assert_eq!(
        actions,
        [
            "admin.user_added_to_tenant",
            "admin.member_role_changed",
            "admin.ownership_transferred",
            "admin.user_removed_from_tenant",
            "admin.user_deleted",
        ]
    );
}

/// Inserts a satellite registered by `user` in `tenant`, with a satellite-scoped API key.
fn device(hub: &common::TestHub, tenant: &str, user: &str, name: &str) -> String {
    let id = uuid::Uuid::new_v4().to_string();
    hub.sql(|c| {
        c.execute(
            "INSERT INTO satellites (id, tenant_id, name, registered_by, mqtt_password_hash) VALUES (?1, ?2, ?3, ?4, 'hash')",
            [&id, tenant, name, user],
        )
        .expect("satellite");
        c.execute(
            "INSERT INTO api_keys (id, tenant_id, satellite_id, name, key_hash, key_prefix, role) VALUES (?1, ?2, ?3, 'device', ?4, 'x', 'member')",
            [&uuid::Uuid::new_v4().to_string(), tenant, &id, &uuid::Uuid::new_v4().to_string()],
        )
        .expect("key");
    });
    id
}

fn device_state(hub: &common::TestHub, id: &str) -> (Option<String>, String, i64) {
    hub.sql(|c| {
        c.query_row(
            "SELECT registered_by, mqtt_password_hash, (SELECT count(*) FROM api_keys WHERE satellite_id = s.id AND revoked_at IS NULL)
             FROM satellites s WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("device")
    })
}

#[tokio::test]
async fn removing_a_member_disconnects_their_devices_unless_kept() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let owner = hub.user("owner@example.org", false).await;
    let t = owner.tenant.to_string();
    let kept = hub.member_of("kept@example.org", owner.tenant, Role::Member).await;
    let gone = hub.member_of("gone@example.org", owner.tenant, Role::Member).await;
    let leaver = hub.member_of("leaver@example.org", owner.tenant, Role::Member).await;
    let deleted = hub.member_of("deleted@example.org", owner.tenant, Role::Member).await;
    let d_deleted = device(&hub, &t, &deleted.id.to_string(), "deleted-pi");
    let d_kept = device(&hub, &t, &kept.id.to_string(), "kept-pi");
    let d_gone = device(&hub, &t, &gone.id.to_string(), "gone-pi");
    let d_left = device(&hub, &t, &leaver.id.to_string(), "left-pi");
    let admin = hub.login(&root.email).await;
    let mut events = hub.state().bus.subscribe("test");

    assert_eq!(admin.delete(&format!("/admin/users/{}/tenants/{}?devices=keep", kept.id, owner.tenant)).await.0, 204);
    let (by, hash, keys) = device_state(&hub, &d_kept);
    assert_eq!((by, hash.as_str(), keys), (None, "hash", 1), "kept: team-owned, still connected");

    assert_eq!(admin.delete(&format!("/admin/users/{}/tenants/{}", gone.id, owner.tenant)).await.0, 204);
    let (by, hash, keys) = device_state(&hub, &d_gone);
    assert_eq!(
        (by, hash.as_str(), keys),
        (None, "!revoked", 0),
        "default: team-owned, keys expired, broker login dropped"
    );
    assert!(
        matches!(events.recv().await, Some(birdhub::events::Event::SatelliteRevoked { .. })),
        "the broker is told to kick it"
    );

    assert_eq!(hub.login(&leaver.email).await.post_empty(&format!("/tenants/{}/leave", owner.tenant)).await.0, 204);
    assert_eq!(device_state(&hub, &d_left), (None, "!revoked".into(), 0), "leaving disconnects too");
    // Deleting an account releases and disconnects its devices like a removal.
    assert_eq!(admin.delete(&format!("/admin/users/{}", deleted.id)).await.0, 204);
    assert_eq!(device_state(&hub, &d_deleted), (None, "!revoked".into(), 0), "deleting disconnects too");
    // Each move to team ownership is audited, naming the device, the former registrant and why.
    let transfers: Vec<(String, String, String)> = hub.sql(|c| {
        let mut stmt = c
            .prepare(
                "SELECT target_id, json_extract(details_json, '$.from'), json_extract(details_json, '$.reason')
                 FROM audit_log WHERE action = 'admin.satellite_transferred' ORDER BY id",
            )
            .expect("prepare");
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).expect("query").map(|r| r.expect("row")).collect()
    });
    assert_eq!(
        transfers,
        vec![
            (d_kept.clone(), kept.id.to_string(), "member_removed".into()),
            (d_gone.clone(), gone.id.to_string(), "member_removed".into()),
            (d_left.clone(), leaver.id.to_string(), "member_left".into()),
            (d_deleted.clone(), deleted.id.to_string(), "account_deleted".into()),
        ]
    );
    assert_error(
        &admin.delete(&format!("/admin/users/{}/tenants/{}?devices=maybe", owner.id, owner.tenant)).await,
        400,
        "invalid_devices",
    );
}

#[tokio::test]
async fn api_keys_authenticate_until_revoked_and_only_in_their_team() {
    let hub = common::spawn_hub().await;
    let ada = hub.user("ada@example.org", false).await;
    let bob = hub.user("bob@example.org", false).await;
    let api = hub.login(&ada.email).await;
    let (status, created) = api.post("/api-keys", json!({"name": "weather station", "role": "viewer"})).await;
    assert_eq!(status, 201, "{created}");
    let raw = created["key"].as_str().expect("raw key").to_owned();
    assert_eq!(raw.len(), 64);
    assert!(raw.chars().all(|c| c.is_ascii_hexdigit()));
    let stored: String = hub.sql(|c| c.query_row("SELECT key_hash FROM api_keys", [], |r| r.get(0)).expect("hash"));
    assert_ne!(stored, raw, "only the SHA-256 is stored");
    let (_, listed) = api.get("/api-keys").await;
    assert!(!listed.to_string().contains(&raw), "never shown again");

    let key = common::Api::with_bearer(&hub.base_url, &raw);
    assert_eq!(key.get("/settings/tenant").await.0, 200, "a viewer key reads");
    assert_error(&key.put("/settings/tenant", json!({"heartbeat_interval_sec": 60})).await, 403, "insufficient_role");
    assert_error(&key.get(&format!("/settings/tenant?tenantId={}", bob.tenant)).await, 404, "tenant_not_found");
    assert_error(&key.get("/auth/me").await, 403, "user_required");
    assert_error(&key.post("/api-keys", json!({"name": "x", "role": "admin"})).await, 403, "insufficient_role");

    let id = created["id"].as_str().expect("id");
    assert_error(&hub.login(&bob.email).await.delete(&format!("/api-keys/{id}")).await, 404, "api_key_not_found");
    assert_eq!(api.delete(&format!("/api-keys/{id}")).await.0, 204);
    assert_error(&key.get("/settings/tenant").await, 401, "invalid_credentials");
}

#[tokio::test]
async fn the_internal_key_acts_as_platform_admin_and_nothing_else_does() {
    let hub = common::spawn_hub_with(|s| {
        s.security.internal_api_key = birdhub::config::Secret::new("internal-test-key-0123456789")
    })
    .await;
    let ada = hub.user("ada@example.org", false).await;
    let internal = common::Api::with_bearer(&hub.base_url, "internal-test-key-0123456789");
    assert_eq!(internal.get("/admin/users").await.0, 200);
    assert_eq!(internal.get(&format!("/settings/tenant?tenantId={}", ada.tenant)).await.0, 200);
    assert_error(
        &common::Api::with_bearer(&hub.base_url, "internal-test-key-012345678X").get("/admin/users").await,
        401,
        "invalid_credentials",
    );
}

#[tokio::test]
async fn the_audit_log_records_the_real_client_ip_behind_a_trusted_proxy() {
    let hub = common::spawn_hub_with(|s| s.http.trust_proxy = true).await;
    let root = hub.user("root@example.org", true).await;
    let api = hub.anon().header("x-forwarded-for", "203.0.113.9, 198.51.100.7");
    assert_eq!(api.post("/auth/login", json!({"email": root.email, "password": PASSWORD})).await.0, 200);
    let ip: String =
        hub.sql(|c| c.query_row("SELECT ip FROM audit_log WHERE action = 'user.login'", [], |r| r.get(0)).expect("ip"));
    assert_eq!(ip, "198.51.100.7", "the hop our proxy appended");

    let untrusted = common::spawn_hub().await;
    let r2 = untrusted.user("root@example.org", true).await;
    let api = untrusted.anon().header("x-forwarded-for", "203.0.113.9");
    assert_eq!(api.post("/auth/login", json!({"email": r2.email, "password": PASSWORD})).await.0, 200);
    let ip: String = untrusted
        .sql(|c| c.query_row("SELECT ip FROM audit_log WHERE action = 'user.login'", [], |r| r.get(0)).expect("ip"));
    assert_eq!(ip, "127.0.0.1", "without a trusted proxy the header is ignored");

    let (status, log) = hub.login(&root.email).await.get("/admin/audit-log?limit=1").await;
    assert_eq!(status, 200);
    assert_eq!(log["entries"].as_array().map(Vec::len), Some(1));
    assert!(log["total"].as_u64().unwrap_or(0) >= 2);
    let (_, filtered) = hub.login(&root.email).await.get("/admin/audit-log?action=user.login").await;
    assert!(filtered["entries"].as_array().expect("entries").iter().all(|e| e["action"] == "user.login"));
}

#[tokio::test]
async fn members_list_hides_platform_admins_and_admins_remove_members_by_id() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let owner = hub.user("owner@example.org", false).await;
    let mate = hub.member_of("mate@example.org", owner.tenant, Role::Viewer).await;
    let admin = hub.login(&root.email).await;
    admin.post(&format!("/admin/users/{}/tenants", root.id), json!({"tenantId": owner.tenant, "role": "admin"})).await;

    let owner_api = hub.login(&owner.email).await;
    let (_, members) = owner_api.get("/auth/members").await;
    let emails: Vec<&str> =
        members["members"].as_array().expect("members").iter().filter_map(|m| m["email"].as_str()).collect();
    assert_eq!(emails, ["mate@example.org", "owner@example.org"], "platform admins are not listed");
    let mate_member =
        members["members"].as_array().expect("members").iter().find(|m| m["email"] == mate.email).expect("mate");
    let id = mate_member["id"].as_str().expect("id");

    assert_error(&owner_api.delete(&format!("/admin/members/{id}")).await, 403, "platform_admin_required");
    assert_eq!(admin.delete(&format!("/admin/members/{id}")).await.0, 204);
    assert_error(&admin.delete(&format!("/admin/members/{id}")).await, 404, "member_not_found");
    assert_eq!(hub.login(&mate.email).await.get("/tenants").await.1["tenants"], json!([]));
    let removed: i64 = hub.sql(|c| {
        c.query_row("SELECT count(*) FROM audit_log WHERE action = 'admin.member_removed'", [], |r| r.get(0))
            .expect("n")
    });
    assert_eq!(removed, 1);
}
