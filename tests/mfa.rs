//! Two-factor sign-in over real HTTP with a cookie jar, codes computed by `oathtool` (the Debian
//! package), independently of the hub: enrolment, sign-in with TOTP and backup codes, regeneration,
//! remembered devices, lockout through wrong codes, disable, admin reset, a team that requires it,
//! and the secret at rest under another key.

mod common;

use common::{PASSWORD, TestHub, assert_error, oathtool};
use reqwest::{StatusCode, header::HeaderMap};
use serde_json::{Value, json};

/// A browser: its own cookie jar, and the raw headers of each answer.
struct Browser {
    client: reqwest::Client,
    base: String,
}

impl Browser {
    fn new(hub: &TestHub) -> Self {
        let client = reqwest::Client::builder().cookie_store(true).build().expect("client");
        Self { client, base: hub.base_url.clone() }
    }

    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (StatusCode, HeaderMap, Value) {
        let mut req = self.client.request(method, format!("{}/api{path}", self.base));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("request");
        let (status, headers) = (resp.status(), resp.headers().clone());
        let text = resp.text().await.expect("body");
        (status, headers, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, HeaderMap, Value) {
        self.send(reqwest::Method::POST, path, Some(body)).await
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        let (s, _, v) = self.send(reqwest::Method::GET, path, None).await;
        (s, v)
    }

    async fn delete(&self, path: &str) -> StatusCode {
        self.send(reqwest::Method::DELETE, path, None).await.0
    }

    async fn login(&self, email: &str) -> (StatusCode, HeaderMap, Value) {
        self.post("/auth/login", json!({"email": email, "password": PASSWORD})).await
    }
}

fn cookies(h: &HeaderMap) -> Vec<String> {
    h.get_all(reqwest::header::SET_COOKIE).iter().filter_map(|v| v.to_str().ok()).map(str::to_owned).collect()
}

fn pair(got: (StatusCode, HeaderMap, Value)) -> (StatusCode, Value) {
    (got.0, got.2)
}

/// Signs in, enrols TOTP and returns (the browser, the manual key, the backup codes).
async fn enrolled(hub: &TestHub, email: &str) -> (Browser, String, Vec<String>) {
    let b = Browser::new(hub);
    assert_eq!(b.login(email).await.0, 200);
    let (status, _, setup) = b.post("/auth/mfa/totp/begin", json!({})).await;
    assert_eq!(status, 200, "{setup}");
    let key = setup["manualKey"].as_str().expect("manualKey").to_owned();
    let code = oathtool(&key, hub.state().clock.now());
    let (status, _, body) = b.post("/auth/mfa/totp/confirm", json!({"code": code})).await;
    assert_eq!(status, 200, "{body}");
    let codes = body["backupCodes"].as_array().expect("codes").iter().map(|c| c.as_str().unwrap_or("").to_owned());
    (b, key, codes.collect())
}

/// Moves the hub's clock to the next 30 s step, so a fresh code is not a replay.
fn next_step(hub: &TestHub) {
    hub.state().clock.advance(std::time::Duration::from_secs(31));
}

#[tokio::test]
async fn enrol_then_sign_in_with_the_app_and_with_backup_codes() {
    let hub = common::spawn_hub().await;
    let ann = hub.user("ann@example.org", false).await;
    let b = Browser::new(&hub);
    assert_eq!(b.login(&ann.email).await.0, 200);
    assert_error(&pair(b.post("/auth/mfa/totp/confirm", json!({"code": "123456"})).await), 400, "no_pending_enrolment");
    // A cancelled set-up leaves nothing to confirm.
    assert_eq!(b.post("/auth/mfa/totp/begin", json!({})).await.0, 200);
    assert_eq!(b.post("/auth/mfa/totp/cancel", json!({})).await.0, 204);
    assert_error(&pair(b.post("/auth/mfa/totp/confirm", json!({"code": "123456"})).await), 400, "no_pending_enrolment");
    let (status, _, setup) = b.post("/auth/mfa/totp/begin", json!({})).await;
    assert_eq!(status, 200, "{setup}");
    assert!(setup["qrDataUrl"].as_str().is_some_and(|u| u.starts_with("data:image/png;base64,")));
    let key = setup["manualKey"].as_str().expect("manualKey").to_owned();
    assert!(
        setup["otpauthUrl"].as_str().is_some_and(|u| u.contains("issuer=birdhub") && u.contains("ann%40example.org"))
    );
    for bad in ["12a456", "1234567", "12345"] {
        assert_error(&pair(b.post("/auth/mfa/totp/confirm", json!({"code": bad})).await), 422, "invalid_code_format");
    }
    let far = oathtool(&key, hub.state().clock.now() + chrono::Duration::minutes(5));
    assert_error(&pair(b.post("/auth/mfa/totp/confirm", json!({"code": far})).await), 401, "invalid_mfa_code");
    let first = oathtool(&key, hub.state().clock.now());
    let (status, _, body) = b.post("/auth/mfa/totp/confirm", json!({"code": first})).await;
    assert_eq!(status, 200, "{body}");
    let backup: Vec<String> =
        body["backupCodes"].as_array().expect("codes").iter().map(|c| c.as_str().unwrap_or("").into()).collect();
    assert_eq!(backup.len(), 10);
    assert!(backup.iter().all(|c| c.len() == 11 && c.as_bytes()[5] == b'-'), "{backup:?}");
    let (_, me) = b.get("/auth/me").await;
    assert_eq!(me["mfa"]["enabled"], true, "{me}");
    assert_eq!(
        (me["mfa"]["backupCodesRemaining"].clone(), me["mfa"]["backupCodesLeft"].clone()),
        (json!(10), json!(10))
    );
    assert_eq!(me["mfa"]["methods"], json!(["totp", "backup_codes"]));

    // On disk the secret is sealed, never the key the person typed.
    let stored: String = hub.sql(|c| c.query_row("SELECT secret_enc FROM mfa_totp", [], |r| r.get(0)).expect("row"));
    assert!(stored.starts_with("v1:") && !stored.contains(&key), "{stored}");

    // Sign in: the password gives a challenge, no session.
    let phone = Browser::new(&hub);
    let (status, headers, body) = phone.login(&ann.email).await;
    assert_eq!(status, 200);
    assert_eq!((body["mfaRequired"].clone(), body["hasPasskeys"].clone()), (json!(true), json!(false)));
    assert!(cookies(&headers).is_empty(), "no cookie before the second factor: {:?}", cookies(&headers));
    assert_eq!(phone.get("/auth/me").await.0, 401);
    let token = body["mfaToken"].as_str().expect("mfaToken").to_owned();
    // The code used to confirm enrolment cannot be replayed in its step.
    let replay = phone.post("/auth/login/mfa/totp", json!({"mfaToken": token, "code": first})).await;
    assert!(cookies(&replay.1).is_empty());
    assert_error(&pair(replay), 401, "mfa_code_reused");
    next_step(&hub);
    let code = oathtool(&key, hub.state().clock.now());
    let (status, headers, body) = phone.post("/auth/login/mfa/totp", json!({"mfaToken": token, "code": code})).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["token"].as_str().is_some());
    assert!(cookies(&headers).iter().any(|c| c.starts_with("birdhub_session=")));
    assert!(!cookies(&headers).iter().any(|c| c.starts_with("mfa-remember=")), "not asked to remember");
    assert_eq!(phone.get("/auth/me").await.0, 200);
    // The challenge works once.
    next_step(&hub);
    let again = oathtool(&key, hub.state().clock.now());
    assert_error(
        &pair(Browser::new(&hub).post("/auth/login/mfa/totp", json!({"mfaToken": token, "code": again})).await),
        401,
        "mfa_token_used",
    );

    // A backup code works once.
    let laptop = Browser::new(&hub);
    let token = laptop.login(&ann.email).await.2["mfaToken"].as_str().expect("token").to_owned();
    assert_error(
        &pair(laptop.post("/auth/login/mfa/backup", json!({"mfaToken": token, "code": "not-a-code"})).await),
        422,
        "invalid_backup_code_format",
    );
    let typed = backup[0].to_uppercase().replace('-', " ");
    let (status, _, body) = laptop.post("/auth/login/mfa/backup", json!({"mfaToken": token, "code": typed})).await;
    assert_eq!(status, 200, "{body}");
    let other = Browser::new(&hub);
    let token = other.login(&ann.email).await.2["mfaToken"].as_str().expect("token").to_owned();
    assert_error(
        &pair(other.post("/auth/login/mfa/backup", json!({"mfaToken": token, "code": backup[0]})).await),
        401,
        "backup_code_used",
    );
    assert_eq!(laptop.get("/auth/me").await.1["mfa"]["backupCodesRemaining"], 9);

    // Regenerating needs the password and voids the old set.
    assert_error(
        &pair(laptop.post("/auth/mfa/backup-codes/regenerate", json!({"password": "wrong password!"})).await),
        400,
        "wrong_password",
    );
    let (status, _, fresh) = laptop.post("/auth/mfa/backup-codes/regenerate", json!({"password": PASSWORD})).await;
    assert_eq!(status, 200, "{fresh}");
    assert_eq!(fresh["backupCodes"].as_array().map(Vec::len), Some(10));
    assert_error(
        &pair(other.post("/auth/login/mfa/backup", json!({"mfaToken": token, "code": backup[1]})).await),
        401,
        "invalid_mfa_code",
    );
    let (status, _, _) =
        other.post("/auth/login/mfa/backup", json!({"mfaToken": token, "code": fresh["backupCodes"][0]})).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn bad_challenge_tokens_are_refused_and_set_no_cookie() {
    let hub = common::spawn_hub().await;
    let ann = hub.user("ann@example.org", false).await;
    let (_, key, _) = enrolled(&hub, &ann.email).await;
    next_step(&hub);
    let b = Browser::new(&hub);
    let code = oathtool(&key, hub.state().clock.now());
    hub.user("carl@example.org", false).await;
    let session_jwt = hub.token("carl@example.org").await; // a session token is not a challenge
    for token in ["garbage", "a.b.c", session_jwt.as_str()] {
        let got = b.post("/auth/login/mfa/totp", json!({"mfaToken": token, "code": code})).await;
        assert!(cookies(&got.1).is_empty());
        assert_error(&pair(got), 401, "invalid_mfa_token");
    }
    assert_error(&pair(b.post("/auth/login/mfa/totp", json!({"code": code})).await), 422, "invalid_body");
    // An expired challenge (5 minutes).
    let token = b.login(&ann.email).await.2["mfaToken"].as_str().expect("token").to_owned();
    hub.state().clock.advance(std::time::Duration::from_secs(6 * 60));
    let code = oathtool(&key, hub.state().clock.now());
    assert_error(
        &pair(b.post("/auth/login/mfa/totp", json!({"mfaToken": token, "code": code})).await),
        401,
        "invalid_mfa_token",
    );
    // Another person's challenge with this person's code.
    let bob = hub.user("bob@example.org", false).await;
    let (_, bob_key, _) = enrolled(&hub, &bob.email).await;
    next_step(&hub);
    let bob_token = b.login(&bob.email).await.2["mfaToken"].as_str().expect("token").to_owned();
    let ann_code = oathtool(&key, hub.state().clock.now());
    if ann_code != oathtool(&bob_key, hub.state().clock.now()) {
        assert_error(
            &pair(b.post("/auth/login/mfa/totp", json!({"mfaToken": bob_token, "code": ann_code})).await),
            401,
            "invalid_mfa_code",
        );
    }
}

#[tokio::test]
async fn a_remembered_device_skips_the_second_factor_until_it_is_revoked() {
    let hub = common::spawn_hub().await;
    let ann = hub.user("ann@example.org", false).await;
    let (_, key, _) = enrolled(&hub, &ann.email).await;
    next_step(&hub);
    let b = Browser::new(&hub);
    let token = b.login(&ann.email).await.2["mfaToken"].as_str().expect("token").to_owned();
    let code = oathtool(&key, hub.state().clock.now());
    let (status, headers, _) =
        b.post("/auth/login/mfa/totp", json!({"mfaToken": token, "code": code, "rememberDevice": true})).await;
    assert_eq!(status, 200);
    let remember = cookies(&headers).into_iter().find(|c| c.starts_with("mfa-remember=")).expect("remember cookie");
    for part in ["HttpOnly", "SameSite=Lax", "Max-Age=2592000", "Path=/"] {
        assert!(remember.contains(part), "{remember}");
    }
    assert!(!remember.contains("Secure"), "served over http");
    // Logout keeps the remember cookie; the next login needs only the password.
    let (status, headers, _) = b.post("/auth/logout", json!({})).await;
    assert_eq!(status, 204);
    assert!(!cookies(&headers).iter().any(|c| c.starts_with("mfa-remember=")), "logout leaves it alone");
    let (status, _, body) = b.login(&ann.email).await;
    assert_eq!(status, 200);
    assert!(body["token"].as_str().is_some() && body.get("mfaRequired").is_none(), "{body}");
    // Another browser still gets the challenge.
    assert_eq!(Browser::new(&hub).login(&ann.email).await.2["mfaRequired"], true);
    // Revoking the device brings the second factor back.
    let (_, list) = b.get("/auth/mfa/remembered-devices").await;
    let devices = list["devices"].as_array().expect("devices").clone();
    assert_eq!(devices.len(), 1, "{list}");
    assert!(devices[0].get("token_hash").is_none() && devices[0]["ip"].is_string());
    assert_eq!(
        b.delete(&format!("/auth/mfa/remembered-devices/{}", devices[0]["id"].as_str().expect("id"))).await,
        204
    );
    assert_eq!(b.delete(&format!("/auth/mfa/remembered-devices/{}", uuid::Uuid::new_v4())).await, 404);
    assert_eq!(b.login(&ann.email).await.2["mfaRequired"], true);
}

#[tokio::test]
async fn wrong_codes_lock_the_account_and_are_audited() {
    let hub = common::spawn_hub().await;
    let ann = hub.user("ann@example.org", false).await;
    let (_, key, _) = enrolled(&hub, &ann.email).await;
    next_step(&hub);
    let b = Browser::new(&hub);
    let token = b.login(&ann.email).await.2["mfaToken"].as_str().expect("token").to_owned();
    let wrong = oathtool(&key, hub.state().clock.now() + chrono::Duration::minutes(10));
    for _ in 0..4 {
        assert_error(
            &pair(b.post("/auth/login/mfa/totp", json!({"mfaToken": token, "code": wrong})).await),
            401,
            "invalid_mfa_code",
        );
    }
    assert_error(
        &pair(b.post("/auth/login/mfa/totp", json!({"mfaToken": token, "code": wrong})).await),
        423,
        "account_locked",
    );
    let right = oathtool(&key, hub.state().clock.now());
    assert_error(
        &pair(b.post("/auth/login/mfa/totp", json!({"mfaToken": token, "code": right})).await),
        423,
        "account_locked",
    );
    let audited: i64 = hub.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM audit_log WHERE action = 'user.login_failed' AND details_json LIKE '%invalid_mfa%'",
            [],
            |r| r.get(0),
        )
        .expect("count")
    });
    assert_eq!(audited, 5);
}

#[tokio::test]
async fn people_turn_it_off_admins_reset_it_and_platform_admins_keep_it() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let ann = hub.user("ann@example.org", false).await;
    let bob = hub.user("bob@example.org", false).await;
    let (a, _, _) = enrolled(&hub, &ann.email).await;
    assert_error(
        &pair(a.post("/auth/mfa/disable", json!({"password": "not the password"})).await),
        400,
        "wrong_password",
    );
    assert_eq!(a.post("/auth/mfa/disable", json!({"password": PASSWORD})).await.0, 204);
    assert_eq!(a.get("/auth/me").await.1["mfa"]["enabled"], false);
    assert!(Browser::new(&hub).login(&ann.email).await.2["token"].is_string(), "password alone again");
    assert_eq!(
        hub.sql(|c| c.query_row("SELECT count(*) FROM mfa_backup_codes", [], |r| r.get::<_, i64>(0)).expect("n")),
        0
    );

    let (r, _, _) = enrolled(&hub, &root.email).await;
    assert_error(
        &pair(r.post("/auth/mfa/disable", json!({"password": PASSWORD})).await),
        403,
        "platform_admin_mfa_required",
    );

    let (_, _, _) = enrolled(&hub, &bob.email).await;
    let (status, _, _) = a.post(&format!("/auth/mfa/admin/users/{}/reset", bob.id), json!({})).await;
    assert_eq!(status, 403, "only platform admins reset");
    assert_eq!(r.post(&format!("/auth/mfa/admin/users/{}/reset", bob.id), json!({})).await.0, 204);
    assert!(Browser::new(&hub).login(&bob.email).await.2["token"].is_string(), "bob signs in with his password");
    assert_eq!(r.post(&format!("/auth/mfa/admin/users/{}/reset", uuid::Uuid::new_v4()), json!({})).await.0, 404);
}

#[tokio::test]
async fn a_team_that_requires_it_lets_members_only_enrol_until_they_have() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    hub.member_of("member@example.org", owner.tenant, birdhub::domain::Role::Member).await;
    let admin = hub.login(&owner.email).await;
    let (status, body) = admin.put("/settings/tenant", json!({"mfa_required": true})).await;
    assert_eq!(status, 200, "{body}");
    let m = Browser::new(&hub);
    let (_, _, body) = m.login("member@example.org").await;
    assert_eq!(body["enrollmentRequired"], true, "{body}");
    assert_error(&m.get("/satellites").await, 403, "mfa_enrollment_required");
    let (status, me) = m.get("/auth/me").await;
    assert_eq!((status.as_u16(), me["mfa"]["enrollmentRequired"].clone()), (200, json!(true)));
    let (_, _, setup) = m.post("/auth/mfa/totp/begin", json!({})).await;
    let key = setup["manualKey"].as_str().expect("key").to_owned();
    let (status, _, _) =
        m.post("/auth/mfa/totp/confirm", json!({"code": oathtool(&key, hub.state().clock.now())})).await;
    assert_eq!(status, 200);
    assert_eq!(m.get("/satellites").await.0, 200);
    assert_eq!(m.get("/auth/me").await.1["mfa"]["enrollmentRequired"], false);
}

#[tokio::test]
async fn a_hub_started_with_another_key_refuses_the_stored_secret() {
    let hub = common::spawn_hub().await;
    let ann = hub.user("ann@example.org", false).await;
    let (_, key, _) = enrolled(&hub, &ann.email).await;
    let dir = hub.stop_keeping_data().await;
    let other = "f".repeat(64);
    let hub =
        common::spawn_hub_in(dir, |s| s.security.mfa_encryption_key = birdhub::config::Secret::new(other.clone()))
            .await;
    let b = Browser::new(&hub);
    let token = b.login(&ann.email).await.2["mfaToken"].as_str().expect("token").to_owned();
    hub.state().clock.advance(std::time::Duration::from_secs(31));
    let code = oathtool(&key, hub.state().clock.now());
    let got = b.post("/auth/login/mfa/totp", json!({"mfaToken": token, "code": code})).await;
    assert!(cookies(&got.1).is_empty(), "no session with an unreadable secret");
    assert_error(&pair(got), 503, "mfa_key_mismatch");
}
