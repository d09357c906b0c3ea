//! A WebSocket at `/api/ws/events` is only as good as its credentials: it is closed within seconds
//! once its session is revoked, its user blocked or removed from the team, or its API key revoked.
//! A socket whose credentials still hold stays open.

mod common;

use std::time::Duration;

use birdhub::domain::Role;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, tungstenite::Message};

type Ws = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

/// Far above the hub's re-check period, so a slow machine does not fail the test.
const DEADLINE: Duration = Duration::from_secs(20);

async fn open(hub: &common::TestHub, query: &str) -> Ws {
    let url = format!("ws://{}/api/ws/events?{query}", hub.http_addr);
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.expect("websocket");
    match tokio::time::timeout(Duration::from_secs(5), ws.next()).await {
        Ok(Some(Ok(Message::Text(t)))) => {
            assert_eq!(serde_json::from_str::<Value>(&t).expect("json")["type"], "hello")
        }
        other => panic!("no hello frame: {other:?}"),
    }
    ws
}

/// Reads until the server closes the socket (a close frame or the end of the stream); false if it
/// is still open at the deadline.
async fn closed_by_server(ws: &mut Ws) -> bool {
    let until = tokio::time::Instant::now() + DEADLINE;
    loop {
        match tokio::time::timeout_at(until, ws.next()).await {
            Err(_) => return false,
            Ok(None | Some(Err(_)) | Some(Ok(Message::Close(_)))) => return true,
            Ok(Some(Ok(_))) => continue,
        }
    }
}

/// The socket still answers: a ping gets its pong.
async fn still_open(ws: &mut Ws) -> bool {
    if ws.send(Message::Ping(b"still there?".to_vec().into())).await.is_err() {
        return false;
    }
    let until = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::time::timeout_at(until, ws.next()).await {
            Ok(Some(Ok(Message::Pong(p)))) if &p[..] == b"still there?" => return true,
            Ok(Some(Ok(Message::Close(_)) | Err(_)) | None) | Err(_) => return false,
            Ok(Some(Ok(_))) => continue,
        }
    }
}

#[tokio::test]
async fn logging_out_closes_the_sessions_socket() {
    let hub = common::spawn_hub().await;
    let ada = hub.user("ada@example.org", false).await;
    let (token, other) = (hub.token(&ada.email).await, hub.token(&ada.email).await);
    let mut ws = open(&hub, &format!("token={token}")).await;
    let mut kept = open(&hub, &format!("token={other}")).await;
    let (status, _) = common::Api::with_bearer(&hub.base_url, &token).post_empty("/auth/logout").await;
    assert_eq!(status, 204);
    assert!(closed_by_server(&mut ws).await, "the socket of the ended session is still open");
    assert!(still_open(&mut kept).await, "another session of the same user is untouched");
}

#[tokio::test]
async fn blocking_the_user_closes_their_socket() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let ada = hub.user("ada@example.org", false).await;
    let mut ws = open(&hub, &format!("token={}", hub.token(&ada.email).await)).await;
    let admin = hub.login(&root.email).await;
    assert_eq!(admin.post_empty(&format!("/admin/users/{}/block", ada.id)).await.0, 200);
    assert!(closed_by_server(&mut ws).await, "a blocked user's socket is still open");
}

#[tokio::test]
async fn removing_the_member_from_the_team_closes_their_socket() {
    let hub = common::spawn_hub().await;
    let root = hub.user("root@example.org", true).await;
    let owner = hub.user("owner@example.org", false).await;
    let bob = hub.member_of("bob@example.org", owner.tenant, Role::Viewer).await;
    let bob_token = hub.token(&bob.email).await;
    let mut ws = open(&hub, &format!("tenantId={}&token={bob_token}", owner.tenant)).await;
    let mut owners = open(&hub, &format!("tenantId={}&token={}", owner.tenant, hub.token(&owner.email).await)).await;
    let admin = hub.login(&root.email).await;
    assert_eq!(admin.delete(&format!("/admin/users/{}/tenants/{}", bob.id, owner.tenant)).await.0, 204);
    assert!(closed_by_server(&mut ws).await, "a removed member still listens to the team");
    assert!(still_open(&mut owners).await, "the team's owner keeps listening");
}

#[tokio::test]
async fn revoking_the_api_key_closes_its_socket() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let (status, key) = api.post("/api-keys", json!({"name": "dashboard", "role": "viewer"})).await;
    assert_eq!(status, 201, "{key}");
    let mut ws = open(&hub, &format!("token={}", key["key"].as_str().expect("key"))).await;
    let id = key["id"].as_str().expect("id");
    assert_eq!(api.delete(&format!("/api-keys/{id}")).await.0, 204);
    assert!(closed_by_server(&mut ws).await, "a revoked key's socket is still open");
}
