//! The settings pages over real HTTP: My account, Team settings (admins only), Platform admin
//! (platform admins only), and the pages reached from mailed or shared links.

mod common;

use birdhub::domain::Role;
use reqwest::StatusCode;
use serde_json::json;

async fn page(api: &common::Api, path: &str) -> (StatusCode, String) {
    let r = api.client.get(format!("{}{path}", api.base)).send().await.expect("GET");
    (r.status(), r.text().await.expect("body"))
}

#[tokio::test]
async fn team_settings_are_for_admins_and_platform_admin_for_platform_admins() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let _member = hub.member_of("mo@example.org", owner.tenant, Role::Member).await;
    let admin = hub.login(&owner.email).await;
    let member = hub.login("mo@example.org").await;

    // A member: no Team settings in the menu, and the page says they may not.
    let (status, live) = page(&member, "/").await;
    assert_eq!(status, 200);
    assert!(!live.contains("href=\"/team\"") && !live.contains("href=\"/admin\""), "no admin links for a member");
    let (status, html) = page(&member, "/team").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(html.contains("for the team's admins") && html.contains("<html"), "a page that says why");
    let (status, _) = page(&member, "/admin").await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // The team's admin sees the members, and a key made the way the page makes it is listed
    // by its prefix, never whole.
    let (status, created) =
        admin.post("/api-keys", json!({ "name": "export script", "role": "viewer", "tenantId": owner.tenant })).await;
    assert_eq!(status, 201, "{created}");
    let raw = created["key"].as_str().expect("the key, once").to_owned();
    let (status, html) = page(&admin, "/team").await;
    assert_eq!(status, 200);
    assert!(html.contains("mo@example.org") && html.contains("member"), "members and roles");
    assert!(html.contains("export script"), "the key by name");
    assert!(!html.contains(&raw), "the raw key is never shown again");
    assert!(html.contains("data-api=\"PUT /settings/tenant\""), "the settings form");
    assert!(html.contains("name=\"filter_enabled\"") && html.contains("name=\"device_policy\""), "settings fields");
    // Not a platform admin: the admin page is refused, its link absent.
    assert!(!html.contains("href=\"/admin\""));
    assert_eq!(page(&admin, "/admin").await.0, StatusCode::FORBIDDEN);

    let root = hub.user("root@example.org", true).await;
    let root = hub.login(&root.email).await;
    let (status, html) = page(&root, "/admin").await;
    assert_eq!(status, 200);
    for part in ["System status", "Users", "owner@example.org", "Audit log", "Platform settings"] {
        assert!(html.contains(part), "{part} on the admin page");
    }
}

#[tokio::test]
async fn my_account_and_the_pages_behind_links() {
    let hub = common::spawn_hub().await;
    let ana = hub.user("ana@example.org", false).await;
    let api = hub.login(&ana.email).await;
    let (status, html) = page(&api, "/account").await;
    assert_eq!(status, 200);
    assert!(html.contains("ana@example.org"), "the profile");
    assert!(html.contains("POST /auth/mfa/totp/begin"), "two-factor set-up is offered");
    assert!(html.contains("PUT /auth/me/password"));

    // An invite link made by the API opens the dashboard's join page with its token.
    let (status, invite) = api.post("/auth/invites", json!({ "tenantId": ana.tenant, "role": "member" })).await;
    assert_eq!(status, 201, "{invite}");
    let url = invite["url"].as_str().expect("url");
    let path = &url[url.find("/register").expect("a dashboard path")..];
    let anon = hub.anon();
    let (status, html) = page(&anon, path).await;
    assert_eq!(status, 200);
    assert!(html.contains(invite["token"].as_str().expect("token")) && html.contains("POST /auth/register"));
    let (_, html) = page(&anon, "/register").await;
    assert!(html.contains("by invitation"), "no token: says how to get one");
    let (_, html) = page(&anon, "/reset-password").await;
    assert!(html.contains("has no token"));
    let (_, html) = page(&anon, "/reset-password?token=abc").await;
    assert!(html.contains("POST /auth/reset-password"));
}
