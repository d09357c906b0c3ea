//! Forgot and reset password (SPEC 3, 4.1, 7, 8) with mail to a real local SMTP server.

mod common;

use std::time::Duration;

use common::{PASSWORD, assert_error, smtp};
use serde_json::json;

async fn hub_with_mail() -> (common::TestHub, smtp::Sink) {
    common::spawn_hub_with_mail().await
}

/// Mails the hub tried to send; written before forgot-password answers.
fn mail_log_count(hub: &common::TestHub) -> i64 {
    hub.sql(|c| c.query_row("SELECT count(*) FROM mail_log", [], |r| r.get(0)).expect("mail log"))
}

fn token_from(mail: &str) -> String {
    let body = smtp::decoded(mail);
    let at = body.find("reset-password?token=").expect("a reset link in the mail") + "reset-password?token=".len();
    body[at..].chars().take_while(char::is_ascii_hexdigit).collect()
}

#[tokio::test]
async fn the_reset_mail_arrives_and_its_link_sets_a_new_password() {
    let (hub, sink) = hub_with_mail().await;
    hub.user("ada@example.org", false).await;
    let api = hub.anon();
    let (status, body) = api.post("/auth/forgot-password", json!({"email": "ada@example.org"})).await;
    assert_eq!((status.as_u16(), body), (204, serde_json::Value::Null));
    let mails = sink.wait_for(1).await;
    assert!(mails[0].contains("To: ada@example.org"), "{}", mails[0]);
    assert!(mails[0].contains("Subject: Reset your birdhub password"));
    let token = token_from(&mails[0]);
    assert_eq!(token.len(), 64);
    // The hub's own base (never the request's Host; see tests/public_links.rs).
    let base = &hub.state().links().http_base;
    assert!(smtp::decoded(&mails[0]).contains(&format!("{base}/reset-password?token=")));

    let new_password = "a brand new secret";
    let (status, _) = api.post("/auth/reset-password", json!({"token": token, "password": new_password})).await;
    assert_eq!(status, 204);
    assert_error(
        &api.post("/auth/login", json!({"email": "ada@example.org", "password": PASSWORD})).await,
        401,
        "invalid_credentials",
    );
    assert_eq!(api.post("/auth/login", json!({"email": "ada@example.org", "password": new_password})).await.0, 200);
    assert_error(
        &api.post("/auth/reset-password", json!({"token": token, "password": "another secret!"})).await,
        400,
        "token_used",
    );

    let actions: Vec<String> = hub.sql(|c| {
        let mut s =
            c.prepare("SELECT action FROM audit_log WHERE action LIKE 'user.password_reset%' ORDER BY id").expect("q");
        s.query_map([], |r| r.get(0)).expect("rows").map(|r| r.expect("row")).collect()
    });
    assert_eq!(
        actions,
        ["user.password_reset_requested", "user.password_reset_completed", "user.password_reset_failed"]
    );
    let logged: String = hub.sql(|c| c.query_row("SELECT status FROM mail_log", [], |r| r.get(0)).expect("mail log"));
    assert_eq!(logged, "sent");
}

#[tokio::test]
async fn unknown_addresses_get_the_same_204_and_no_mail() {
    let (hub, sink) = hub_with_mail().await;
    let (status, _) = hub.anon().post("/auth/forgot-password", json!({"email": "nobody@example.org"})).await;
    assert_eq!(status, 204);
    // Mail goes out before the answer, so by now it would have been logged and received.
    assert_eq!(mail_log_count(&hub), 0);
    assert!(sink.messages().is_empty());
    assert_error(&hub.anon().post("/auth/forgot-password", json!({"mail": "x"})).await, 422, "invalid_body");
}

#[tokio::test]
async fn a_reset_clears_the_lockout() {
    let (hub, sink) = hub_with_mail().await;
    hub.user("ada@example.org", false).await;
    let api = hub.anon();
    for _ in 0..5 {
        api.post("/auth/login", json!({"email": "ada@example.org", "password": "wrong password!"})).await;
    }
    assert_error(
        &api.post("/auth/login", json!({"email": "ada@example.org", "password": PASSWORD})).await,
        423,
        "account_locked",
    );
    api.post("/auth/forgot-password", json!({"email": "ada@example.org"})).await;
    let token = token_from(&sink.wait_for(1).await[0]);
    assert_eq!(api.post("/auth/reset-password", json!({"token": token, "password": "fresh password 1"})).await.0, 204);
    assert_eq!(
        api.post("/auth/login", json!({"email": "ada@example.org", "password": "fresh password 1"})).await.0,
        200,
        "unlocked"
    );
}

#[tokio::test]
async fn expired_forged_and_blocked_resets_fail_with_distinct_codes() {
    let (hub, sink) = hub_with_mail().await;
    let root = hub.user("root@example.org", true).await;
    let ada = hub.user("ada@example.org", false).await;
    let api = hub.anon();
    api.post("/auth/forgot-password", json!({"email": ada.email})).await;
    let token = token_from(&sink.wait_for(1).await[0]);
    hub.state().clock.advance(Duration::from_secs(61 * 60));
    assert_error(
        &api.post("/auth/reset-password", json!({"token": token, "password": "fresh password 1"})).await,
        400,
        "token_expired",
    );
    assert_error(
        &api.post("/auth/reset-password", json!({"token": "ab".repeat(32), "password": "fresh password 1"})).await,
        400,
        "invalid_token",
    );
    assert_error(
        &api.post("/auth/reset-password", json!({"token": token, "password": "short"})).await,
        422,
        "weak_password",
    );

    api.post("/auth/forgot-password", json!({"email": ada.email})).await;
    let token = token_from(&sink.wait_for(2).await[1]);
    let admin = hub.login(&root.email).await;
    assert_eq!(admin.post_empty(&format!("/admin/users/{}/block", ada.id)).await.0, 200);
    assert_error(
        &api.post("/auth/reset-password", json!({"token": token, "password": "fresh password 1"})).await,
        400,
        "user_blocked",
    );
    assert_eq!(api.post("/auth/forgot-password", json!({"email": ada.email})).await.0, 204);
    assert_eq!(mail_log_count(&hub), 2, "blocked users get no reset mail");
    assert_eq!(sink.messages().len(), 2);
}

#[tokio::test]
async fn forgot_password_is_rate_limited_per_ip_but_always_204() {
    let (hub, sink) = hub_with_mail().await;
    hub.user("ada@example.org", false).await;
    let api = hub.anon();
    for _ in 0..7 {
        assert_eq!(api.post("/auth/forgot-password", json!({"email": "ada@example.org"})).await.0, 204);
    }
    assert_eq!(mail_log_count(&hub), 5, "only the first five within 15 minutes send mail");
    assert_eq!(sink.wait_for(5).await.len(), 5);
    let ledger: i64 = hub.sql(|c| {
        c.query_row("SELECT count(*) FROM login_attempts WHERE kind = 'forgot_password'", [], |r| r.get(0))
            .expect("count")
    });
    assert_eq!(ledger, 5, "a request past the budget writes nothing (issue 34, finding 2)");
}

#[tokio::test]
async fn without_smtp_the_mail_is_recorded_and_dropped() {
    let hub = common::spawn_hub().await;
    hub.user("ada@example.org", false).await;
    assert_eq!(hub.anon().post("/auth/forgot-password", json!({"email": "ada@example.org"})).await.0, 204);
    let (status, kind): (String, String) = hub.sql(|c| {
        c.query_row("SELECT status, kind FROM mail_log", [], |r| Ok((r.get(0)?, r.get(1)?))).expect("mail log")
    });
    assert_eq!((status.as_str(), kind.as_str()), ("dropped", "password_reset"));
    let tokens: i64 =
        hub.sql(|c| c.query_row("SELECT count(*) FROM password_reset_tokens", [], |r| r.get(0)).expect("count"));
    assert_eq!(tokens, 1, "the request itself is recorded");
}
