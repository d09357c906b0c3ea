//! People and teams over HTTP (issue 36): team languages are checked (10), the audit log names
//! people and teams and filters by day (8), team admins rename their team and remove members and
//! the public page never defaults to a person's name (9, 15), an owner who is a platform admin is
//! listed (16), the sign-up options and invite mail (11, 25), remembered devices say what they are
//! (13), and the password rule the forms state is the server's (25).

mod common;

use birdhub::domain::Role;
use common::{assert_error, smtp};
use serde_json::json;

#[tokio::test]
async fn team_languages_must_be_ones_species_names_come_in() {
    let hub = common::spawn_hub().await;
    let ada = hub.user("ada@example.org", false).await;
    let api = hub.login(&ada.email).await;
    let got = api.put("/settings/tenant", json!({"primary_language": "klingon"})).await;
    assert_error(&got, 422, "invalid_settings");
    let message = got.1["message"].as_str().unwrap_or_default();
    // The setting is named by `field`, and in words in the message (issue 51, defect 4).
    assert_eq!(got.1["field"], "primary_language", "{}", got.1);
    assert!(message.contains("Main language") && message.contains("klingon"), "{message}");
    let got = api.put("/settings/tenant", json!({"secondary_language": "xx"})).await;
    assert_error(&got, 422, "invalid_settings");
    assert_eq!(got.1["field"], "secondary_language", "{}", got.1);
    assert!(got.1["message"].as_str().unwrap_or_default().contains("\u{201c}xx\u{201d}"), "{}", got.1);
    let (status, body) =
        api.put("/settings/tenant", json!({"primary_language": "de", "secondary_language": "pt_BR"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["settings"]["primary_language"].as_str(), body["settings"]["secondary_language"].as_str()),
        (Some("de"), Some("pt_BR"))
    );
    let (status, body) = api.put("/settings/tenant", json!({"secondary_language": null})).await;
    assert_eq!((status.as_u16(), body["settings"]["secondary_language"].is_null()), (200, true), "{body}");
    // Nothing unknown was stored.
    assert_eq!(api.get("/settings/tenant").await.1["settings"]["primary_language"], "de");
}

#[tokio::test]
async fn an_owner_who_is_a_platform_admin_is_listed_among_the_members() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    hub.member_of("bea@example.org", root.tenant, Role::Member).await;
    // Another platform admin who joined the team stays unlisted (SPEC 4.1); the owner does not.
    let other = hub.user("ops@example.org", true).await;
    hub.state()
        .store
        .call(move |c| birdhub::store::tenants::add_member(c, root.tenant, other.id, Role::Admin))
        .await
        .expect("add");
    let (status, body) = hub.login(&root.email).await.get("/auth/members").await;
    assert_eq!(status, 200, "{body}");
    let emails: Vec<&str> =
        body["members"].as_array().expect("members").iter().filter_map(|m| m["email"].as_str()).collect();
    assert_eq!(emails, ["bea@example.org", "root@example.org"], "{body}");
    let owner = body["members"].as_array().expect("members").iter().find(|m| m["email"] == "root@example.org").cloned();
    assert_eq!(owner.map(|o| o["isOwner"].clone()), Some(json!(true)));
}

#[tokio::test]
async fn team_admins_rename_their_team_and_remove_members_but_not_the_owner() {
    let hub = common::spawn_hub().await;
    let ada = hub.user("ada@example.org", false).await;
    let bea = hub.member_of("bea@example.org", ada.tenant, Role::Admin).await;
    let cal = hub.member_of("cal@example.org", ada.tenant, Role::Member).await;
    let eve = hub.user("eve@example.org", false).await;
    let (admin, member, outsider) =
        (hub.login(&bea.email).await, hub.login(&cal.email).await, hub.login(&eve.email).await);

    let path = format!("/tenants/{}/name", ada.tenant);
    assert_eq!(member.put(&path, json!({"name": "Mine now"})).await.0, 403);
    assert!(matches!(outsider.put(&path, json!({"name": "Mine now"})).await.0.as_u16(), 403 | 404));
    assert_error(&admin.put(&path, json!({"name": "   "})).await, 422, "invalid_name");
    let (status, body) = admin.put(&path, json!({"name": "  Oak Lane garden "})).await;
    assert_eq!((status.as_u16(), body["name"].as_str()), (200, Some("Oak Lane garden")), "{body}");
    let (_, teams) = member.get("/tenants").await;
    assert_eq!(teams["tenants"][0]["name"], "Oak Lane garden", "{teams}");

    let (_, members) = admin.get("/auth/members").await;
    let id_of = |email: &str| {
        members["members"].as_array().expect("members").iter().find(|m| m["email"] == email).expect(email)["id"]
            .as_str()
            .expect("id")
            .to_owned()
    };
    let (owner, cal_id) = (id_of("ada@example.org"), id_of("cal@example.org"));
    // A member cannot remove; nobody removes the owner; another team's admin sees no such member.
    assert_eq!(member.delete(&format!("/auth/members/{cal_id}")).await.0, 403);
    assert_error(&admin.delete(&format!("/auth/members/{owner}")).await, 400, "OWNER_CANNOT_LEAVE");
    assert_error(&outsider.delete(&format!("/auth/members/{cal_id}")).await, 404, "member_not_found");
    assert_eq!(admin.delete(&format!("/auth/members/{cal_id}")).await.0, 204);
    let (_, cal_teams) = member.get("/tenants").await;
    assert_eq!(cal_teams["tenants"], json!([]), "cal is out: {cal_teams}");
    let (_, audit) = hub.login("ada@example.org").await.get("/auth/members").await;
    assert_eq!(audit["members"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn the_public_page_never_defaults_to_the_owners_name() {
    let hub = common::spawn_hub().await;
    let alice = hub.user("alice@example.org", false).await;
    let team = alice.tenant;
    // The name sign-up gives a team: "<owner's name>'s team".
    hub.sql(move |c| {
        c.execute("UPDATE tenants SET name = 'alice''s team' WHERE id = ?1", [team.to_string()]).expect("name")
    });
    let api = hub.login(&alice.email).await;
    assert_eq!(api.put("/settings/tenant", json!({"public_page_enabled": true})).await.0, 200);
    let public = hub.anon();
    let (status, page) = public.get(&format!("/public/{team}")).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["teamName"], "our station", "{page}");
    assert_eq!(api.put("/settings/tenant", json!({"public_page_title": "Oak Lane birds"})).await.0, 200);
    assert_eq!(public.get(&format!("/public/{team}")).await.1["teamName"], "Oak Lane birds");
    let long = "x".repeat(101);
    assert_error(&api.put("/settings/tenant", json!({"public_page_title": long})).await, 422, "invalid_settings");
}

#[tokio::test]
async fn the_audit_log_names_people_and_teams_and_filters_by_action_person_and_day() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let ada = hub.user("ada@example.org", false).await;
    let team = ada.tenant;
    hub.sql(move |c| {
        c.execute("UPDATE tenants SET name = 'Oak Lane' WHERE id = ?1", [team.to_string()]).expect("name")
    });
    let ada_api = hub.login(&ada.email).await;
    for _ in 0..3 {
        assert_eq!(ada_api.put("/settings/tenant", json!({"filter_enabled": false})).await.0, 200);
    }
    let admin = hub.login(&root.email).await;
    let (status, log) = admin.get("/admin/audit-log?action=admin.tenant_settings_updated").await;
    assert_eq!(status, 200, "{log}");
    assert_eq!(log["total"], 3, "{log}");
    let first = &log["entries"][0];
    assert_eq!(
        (first["userName"].as_str(), first["userEmail"].as_str()),
        (Some("ada"), Some("ada@example.org")),
        "{first}"
    );
    assert_eq!(first["tenantName"], "Oak Lane");
    assert!(log["actions"].as_array().expect("actions").iter().any(|a| a == "user.login"), "{log}");
    // By person, and by day (a day is a UTC day, `to` inclusive).
    let (_, by_root) = admin.get(&format!("/admin/audit-log?userId={}", root.id)).await;
    assert!(
        by_root["entries"].as_array().expect("entries").iter().all(|e| e["userEmail"] == "root@example.org"),
        "{by_root}"
    );
    let today = hub.state().clock.now().format("%Y-%m-%d").to_string();
    let (_, on_day) = admin.get(&format!("/admin/audit-log?from={today}&to={today}")).await;
    assert!(on_day["total"].as_u64().unwrap_or(0) >= 3, "{on_day}");
    let (_, tomorrow) = admin.get("/admin/audit-log?from=2999-01-01").await;
    assert_eq!(tomorrow["total"], 0);
    assert_error(&admin.get("/admin/audit-log?from=yesterday").await, 400, "invalid_time");
    // Paging reaches the oldest entries.
    let (_, page) = admin.get("/admin/audit-log?action=admin.tenant_settings_updated&limit=2&offset=2").await;
    assert_eq!(page["entries"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn sign_up_options_say_when_registration_is_open_and_which_team_an_invite_joins() {
    let (hub, sink) = common::spawn_hub_with_mail().await;
    let root = hub.user("root@example.org", true).await;
    let team = root.tenant;
    hub.sql(move |c| {
        c.execute("UPDATE tenants SET name = 'Oak Lane' WHERE id = ?1", [team.to_string()]).expect("name")
    });
    let anon = hub.anon();
    let (status, options) = anon.get("/auth/register/options").await;
    assert_eq!((status.as_u16(), &options["selfRegistration"], &options["invite"]), (200, &json!(false), &json!(null)));
    let admin = hub.login(&root.email).await;
    assert_eq!(admin.put("/settings/platform", json!({"allow_self_registration": true})).await.0, 200);
    assert_eq!(anon.get("/auth/register/options").await.1["selfRegistration"], true);

    let (status, invite) = admin.post("/auth/invites", json!({"role": "member", "email": "bea@example.org"})).await;
    assert_eq!(status, 201, "{invite}");
    assert_eq!(invite["mailed"], true, "{invite}");
    let mail = smtp::decoded(&sink.wait_for(1).await[0]);
    assert!(mail.contains("To: bea@example.org") && mail.contains("Oak Lane"), "{mail}");
    let url = invite["url"].as_str().expect("url");
    assert!(mail.contains(url), "the mail carries the link: {mail}");
    let token = invite["token"].as_str().expect("token");
    let (status, options) = anon.get(&format!("/auth/register/options?invite={token}")).await;
    assert_eq!(status, 200, "{options}");
    assert_eq!(options["invite"]["teamName"], "Oak Lane");
    assert_eq!(options["invite"]["email"], "bea@example.org");
    assert_eq!(options["invite"]["role"], "member");
    assert_error(&anon.get(&format!("/auth/register/options?invite={}", "0".repeat(64))).await, 400, "invalid_invite");
    // An invite without an email sends nothing.
    let (_, plain) = admin.post("/auth/invites", json!({"role": "viewer"})).await;
    assert_eq!(plain["mailed"], false);
}

#[tokio::test]
async fn remembered_devices_say_which_browser_and_the_dashboard_records_it() {
    let hub = common::spawn_hub().await;
    let ann = hub.user("ann@example.org", false).await;
    let id = ann.id;
    let now = birdhub::time::Timestamp(hub.state().clock.now());
    let later = birdhub::time::Timestamp(hub.state().clock.now() + chrono::Duration::days(30));
    let agent = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36";
    hub.state()
        .store
        .call(move |c| {
            let d = birdhub::store::mfa::NewDevice {
                token_hash: "h",
                user_agent: Some(agent),
                ip: "127.0.0.1",
                expires_at: later,
            };
            birdhub::store::mfa::remember_device(c, id, &d, now)
        })
        .await
        .expect("device");
    let (status, list) = hub.login(&ann.email).await.get("/auth/mfa/remembered-devices").await;
    assert_eq!(status, 200, "{list}");
    let d = &list["devices"][0];
    assert_eq!(d["device"], "Chrome on Android", "{list}");
    assert!(
        d["expiresAt"].is_string() && d["createdAt"].is_string() && d.get("lastUsedAt").is_some(),
        "camelCase: {d}"
    );
}

#[tokio::test]
async fn the_password_rule_the_forms_state_is_the_servers() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let admin = hub.login(&root.email).await;
    assert_eq!(admin.put("/settings/platform", json!({"allow_self_registration": true})).await.0, 200);
    let min = birdhub::auth::password::MIN_LEN;
    let short = "k".repeat(min - 2) + "x";
    let body = |pw: &str, email: &str| json!({"email": email, "name": "Kim", "password": pw});
    assert_error(&hub.anon().post("/auth/register", body(&short, "kim@example.org")).await, 422, "weak_password");
    let exact = "abcdefghijklmnop"[..min].to_owned();
    assert_eq!(hub.anon().post("/auth/register", body(&exact, "kim@example.org")).await.0, 201);
    // The pages and the docs say the same number.
    let docs = include_str!("../docs/accounts.md");
    assert!(docs.contains(&format!("{min} to 256 characters")), "docs/accounts.md states the rule");
    for page in ["/register", "/reset-password?token=abc"] {
        let html = reqwest::get(format!("{}{page}", hub.base_url)).await.expect("page").text().await.expect("text");
        assert!(
            html.contains(&format!("at least {min} characters")) && html.contains(&format!("minlength=\"{min}\"")),
            "{page}"
        );
        assert!(!html.contains("at least 12 characters"), "{page}");
    }
}
