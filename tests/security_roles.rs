//! Issue 34, findings 7 and 13, over real HTTP, WebSocket, MQTT and SMTP: what a person made or
//! holds ends when their right to it ends.
//!
//! - Team API keys and pending invites die with their maker's admin role: removal, leaving,
//!   demotion, block, account deletion (the last two in every team).
//! - A remembered device no longer skips the second factor after a password change or reset.
//! - A member watching live audio who is removed or demoted to viewer stops hearing it at once.
//! - A new account email needs the current password, and the old address is told.

mod common;

use std::time::Duration;

use birdhub::domain::Role;
use common::{Api, PASSWORD, TestHub, assert_error, oathtool, sat};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, tungstenite::Message};

/// One way a person stops being an admin of a team.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Removed,
    Left,
    Demoted,
    Blocked,
    Deleted,
}

/// What bob made as an admin of a team: a key (admin role) and a pending invite.
struct Made {
    key: Api,
    invite_id: String,
    invite_token: String,
}

async fn make(bob: &Api, hub: &TestHub, tenant: &str) -> Made {
    let key = bob.create(&format!("/api-keys?tenantId={tenant}"), json!({"name": "automation", "role": "admin"})).await;
    let invite = bob.create(&format!("/auth/invites?tenantId={tenant}"), json!({"role": "admin"})).await;
    let key = Api::with_bearer(&hub.base_url, key["key"].as_str().expect("raw key"));
    assert_eq!(key.get("/api-keys").await.0, 200, "the key works while its maker is an admin");
    Made {
        key,
        invite_id: invite["id"].as_str().expect("id").to_owned(),
        invite_token: invite["token"].as_str().expect("token").to_owned(),
    }
}

/// Whether the invite is still pending in the eyes of the team's owner, and can still be used.
async fn invite_alive(hub: &TestHub, owner: &Api, made: &Made, email: &str) -> bool {
    let (_, pending) = owner.get("/auth/invites").await;
    let listed = pending["invites"].as_array().expect("invites").iter().any(|i| i["id"] == made.invite_id.as_str());
    let body = json!({"email": email, "name": "Newcomer", "password": PASSWORD, "inviteToken": made.invite_token});
    let (status, answer) = hub.anon().post("/auth/register", body).await;
    assert!(status == 201 || answer["code"] == "invite_expired", "register with the invite: {status} {answer}");
    assert_eq!(listed, status == 201, "the list and the link agree");
    listed
}

/// Ada owns team A, Carol team C; Bob is an admin of both (and owns a team of his own). Bob mints
/// an admin key and an invite in A and in C, then `change` happens to him (in A, or everywhere).
/// Afterwards his key and invite in A are dead; in C only after a block or a deletion; Ada's own
/// key in A is untouched.
async fn keys_and_invites_after(change: Change) {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let ada = hub.user("ada@example.org", false).await;
    let carol = hub.user("carol@example.org", false).await;
    let bob = hub.user("bob@example.org", false).await;
    let admin = hub.login(&root.email).await;
    for team in [ada.tenant, carol.tenant] {
        let body = json!({"tenantId": team, "role": "admin"});
        assert_eq!(admin.post(&format!("/admin/users/{}/tenants", bob.id), body).await.0, 201);
    }
    let (ada_api, carol_api, bob_api) =
        (hub.login(&ada.email).await, hub.login(&carol.email).await, hub.login(&bob.email).await);
    let ada_key = ada_api.create("/api-keys", json!({"name": "ada's", "role": "admin"})).await;
    let ada_key = Api::with_bearer(&hub.base_url, ada_key["key"].as_str().expect("key"));
    let in_a = make(&bob_api, &hub, &ada.tenant.to_string()).await;
    let in_c = make(&bob_api, &hub, &carol.tenant.to_string()).await;

    let (_, members) = ada_api.get("/auth/members").await;
    let membership = members["members"]
        .as_array()
        .expect("members")
        .iter()
        .find(|m| m["userId"] == bob.id.to_string().as_str())
        .expect("bob is a member of A")["id"]
        .as_str()
        .expect("membership id")
        .to_owned();
    let (status, body) = match change {
        Change::Removed => admin.delete(&format!("/admin/members/{membership}")).await,
        Change::Left => bob_api.post_empty(&format!("/tenants/{}/leave", ada.tenant)).await,
        Change::Demoted => admin.put(&format!("/admin/members/{membership}/role"), json!({"role": "member"})).await,
        Change::Blocked => admin.post_empty(&format!("/admin/users/{}/block", bob.id)).await,
        Change::Deleted => admin.delete(&format!("/admin/users/{}", bob.id)).await,
    };
    assert!(status.is_success(), "{change:?}: {status} {body}");

    assert_error(&in_a.key.get("/api-keys").await, 401, "invalid_credentials");
    assert_error(&in_a.key.put("/settings/tenant", json!({"publicAudio": true})).await, 401, "invalid_credentials");
    assert!(!invite_alive(&hub, &ada_api, &in_a, "new-a@example.org").await, "{change:?}: the invite in A is gone");
    let everywhere = matches!(change, Change::Blocked | Change::Deleted);
    assert_eq!(in_c.key.get("/api-keys").await.0 == 200, !everywhere, "{change:?}: bob's key in C");
    assert_eq!(invite_alive(&hub, &carol_api, &in_c, "new-c@example.org").await, !everywhere, "{change:?}");
    assert_eq!(ada_key.get("/api-keys").await.0, 200, "{change:?}: other admins' keys stay");

    let (_, listed) = ada_api.get("/api-keys").await;
    let revoked = listed["apiKeys"].as_array().expect("keys").iter().filter(|k| k["revokedAt"].is_string()).count();
    assert_eq!(revoked, 1, "{change:?}: the team's key list shows bob's key revoked: {listed}");
}

#[tokio::test]
async fn removing_an_admin_revokes_the_keys_and_invites_they_made() {
    keys_and_invites_after(Change::Removed).await;
}

#[tokio::test]
async fn leaving_a_team_revokes_the_keys_and_invites_made_there() {
    keys_and_invites_after(Change::Left).await;
}

#[tokio::test]
async fn demoting_an_admin_revokes_the_keys_and_invites_they_made() {
    keys_and_invites_after(Change::Demoted).await;
}

#[tokio::test]
async fn blocking_a_person_revokes_their_keys_and_invites_in_every_team() {
    keys_and_invites_after(Change::Blocked).await;
}

#[tokio::test]
async fn deleting_an_account_revokes_its_keys_and_invites_in_every_team() {
    keys_and_invites_after(Change::Deleted).await;
}

/// Signs Ann in with her second factor and has this browser remembered; returns the browser.
async fn remembered_browser(hub: &TestHub, email: &str, key: &str) -> Api {
    hub.state().clock.advance(Duration::from_secs(31));
    let b = hub.anon();
    let (_, answer) = b.post("/auth/login", json!({"email": email, "password": PASSWORD})).await;
    let token = answer["mfaToken"].as_str().expect("a second factor is due").to_owned();
    let code = oathtool(key, hub.state().clock.now());
    let body = json!({"mfaToken": token, "code": code, "rememberDevice": true});
    assert_eq!(b.post("/auth/login/mfa/totp", body).await.0, 200);
    assert_eq!(b.post("/auth/logout", json!({})).await.0, 204);
    let (status, again) = b.post("/auth/login", json!({"email": email, "password": PASSWORD})).await;
    assert!(status == 200 && again["token"].is_string(), "remembered: password only: {again}");
    b
}

async fn enrol(hub: &TestHub, email: &str) -> String {
    let api = hub.login(email).await;
    let (_, setup) = api.post("/auth/mfa/totp/begin", json!({})).await;
    let key = setup["manualKey"].as_str().expect("manualKey").to_owned();
    let code = oathtool(&key, hub.state().clock.now());
    assert_eq!(api.post("/auth/mfa/totp/confirm", json!({"code": code})).await.0, 200);
    key
}

#[tokio::test]
async fn a_remembered_device_asks_for_the_second_factor_again_after_a_password_change() {
    let hub = common::spawn_hub().await;
    let ann = hub.user("ann@example.org", false).await;
    let key = enrol(&hub, &ann.email).await;
    let b = remembered_browser(&hub, &ann.email, &key).await;
    let change = json!({"currentPassword": PASSWORD, "newPassword": "a brand new secret"});
    assert_eq!(b.put("/auth/me/password", change).await.0, 204);
    assert_eq!(b.post("/auth/logout", json!({})).await.0, 204);
    let (status, answer) = b.post("/auth/login", json!({"email": ann.email, "password": "a brand new secret"})).await;
    assert_eq!((status.as_u16(), answer["mfaRequired"].clone()), (200, json!(true)), "{answer}");
    assert!(answer.get("token").is_none(), "no session without the second factor: {answer}");
}

#[tokio::test]
async fn a_remembered_device_asks_for_the_second_factor_again_after_a_reset() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let ann = hub.user("ann@example.org", false).await;
    let key = enrol(&hub, &ann.email).await;
    let b = remembered_browser(&hub, &ann.email, &key).await;
    let (_, reset) = hub.login(&root.email).await.post_empty(&format!("/admin/users/{}/reset-password", ann.id)).await;
    let url = reset["resetUrl"].as_str().expect("resetUrl");
    let token = url.split("token=").nth(1).expect("token in the link");
    // A second link issued before the reset dies with it.
    let (_, other) = hub.login(&root.email).await.post_empty(&format!("/admin/users/{}/reset-password", ann.id)).await;
    let other = other["resetUrl"].as_str().expect("resetUrl").split("token=").nth(1).expect("token").to_owned();
    let body = json!({"token": token, "password": "a reset new secret"});
    assert_eq!(hub.anon().post("/auth/reset-password", body).await.0, 204);
    let (status, answer) = b.post("/auth/login", json!({"email": ann.email, "password": "a reset new secret"})).await;
    assert_eq!((status.as_u16(), answer["mfaRequired"].clone()), (200, json!(true)), "{answer}");
    let again = json!({"token": other, "password": "a third secret 123"});
    assert_error(&hub.anon().post("/auth/reset-password", again).await, 400, "token_used");
}

type Ws = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

async fn open(hub: &TestHub, tenant: &str, token: &str) -> Ws {
    let url = format!("ws://{}/api/ws/events?tenantId={tenant}&token={token}", hub.http_addr);
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.expect("websocket");
    assert_eq!(next_live(&mut ws, 5, true).await.expect("hello")["type"], "hello");
    ws
}

/// The next live-protocol frame within `secs` (or any text frame with `any`); `None` when none
/// came or the socket closed.
async fn next_live(ws: &mut Ws, secs: u64, any: bool) -> Option<Value> {
    let until = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        match tokio::time::timeout_at(until, ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => {
                let frame: Value = serde_json::from_str(&t).expect("json");
                let kind = frame["type"].as_str().unwrap_or_default();
                if any || kind.starts_with("live-") || kind == "error" {
                    return Some(frame);
                }
            }
            Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => continue,
            _ => return None,
        }
    }
}

async fn send(ws: &mut Ws, frame: Value) {
    futures_util::SinkExt::send(ws, Message::Text(frame.to_string().into())).await.expect("send");
}

/// A member watches live audio with the owner; `change` takes the member's role; the member gets
/// `live-ended` (or a closed socket) and no more audio while the owner keeps listening.
async fn live_audio_after(change: Change) {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let owner = hub.user("owner@example.org", false).await;
    let owner_api = hub.login(&owner.email).await;
    let r = sat::register(&owner_api, json!({"name": "garden", "deviceId": "pi-live"})).await;
    let c = sat::connect(&hub, &r).await;
    let mia = hub.member_of("mia@example.org", owner.tenant, Role::Member).await;
    let (mut owner_ws, mut mia_ws) = (
        open(&hub, &r.tenant, &hub.token(&owner.email).await).await,
        open(&hub, &r.tenant, &hub.token(&mia.email).await).await,
    );
    let mut session = String::new();
    for ws in [&mut owner_ws, &mut mia_ws] {
        send(ws, json!({"type": "live-start", "satelliteId": r.id})).await;
        let started = next_live(ws, 10, false).await.expect("live-started");
        assert_eq!(started["type"], "live-started", "{started}");
        session = started["data"]["sessionId"].as_str().expect("session").to_owned();
    }
    let chunk = |seq: u64| {
        json!({"sessionId": session, "satelliteId": r.id, "tenantId": r.tenant, "seq": seq,
               "recordedAt": "2026-05-15T06:30:00.000Z", "audio": "UklGRgAAAAA="})
        .to_string()
    };
    c.publish(&r.topic("live-audio"), chunk(1)).await;
    for ws in [&mut owner_ws, &mut mia_ws] {
        assert_eq!(next_live(ws, 10, false).await.expect("audio")["type"], "live-audio");
    }

    let admin = hub.login(&root.email).await;
    let (_, members) = owner_api.get("/auth/members").await;
    let membership = members["members"]
        .as_array()
        .expect("members")
        .iter()
        .find(|m| m["userId"] == mia.id.to_string().as_str())
        .expect("mia")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (status, body) = match change {
        Change::Demoted => admin.put(&format!("/admin/members/{membership}/role"), json!({"role": "viewer"})).await,
        _ => admin.delete(&format!("/admin/members/{membership}")).await,
    };
    assert!(status.is_success(), "{status} {body}");
    // The eviction is applied before the answer: the frame is already queued.
    match next_live(&mut mia_ws, 10, false).await {
        Some(ended) => assert_eq!(
            ended,
            json!({"type": "live-ended", "data": {"sessionId": session, "satelliteId": r.id, "reason": "access_revoked"}})
        ),
        None => assert_eq!(change, Change::Removed, "a demoted viewer's socket stays open and is told"),
    }
    c.publish(&r.topic("live-audio"), chunk(2)).await;
    let heard = next_live(&mut owner_ws, 10, false).await.expect("the owner still listens");
    assert_eq!((heard["type"].as_str(), heard["data"]["seq"].as_u64()), (Some("live-audio"), Some(2)));
    assert_eq!(next_live(&mut mia_ws, 3, false).await, None, "{change:?}: no more audio for mia");
    if change == Change::Demoted {
        send(&mut mia_ws, json!({"type": "live-start", "satelliteId": r.id})).await;
        let refused = next_live(&mut mia_ws, 10, false).await.expect("an answer");
        assert_eq!((refused["type"].as_str(), refused["data"]["code"].as_str()), (Some("error"), Some("forbidden")));
    }
    let shown = owner_api.get(&format!("/satellites/{}/live", r.id)).await.1;
    assert_eq!(shown["watchers"], 1, "only the owner watches: {shown}");
}

#[tokio::test]
async fn a_member_demoted_to_viewer_stops_hearing_live_audio() {
    live_audio_after(Change::Demoted).await;
}

#[tokio::test]
async fn a_member_removed_from_the_team_stops_hearing_live_audio() {
    live_audio_after(Change::Removed).await;
}

#[tokio::test]
async fn a_new_email_needs_the_current_password_and_the_old_address_is_told() {
    let (hub, sink) = common::spawn_hub_with_mail().await;
    hub.user("ada@example.org", false).await;
    let api = hub.login("ada@example.org").await;
    let path = "/auth/me/profile";
    let refused = api.put(path, json!({"email": "thief@example.org"})).await;
    assert_error(&refused, 403, "current_password_required");
    let wrong = json!({"email": "thief@example.org", "currentPassword": "not the password"});
    assert_error(&api.put(path, wrong).await, 403, "wrong_password");
    assert_eq!(api.get("/auth/me").await.1["user"]["email"], "ada@example.org", "unchanged");
    // The name alone (and the same email, as the dashboard's form sends it) needs no password.
    let (status, user) = api.put(path, json!({"name": "Ada L.", "email": "ada@example.org"})).await;
    assert_eq!((status.as_u16(), user["name"].clone()), (200, json!("Ada L.")), "{user}");
    assert!(sink.messages().is_empty(), "no mail for a name change");

    let right = json!({"email": "ada.new@example.org", "currentPassword": PASSWORD});
    let (status, user) = api.put(path, right).await;
    assert_eq!((status.as_u16(), user["email"].clone()), (200, json!("ada.new@example.org")), "{user}");
    let mails = sink.wait_for(1).await;
    let notice = mails[0].replace("=\n", ""); // quoted-printable soft line breaks
    assert!(
        notice.lines().any(|l| l.starts_with("To:") && l.contains("ada@example.org")),
        "to the old address: {notice}"
    );
    assert!(notice.contains("ada.new@example.org"), "names the new address: {notice}");
    let (status, _) =
        hub.anon().post("/auth/login", json!({"email": "ada.new@example.org", "password": PASSWORD})).await;
    assert_eq!(status, 200, "the new address signs in");
}
