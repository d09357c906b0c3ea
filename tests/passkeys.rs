//! Passkeys end to end with a software authenticator (`webauthn-authenticator-rs`'s SoftPasskey)
//! doing what a browser does: register, list, sign in with it, delete it, then fail to sign in.
//! The hub is reached as `http://localhost:PORT`, a secure context where browsers allow WebAuthn.

mod common;

use common::{PASSWORD, TestHub, assert_error};
use serde_json::{Value, json};
use webauthn_authenticator_rs::{WebauthnAuthenticator, softpasskey::SoftPasskey};
use webauthn_rs::prelude::{CreationChallengeResponse, RequestChallengeResponse, Url};

fn origin(hub: &TestHub) -> Url {
    Url::parse(&format!("http://localhost:{}", hub.http_addr.port())).expect("origin")
}

/// Signs `email` in and turns on TOTP (passkeys are added to an account with two-factor on).
async fn with_totp(hub: &TestHub, email: &str) -> (common::Api, String) {
    let api = hub.login(email).await;
    let (_, setup) = api.post("/auth/mfa/totp/begin", json!({})).await;
    let key = setup["manualKey"].as_str().expect("manualKey").to_owned();
    let code = totp_now(&key, hub);
    let (status, body) = api.post("/auth/mfa/totp/confirm", json!({"code": code})).await;
    assert_eq!(status, 200, "{body}");
    (api, key)
}

fn totp_now(key: &str, hub: &TestHub) -> String {
    let now = hub.state().clock.now().format("%Y-%m-%d %H:%M:%S UTC").to_string();
    let out =
        std::process::Command::new("oathtool").args(["--totp", "-b", key, "--now", &now]).output().expect("oathtool");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

async fn challenge(hub: &TestHub, email: &str) -> (common::Api, Value) {
    let api = hub.anon();
    let (status, body) = api.post("/auth/login", json!({"email": email, "password": PASSWORD})).await;
    assert_eq!((status.as_u16(), body["mfaRequired"].clone()), (200, json!(true)), "{body}");
    (api, body)
}

#[tokio::test]
async fn register_list_sign_in_delete_and_then_fail() {
    let hub = common::spawn_hub_with(|s| s.http.public_url = "http://localhost".into()).await;
    let ann = hub.user("ann@example.org", false).await;
    let (api, _) = with_totp(&hub, &ann.email).await;
    let mut authenticator = SoftPasskey::new(true);

    // Register.
    assert_error(
        &api.post("/auth/mfa/passkeys/register/finish", json!({"response": {}})).await,
        422,
        "invalid_passkey_response",
    );
    let (status, options) = api.post("/auth/mfa/passkeys/register/begin", json!({})).await;
    assert_eq!(status, 200, "{options}");
    let ccr: CreationChallengeResponse = serde_json::from_value(options).expect("creation options");
    let credential = authenticator.do_registration(origin(&hub), ccr).expect("the authenticator registers");
    let (status, key) =
        api.post("/auth/mfa/passkeys/register/finish", json!({"response": credential, "name": "YubiKey"})).await;
    assert_eq!(status, 201, "{key}");
    assert_eq!(key["name"], "YubiKey");
    // The same answer again: no registration is waiting any more.
    assert_error(
        &api.post("/auth/mfa/passkeys/register/finish", json!({"response": credential})).await,
        400,
        "no_pending_passkey_challenge",
    );
    let (_, list) = api.get("/auth/mfa/passkeys").await;
    assert_eq!(list["passkeys"].as_array().map(Vec::len), Some(1), "{list}");
    assert!(!list.to_string().contains("credential"), "the credential itself is never listed");
    let (_, me) = api.get("/auth/me").await;
    assert!(me["mfa"]["methods"].as_array().is_some_and(|m| m.contains(&json!("passkey"))), "{me}");

    // Sign in with it.
    let (browser, body) = challenge(&hub, &ann.email).await;
    assert_eq!(body["hasPasskeys"], true);
    let token = body["mfaToken"].clone();
    let (status, options) = browser.post("/auth/login/mfa/passkey/begin", json!({"mfaToken": token})).await;
    assert_eq!(status, 200, "{options}");
    let rcr: RequestChallengeResponse = serde_json::from_value(options).expect("request options");
    let assertion = authenticator.do_authentication(origin(&hub), rcr).expect("the authenticator signs");
    let (status, body) =
        browser.post("/auth/login/mfa/passkey/finish", json!({"mfaToken": token, "response": assertion})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(browser.get("/auth/me").await.0, 200, "signed in with the session cookie");
    // The same assertion cannot be replayed for another challenge.
    let (other, body) = challenge(&hub, &ann.email).await;
    let token2 = body["mfaToken"].clone();
    assert_eq!(other.post("/auth/login/mfa/passkey/begin", json!({"mfaToken": token2})).await.0, 200);
    assert_error(
        &other.post("/auth/login/mfa/passkey/finish", json!({"mfaToken": token2, "response": assertion})).await,
        401,
        "invalid_passkey",
    );

    // An answer made for another site (origin) is refused.
    let (other, body) = challenge(&hub, &ann.email).await;
    let token3 = body["mfaToken"].clone();
    let (_, options) = other.post("/auth/login/mfa/passkey/begin", json!({"mfaToken": token3})).await;
    let rcr: RequestChallengeResponse = serde_json::from_value(options).expect("request options");
    let evil = Url::parse(&format!("https://localhost:{}", hub.http_addr.port())).expect("url");
    // The software authenticator answers for https://localhost, a site the hub is not.
    let phished = authenticator.do_authentication(evil, rcr).expect("an answer for the other origin");
    let got = other.post("/auth/login/mfa/passkey/finish", json!({"mfaToken": token3, "response": phished})).await;
    assert_error(&got, 401, "invalid_passkey");
    assert_eq!(other.get("/auth/me").await.0, 401, "no session from a refused passkey");

    // Delete it; it no longer signs in.
    let id = list["passkeys"][0]["id"].as_str().expect("id").to_owned();
    assert_eq!(api.delete(&format!("/auth/mfa/passkeys/{id}")).await.0, 204);
    assert_error(&api.delete(&format!("/auth/mfa/passkeys/{id}")).await, 404, "passkey_not_found");
    let (browser, body) = challenge(&hub, &ann.email).await;
    assert_eq!(body["hasPasskeys"], false);
    assert_error(
        &browser.post("/auth/login/mfa/passkey/begin", json!({"mfaToken": body["mfaToken"]})).await,
        400,
        "no_passkeys",
    );
}

#[tokio::test]
async fn a_hub_on_a_bare_address_explains_why_passkeys_need_https() {
    let hub = common::spawn_hub_with(|s| s.http.public_url = "http://192.168.1.20:8080".into()).await;
    let ann = hub.user("ann@example.org", false).await;
    let (api, _) = with_totp(&hub, &ann.email).await;
    let got = api.post("/auth/mfa/passkeys/register/begin", json!({})).await;
    assert_error(&got, 400, "passkeys_unavailable");
    assert!(got.1["message"].as_str().is_some_and(|m| m.contains("https") && m.contains("localhost")), "{}", got.1);
    let (_, me) = api.get("/auth/me").await;
    assert_eq!(me["mfa"]["available"], json!(["totp", "backup_codes"]));
}
