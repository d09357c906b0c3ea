//! Login security over real HTTP (SPEC 5.3, 7, 8): sessions, lockout, rate limit, blocking, logout.

mod common;

use std::time::Duration;

use common::{PASSWORD, assert_error};
use serde_json::json;

#[tokio::test]
async fn login_sets_a_session_cookie_and_records_time_and_ip() {
    let hub = common::spawn_hub().await;
    let ada = hub.user("ada@example.org", false).await;
    let api = hub.anon();
    let (status, body) = api.post("/auth/login", json!({"email": "ADA@example.org", "password": PASSWORD})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["user"]["email"], "ada@example.org");
    assert!(body["user"].get("passwordHash").is_none() && !body.to_string().contains("argon2"), "no hash leaks");
    assert!(body["token"].as_str().is_some_and(|t| t.split('.').count() == 3), "a JWT");

    let (status, me) = api.get("/auth/me").await;
    assert_eq!(status, 200, "the cookie authenticates: {me}");
    assert_eq!(me["user"]["id"], ada.id.to_string());
    assert_eq!(me["mfa"]["enabled"], false);
    assert_eq!(me["tenants"][0]["role"], "admin");
    assert_eq!(me["tenants"][0]["isOwner"], true);
    assert_eq!(me["preferences"]["language"], "en");

    let (ip, at): (Option<String>, Option<String>) = hub.sql(|c| {
        c.query_row("SELECT last_login_ip, last_login_at FROM users WHERE id = ?1", [ada.id.to_string()], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("row")
    });
    assert_eq!(ip.as_deref(), Some("127.0.0.1"));
    assert!(at.is_some());

    let bearer = common::Api::with_bearer(&hub.base_url, body["token"].as_str().expect("token"));
    assert_eq!(bearer.get("/auth/me").await.0, 200, "the same token works as a bearer JWT");
}

#[tokio::test]
async fn wrong_credentials_are_401_and_audited() {
    let hub = common::spawn_hub().await;
    hub.user("ada@example.org", false).await;
    let api = hub.anon();
    assert_error(
        &api.post("/auth/login", json!({"email": "ada@example.org", "password": "nope nope nope"})).await,
        401,
        "invalid_credentials",
    );
    assert_error(
        &api.post("/auth/login", json!({"email": "who@example.org", "password": PASSWORD})).await,
        401,
        "invalid_credentials",
    );
    assert_error(&api.post("/auth/login", json!({"email": "ada@example.org"})).await, 422, "invalid_body");
    assert_error(&api.get("/auth/me").await, 401, "unauthenticated");
    let reasons: Vec<String> = hub.sql(|c| {
        let mut s = c
            .prepare("SELECT json_extract(details_json, '$.reason') FROM audit_log WHERE action = 'user.login_failed'")
            .expect("q");
        s.query_map([], |r| r.get(0)).expect("rows").map(|r| r.expect("row")).collect()
    });
    assert_eq!(reasons, ["invalid_credentials", "invalid_credentials"]);
}

#[tokio::test]
async fn five_failures_lock_for_fifteen_minutes_even_with_the_right_password() {
    let hub = common::spawn_hub().await;
    hub.user("ada@example.org", false).await;
    let api = hub.anon();
    let wrong = json!({"email": "ada@example.org", "password": "wrong password!"});
    for _ in 0..4 {
        assert_error(&api.post("/auth/login", wrong.clone()).await, 401, "invalid_credentials");
    }
    assert_error(&api.post("/auth/login", wrong.clone()).await, 423, "account_locked");
    let right = json!({"email": "ada@example.org", "password": PASSWORD});
    assert_error(&api.post("/auth/login", right.clone()).await, 423, "account_locked");
    let locked_audits: i64 = hub.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM audit_log WHERE action = 'user.login_failed' AND json_extract(details_json, '$.reason') = 'locked'",
            [],
            |r| r.get(0),
        )
        .expect("count")
    });
    assert_eq!(locked_audits, 2);

    hub.state().clock.advance(Duration::from_secs(14 * 60));
    assert_error(&api.post("/auth/login", right.clone()).await, 423, "account_locked");
    hub.state().clock.advance(Duration::from_secs(61));
    assert_eq!(api.post("/auth/login", right).await.0, 200, "the lock ends after 15 minutes");
}

#[tokio::test]
async fn more_than_twenty_attempts_from_one_ip_get_429() {
    let hub = common::spawn_hub().await;
    hub.user("ada@example.org", false).await;
    let api = hub.anon();
    for i in 0..20 {
        let email = format!("nobody{i}@example.org");
        assert_eq!(api.post("/auth/login", json!({"email": email, "password": PASSWORD})).await.0, 401);
    }
    let right = json!({"email": "ada@example.org", "password": PASSWORD});
    assert_error(&api.post("/auth/login", right.clone()).await, 429, "rate_limited");
    let audited: i64 = hub.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM audit_log WHERE json_extract(details_json, '$.reason') = 'rate_limited'",
            [],
            |r| r.get(0),
        )
        .expect("count")
    });
    assert_eq!(audited, 1);
    hub.state().clock.advance(Duration::from_secs(15 * 60 + 1));
    assert_eq!(api.post("/auth/login", right).await.0, 200, "the window passes");
}

#[tokio::test]
async fn logout_ends_the_session_server_side() {
    let hub = common::spawn_hub().await;
    hub.user("ada@example.org", false).await;
    let token = hub.token("ada@example.org").await;
    let api = common::Api::with_bearer(&hub.base_url, &token);
    assert_eq!(api.get("/auth/me").await.0, 200);
    let (status, _) = api.post_empty("/auth/logout").await;
    assert_eq!(status, 204);
    assert_error(&api.get("/auth/me").await, 401, "session_expired");

    let browser = hub.login("ada@example.org").await;
    assert_eq!(browser.post_empty("/auth/logout").await.0, 204);
    assert_error(&browser.get("/auth/me").await, 401, "unauthenticated");
}

#[tokio::test]
async fn sessions_expire_after_seven_days() {
    let hub = common::spawn_hub().await;
    hub.user("ada@example.org", false).await;
    let api = hub.login("ada@example.org").await;
    hub.state().clock.advance(Duration::from_secs(6 * 86_400));
    assert_eq!(api.get("/auth/me").await.0, 200);
    hub.state().clock.advance(Duration::from_secs(86_400 + 1));
    assert_eq!(api.get("/auth/me").await.0, 401);
}

#[tokio::test]
async fn a_blocked_user_cannot_log_in_and_is_signed_out() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let bob = hub.user("bob@example.org", false).await;
    let admin = hub.login(&root.email).await;
    let bob_api = hub.login(&bob.email).await;
    let (status, body) = admin.post_empty(&format!("/admin/users/{}/block", bob.id)).await;
    assert_eq!((status.as_u16(), body["blocked"].clone()), (200, json!(true)));
    assert_eq!(bob_api.get("/auth/me").await.0, 401, "existing sessions end at once");
    assert_error(
        &hub.anon().post("/auth/login", json!({"email": bob.email, "password": PASSWORD})).await,
        403,
        "user_blocked",
    );
    let (status, body) = admin.post_empty(&format!("/admin/users/{}/block", bob.id)).await;
    assert_eq!((status.as_u16(), body["blocked"].clone()), (200, json!(false)), "a second call unblocks");
    assert_eq!(hub.anon().post("/auth/login", json!({"email": bob.email, "password": PASSWORD})).await.0, 200);
    let actions: Vec<String> = hub.sql(|c| {
        let mut s =
            c.prepare("SELECT action FROM audit_log WHERE action LIKE 'admin.user_%block%' ORDER BY id").expect("q");
        s.query_map([], |r| r.get(0)).expect("rows").map(|r| r.expect("row")).collect()
    });
    assert_eq!(actions, ["admin.user_blocked", "admin.user_unblocked"]);
}

#[tokio::test]
async fn mfa_enabled_accounts_get_a_challenge_instead_of_a_session() {
    let hub = common::spawn_hub().await;
    let ada = hub.user("ada@example.org", false).await;
    hub.sql(|c| c.execute("UPDATE users SET mfa_enabled = 1 WHERE id = ?1", [ada.id.to_string()]).expect("update"));
    let api = hub.anon();
    let (status, body) = api.post("/auth/login", json!({"email": ada.email, "password": PASSWORD})).await;
    assert_eq!(status, 200);
    assert_eq!(body["mfaRequired"], true);
    assert!(body["mfaToken"].as_str().is_some());
    assert_eq!(body["hasPasskeys"], false);
    assert!(body.get("token").is_none());
    assert_eq!(api.get("/auth/me").await.0, 401, "no session cookie before the second factor");
    let mfa = common::Api::with_bearer(&hub.base_url, body["mfaToken"].as_str().expect("token"));
    assert_eq!(mfa.get("/auth/me").await.0, 401, "the challenge token is not a session");
}

#[tokio::test]
async fn forged_and_garbage_credentials_are_refused() {
    let hub = common::spawn_hub().await;
    hub.user("ada@example.org", false).await;
    let token = hub.token("ada@example.org").await;
    let mut forged = token.clone();
    forged.pop();
    forged.push(if token.ends_with('A') { 'B' } else { 'A' });
    assert_error(&common::Api::with_bearer(&hub.base_url, &forged).get("/auth/me").await, 401, "invalid_credentials");
    assert_error(
        &common::Api::with_bearer(&hub.base_url, "deadbeef").get("/auth/me").await,
        401,
        "invalid_credentials",
    );
    let api = hub.anon().header("cookie", "birdhub_session=not.a.jwt");
    assert_error(&api.get("/auth/me").await, 401, "invalid_credentials");
}
