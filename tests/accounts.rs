//! Accounts over real HTTP: registration, invites, the own account, teams and settings.

mod common;

use birdhub::domain::Role;
use common::{PASSWORD, assert_error};
use serde_json::json;

#[tokio::test]
async fn self_registration_is_off_until_a_platform_admin_turns_it_on() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let body = json!({"email": "new@example.org", "name": "New", "password": PASSWORD});
    assert_error(&hub.anon().post("/auth/register", body.clone()).await, 403, "registration_closed");

    let admin = hub.login(&root.email).await;
    let (status, settings) = admin.put("/settings/platform", json!({"allow_self_registration": true})).await;
    assert_eq!(status, 200, "{settings}");
    assert_eq!(settings["allow_self_registration"], true);

    let api = hub.anon();
    let (status, created) = api.post("/auth/register", body.clone()).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["user"]["isPlatformAdmin"], false);
    let (_, me) = api.get("/auth/me").await;
    assert_eq!(me["tenants"][0]["name"], "New's team", "registering makes a team of one's own");
    assert_error(&hub.anon().post("/auth/register", body).await, 409, "email_taken");

    for (bad, code) in [
        (json!({"email": "nope", "name": "X", "password": PASSWORD}), "invalid_email"),
        (json!({"email": "x@example.org", "name": "  ", "password": PASSWORD}), "invalid_name"),
        (json!({"email": "x@example.org", "name": "X", "password": "short"}), "weak_password"),
        (json!({"email": "x@example.org", "name": "X"}), "invalid_body"),
        (json!({"email": 5, "name": "X", "password": PASSWORD}), "invalid_body"),
    ] {
        assert_error(&hub.anon().post("/auth/register", bad).await, 422, code);
    }
    let audited: i64 = hub.sql(|c| {
        c.query_row("SELECT count(*) FROM audit_log WHERE action = 'user.register'", [], |r| r.get(0)).expect("n")
    });
    assert_eq!(audited, 1);
}

#[tokio::test]
async fn an_invite_brings_a_person_into_the_team_with_its_role_once() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let (status, invite) = api.post("/auth/invites", json!({"role": "member"})).await;
    assert_eq!(status, 201, "{invite}");
    let token = invite["token"].as_str().expect("token").to_owned();
    assert!(invite["url"].as_str().is_some_and(|u| u.ends_with(&token)));
    let (_, pending) = api.get("/auth/invites").await;
    assert_eq!(pending["invites"].as_array().map(Vec::len), Some(1));
    assert!(pending.to_string().find(&token).is_none(), "the token is shown once, at creation");

    let newcomer = hub.anon();
    let reg = json!({"email": "new@example.org", "name": "Newcomer", "password": PASSWORD, "inviteToken": token});
    let (status, body) = newcomer.post("/auth/register", reg.clone()).await;
    assert_eq!(status, 201, "invites work while self-registration is off: {body}");
    let (_, me) = newcomer.get("/auth/me").await;
    assert_eq!(me["tenants"].as_array().map(Vec::len), Some(1));
    assert_eq!(me["tenants"][0]["id"], owner.tenant.to_string());
    assert_eq!(me["tenants"][0]["role"], "member");

    let again = json!({"email": "other@example.org", "name": "Other", "password": PASSWORD, "inviteToken": token});
    assert_error(&hub.anon().post("/auth/register", again).await, 400, "invite_used");
    let forged = json!({"email": "other@example.org", "name": "Other", "password": PASSWORD, "inviteToken": "00ff"});
    assert_error(&hub.anon().post("/auth/register", forged).await, 400, "invalid_invite");

    let (_, second) = api.post("/auth/invites", json!({"role": "viewer", "email": "vip@example.org"})).await;
    let id = second["id"].as_str().expect("id");
    let wrong_mail =
        json!({"email": "else@example.org", "name": "E", "password": PASSWORD, "inviteToken": second["token"]});
    assert_error(&hub.anon().post("/auth/register", wrong_mail).await, 400, "invite_email_mismatch");
    assert_eq!(api.delete(&format!("/auth/invites/{id}")).await.0, 204);
    let revoked =
        json!({"email": "vip@example.org", "name": "V", "password": PASSWORD, "inviteToken": second["token"]});
    assert_error(&hub.anon().post("/auth/register", revoked).await, 400, "invite_expired");
    assert_error(&api.delete(&format!("/auth/invites/{id}")).await, 404, "invite_not_found");
    let (_, members) = api.get("/auth/members").await;
    let names: Vec<&str> =
        members["members"].as_array().expect("members").iter().filter_map(|m| m["name"].as_str()).collect();
    assert_eq!(names, ["Newcomer", "owner"]);
}

#[tokio::test]
async fn invites_expire_after_seven_days() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let (_, invite) = hub.login(&owner.email).await.post("/auth/invites", json!({"role": "viewer"})).await;
    hub.state().clock.advance(std::time::Duration::from_secs(7 * 86_400 + 1));
    let reg =
        json!({"email": "late@example.org", "name": "Late", "password": PASSWORD, "inviteToken": invite["token"]});
    assert_error(&hub.anon().post("/auth/register", reg).await, 400, "invite_expired");
}

#[tokio::test]
async fn people_manage_their_own_profile_preferences_and_password() {
    let hub = common::spawn_hub().await;
    hub.user("ada@example.org", false).await;
    hub.user("taken@example.org", false).await;
    let api = hub.login("ada@example.org").await;

    let (status, prefs) = api.put("/auth/me/preferences", json!({"language": "de", "votingMode": "detailed"})).await;
    assert_eq!(status, 200, "{prefs}");
    assert_eq!((prefs["language"].clone(), prefs["timeFormat"].clone()), (json!("de"), json!("24h")));
    assert_error(&api.put("/auth/me/preferences", json!({"timeFormat": "25h"})).await, 422, "invalid_preferences");
    assert_error(&api.put("/auth/me/preferences", json!({"colour": "red"})).await, 422, "invalid_preferences");
    assert_eq!(api.get("/auth/me").await.1["preferences"]["votingMode"], "detailed");

    let (status, user) = api.put("/auth/me/profile", json!({"name": "Ada L."})).await;
    assert_eq!((status.as_u16(), user["name"].clone()), (200, json!("Ada L.")));
    // A new email needs the current password (issue 34, finding 13); with it, a taken one is 409.
    let taken = json!({"email": "taken@example.org", "currentPassword": PASSWORD});
    assert_error(&api.put("/auth/me/profile", taken).await, 409, "email_taken");
    assert_error(&api.put("/auth/me/profile", json!({"email": "not-an-email"})).await, 422, "invalid_email");
    assert_error(&api.put("/auth/me/profile", json!({})).await, 422, "nothing_to_change");

    let other_session = hub.login("ada@example.org").await;
    assert_error(
        &api.put("/auth/me/password", json!({"currentPassword": "wrong one!!", "newPassword": "new secret 123"})).await,
        400,
        "wrong_password",
    );
    assert_error(
        &api.put("/auth/me/password", json!({"currentPassword": PASSWORD, "newPassword": "tiny"})).await,
        422,
        "weak_password",
    );
    assert_eq!(
        api.put("/auth/me/password", json!({"currentPassword": PASSWORD, "newPassword": "new secret 123"})).await.0,
        204
    );
    assert_eq!(api.get("/auth/me").await.0, 200, "the session that changed the password stays");
    assert_eq!(other_session.get("/auth/me").await.0, 401, "other sessions end");
    assert_eq!(
        hub.anon().post("/auth/login", json!({"email": "ada@example.org", "password": "new secret 123"})).await.0,
        200
    );

    let actions: Vec<String> = hub.sql(|c| {
        let mut s = c.prepare("SELECT action FROM audit_log WHERE action IN ('user.preferences_updated', 'user.profile_updated', 'user.password_changed') ORDER BY id").expect("q");
        s.query_map([], |r| r.get(0)).expect("rows").map(|r| r.expect("row")).collect()
    });
    assert_eq!(actions, ["user.preferences_updated", "user.profile_updated", "user.password_changed"]);
}

#[tokio::test]
async fn deleting_an_account_needs_the_password_and_a_handover() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    hub.member_of("mate@example.org", owner.tenant, Role::Member).await;
    let loner = hub.user("loner@example.org", false).await;

    let api = hub.login(&owner.email).await;
    assert_error(&api.delete_with("/auth/me", json!({"password": "wrong password"})).await, 400, "wrong_password");
    assert_error(&api.delete_with("/auth/me", json!({"password": PASSWORD})).await, 409, "transfer_ownership_first");

    let lone = hub.login(&loner.email).await;
    assert_eq!(lone.delete_with("/auth/me", json!({"password": PASSWORD})).await.0, 204);
    assert_eq!(lone.get("/auth/me").await.0, 401);
    let teams: i64 = hub.sql(|c| {
        c.query_row("SELECT count(*) FROM tenants WHERE id = ?1", [loner.tenant.to_string()], |r| r.get(0)).expect("n")
    });
    assert_eq!(teams, 0, "a team owned alone goes with its owner");
    let audited: i64 = hub.sql(|c| {
        c.query_row("SELECT count(*) FROM audit_log WHERE action = 'user.account_deleted'", [], |r| r.get(0))
            .expect("n")
    });
    assert_eq!(audited, 1);
}

#[tokio::test]
async fn owners_cannot_leave_members_can_and_new_teams_follow_the_platform_setting() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let owner = hub.user("owner@example.org", false).await;
    let mate = hub.member_of("mate@example.org", owner.tenant, Role::Member).await;
    let owner_api = hub.login(&owner.email).await;
    assert_error(&owner_api.post_empty(&format!("/tenants/{}/leave", owner.tenant)).await, 400, "OWNER_CANNOT_LEAVE");

    let mate_api = hub.login(&mate.email).await;
    let (_, listed) = mate_api.get("/tenants").await;
    assert_eq!(listed["tenants"].as_array().map(Vec::len), Some(1));
    assert_eq!(mate_api.post_empty(&format!("/tenants/{}/leave", owner.tenant)).await.0, 204);
    assert_eq!(mate_api.get("/tenants").await.1["tenants"], json!([]));
    assert_error(&mate_api.post_empty(&format!("/tenants/{}/leave", owner.tenant)).await, 404, "tenant_not_found");

    // Off by default: a household hub's owner decides who makes teams.
    assert_error(
        &mate_api.post("/auth/create-tenant", json!({"name": "Backyard"})).await,
        403,
        "tenant_creation_disabled",
    );
    assert_eq!(hub.sql(|c| c.query_row("SELECT count(*) FROM tenants", [], |r| r.get::<_, i64>(0))).expect("n"), 2);
    hub.login(&root.email).await.put("/settings/platform", json!({"allow_tenant_creation": true})).await;
    let (status, team) = mate_api.post("/auth/create-tenant", json!({"name": "Backyard"})).await;
    assert_eq!(status, 201, "{team}");
    assert_eq!((team["role"].clone(), team["isOwner"].clone()), (json!("admin"), json!(true)));
    hub.login(&root.email).await.put("/settings/platform", json!({"allow_tenant_creation": false})).await;
    assert_error(
        &mate_api.post("/auth/create-tenant", json!({"name": "Another"})).await,
        403,
        "tenant_creation_disabled",
    );
    assert_eq!(
        hub.login(&root.email).await.post("/auth/create-tenant", json!({"name": "Admin's"})).await.0,
        201,
        "platform admins always may"
    );

    let (_, all) = hub.login(&root.email).await.get("/tenants").await;
    assert!(all["tenants"].as_array().map(Vec::len).unwrap_or(0) >= 4, "platform admins see every team");
}

#[tokio::test]
async fn tenant_settings_have_defaults_validation_and_role_checks() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    hub.member_of("viewer@example.org", owner.tenant, Role::Viewer).await;
    let admin = hub.login(&owner.email).await;
    let viewer = hub.login("viewer@example.org").await;

    let (status, got) = viewer.get("/settings/tenant").await;
    assert_eq!(status, 200);
    let s = &got["settings"];
    assert_eq!(
        (
            s["device_policy"].clone(),
            s["satellite_offline_threshold_minutes"].clone(),
            s["heartbeat_interval_sec"].clone()
        ),
        (json!("members"), json!(5), json!(30))
    );
    assert_eq!(s["drop_insect_at_satellite"], true);
    assert_error(&viewer.put("/settings/tenant", json!({"device_policy": "admins"})).await, 403, "insufficient_role");

    let mut events = hub.state().bus.subscribe("test");
    let (status, got) =
        admin.put("/settings/tenant", json!({"device_policy": "admins", "heartbeat_interval_sec": 60})).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["settings"]["device_policy"], "admins");
    assert!(
        matches!(events.recv().await, Some(birdhub::events::Event::ConfigChanged { .. })),
        "satellites get the new config"
    );
    assert_eq!(viewer.get("/settings/tenant").await.1["settings"]["heartbeat_interval_sec"], 60);
    assert_error(&admin.put("/settings/tenant", json!({"heartbeat_interval_sec": 1})).await, 422, "invalid_settings");
    assert_error(&admin.put("/settings/tenant", json!({"device_policy": "everyone"})).await, 422, "invalid_settings");
    assert_error(&admin.put("/settings/tenant", json!({"warp_drive": true})).await, 422, "invalid_settings");
    assert_error(&admin.get("/settings/platform").await, 403, "platform_admin_required");
}

/// One malformed stored setting must not reset the others to their defaults: that would turn a
/// team's `device_policy: admins` back into `members`.
#[tokio::test]
async fn a_malformed_stored_setting_does_not_relax_the_device_policy() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    hub.member_of("member@example.org", owner.tenant, Role::Member).await;
    let scope = owner.tenant.to_string();
    hub.sql(|c| {
        let mut put =
            c.prepare("INSERT INTO settings (scope, key, value_json) VALUES (?1, ?2, ?3)").expect("statement");
        put.execute((&scope, "device_policy", "\"admins\"")).expect("policy");
        put.execute((&scope, "heartbeat_interval_sec", "\"every now and then\"")).expect("malformed");
        put.execute((&scope, "outbox_max_age_hours", "12")).expect("valid");
    });
    let member = hub.login("member@example.org").await;
    assert_error(&member.post("/satellites", json!({"name": "garden"})).await, 403, "DEVICE_POLICY_ADMINS");
    let (status, got) = member.get("/settings/tenant").await;
    assert_eq!(status, 200, "{got}");
    let s = &got["settings"];
    assert_eq!(s["device_policy"], "admins");
    assert_eq!(s["outbox_max_age_hours"], 12, "the other valid values are kept");
    assert_eq!(s["heartbeat_interval_sec"], 30, "the malformed one takes its default");

    // A malformed security setting itself resolves to its strictest value, not the default.
    hub.sql(|c| {
        c.execute(
            "UPDATE settings SET value_json = '\"everyone\"' WHERE scope = ?1 AND key = 'device_policy'",
            [&scope],
        )
        .expect("update")
    });
    assert_error(&member.post("/satellites", json!({"name": "garden"})).await, 403, "DEVICE_POLICY_ADMINS");
    assert_eq!(member.get("/settings/tenant").await.1["settings"]["device_policy"], "admins");
}

/// A script polling with an API key must not turn every read into a write: `last_used_at` is
/// written at most once a minute per key.
#[tokio::test]
async fn api_key_use_is_recorded_at_most_once_a_minute() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login(&owner.email).await;
    let (status, created) = admin.post("/api-keys", json!({"name": "poller", "role": "viewer"})).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().expect("id").to_owned();
    let key = common::Api::with_bearer(&hub.base_url, created["key"].as_str().expect("key"));
    let last_used = || {
        let id = id.clone();
        hub.sql(move |c| {
            c.query_row("SELECT last_used_at FROM api_keys WHERE id = ?1", [&id], |r| r.get::<_, Option<String>>(0))
                .expect("row")
        })
    };
    assert_eq!(last_used(), None);
    // Count the writes: a trigger notes every change of the column.
    hub.sql(|c| {
        c.execute_batch(
            "CREATE TABLE key_use_writes (n INTEGER);
             CREATE TRIGGER count_key_use AFTER UPDATE OF last_used_at ON api_keys
             BEGIN INSERT INTO key_use_writes VALUES (1); END;",
        )
        .expect("trigger")
    });
    let writes =
        || hub.sql(|c| c.query_row("SELECT count(*) FROM key_use_writes", [], |r| r.get::<_, i64>(0)).expect("n"));

    for _ in 0..10 {
        assert_eq!(key.get("/detections").await.0, 200);
    }
    assert_eq!(writes(), 1, "ten requests, one write");
    let first = last_used().expect("recorded");
    let (_, listed) = admin.get("/api-keys").await;
    assert_eq!(listed["apiKeys"][0]["lastUsedAt"], first.as_str(), "visible in the list");

    hub.state().clock.advance(std::time::Duration::from_secs(61));
    assert_eq!(key.get("/detections").await.0, 200);
    assert_eq!(writes(), 2, "a minute later the use is recorded again");
    assert!(last_used().expect("recorded") > first);
}
