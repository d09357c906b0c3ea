//! Each credential reaches only what it says (issue 34, findings 4, 9 and 16):
//! - a satellite's own API key has no team role: it renames its device, rotates its key, reads and
//!   pushes its config, and everything else (team data, other devices, the WebSocket) is 403;
//! - the WebSocket passes the "team requires two-factor" gate at its upgrade and at each re-check;
//! - a device's `deviceId` (enough to claim a team-owned device) is shown only to its managers.

mod common;

use std::time::Duration;

use birdhub::domain::Role;
use common::{Api, TestHub, assert_error, sat, seed};
use futures_util::{SinkExt, StreamExt};
use reqwest::Method;
use serde_json::{Value, json};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, tungstenite};

type Ws = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

/// Far above the hub's 2 s re-check period, so a slow machine does not fail the test.
const DEADLINE: Duration = Duration::from_secs(20);

/// Opens `/api/ws/events` with `token`; the hello frame, or the refusal's status and JSON body.
async fn socket(hub: &TestHub, token: &str) -> Result<Ws, (u16, Value)> {
    let url = format!("ws://{}/api/ws/events?token={token}", hub.http_addr);
    match tokio_tungstenite::connect_async(url).await {
        Ok((mut ws, _)) => match tokio::time::timeout(Duration::from_secs(5), ws.next()).await {
            Ok(Some(Ok(tungstenite::Message::Text(t)))) => {
                assert_eq!(serde_json::from_str::<Value>(&t).expect("json")["type"], "hello");
                Ok(ws)
            }
            other => panic!("no hello frame: {other:?}"),
        },
        Err(tungstenite::Error::Http(resp)) => {
            let body = resp.body().as_deref().and_then(|b| serde_json::from_slice(b).ok()).unwrap_or(Value::Null);
            Err((resp.status().as_u16(), body))
        }
        Err(e) => panic!("websocket: {e}"),
    }
}

/// The refusal of a socket: its status and error code.
async fn refused_socket(hub: &TestHub, token: &str) -> (u16, Value) {
    match socket(hub, token).await {
        Ok(_) => panic!("the socket was opened"),
        Err((status, body)) => (status, body["code"].clone()),
    }
}

/// Reads until the server closes the socket; false if it is still open at the deadline.
async fn closed_by_server(ws: &mut Ws) -> bool {
    let until = tokio::time::Instant::now() + DEADLINE;
    loop {
        match tokio::time::timeout_at(until, ws.next()).await {
            Err(_) => return false,
            Ok(None | Some(Err(_)) | Some(Ok(tungstenite::Message::Close(_)))) => return true,
            Ok(Some(Ok(_))) => continue,
        }
    }
}

/// The socket still answers a ping.
async fn still_open(ws: &mut Ws) -> bool {
    if ws.send(tungstenite::Message::Ping(b"there?".to_vec().into())).await.is_err() {
        return false;
    }
    let until = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::time::timeout_at(until, ws.next()).await {
            Ok(Some(Ok(tungstenite::Message::Pong(p)))) if &p[..] == b"there?" => return true,
            Ok(Some(Ok(tungstenite::Message::Close(_)) | Err(_)) | None) | Err(_) => return false,
            Ok(Some(Ok(_))) => continue,
        }
    }
}

/// Sends a frame and waits for the answer of type `kind` (or an `error` frame).
async fn ask(ws: &mut Ws, frame: Value, kind: &str) -> Value {
    ws.send(tungstenite::Message::Text(frame.to_string().into())).await.expect("send");
    let until = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::time::timeout_at(until, ws.next()).await {
            Ok(Some(Ok(tungstenite::Message::Text(t)))) => {
                let v: Value = serde_json::from_str(&t).expect("json");
                if v["type"] == kind || v["type"] == "error" {
                    return v;
                }
            }
            Ok(Some(Ok(_))) => continue,
            other => panic!("no {kind} answer: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_satellite_key_reaches_only_its_own_device() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login(&owner.email).await;
    let garden = sat::register(&admin, json!({"name": "garden", "deviceId": "garden-pi"})).await;
    let pond = sat::register(&admin, json!({"name": "pond", "deviceId": "pond-pi"})).await;
    let garden_id: birdhub::ids::SatelliteId = garden.id.parse().expect("id");
    let (chunk, detection) =
        seed::heard(&hub, owner.tenant, garden_id, "2025-05-01T06:00:00.000Z", seed::ROBIN, 0.9).await;
    let key = Api::with_bearer(&hub.base_url, &garden.api_key);

    // Team data, other devices, device actions outside the allow-list, people's routes: all 403.
    let refused: Vec<(Method, String, Option<Value>)> = vec![
        (Method::GET, "/detections".into(), None),
        (Method::GET, format!("/detections/{detection}"), None),
        (Method::GET, format!("/detections/{detection}/share"), None),
        (Method::GET, format!("/audio/{chunk}"), None),
        (Method::GET, "/export/detections?format=csv".into(), None),
        (Method::GET, "/settings/tenant".into(), None),
        (Method::GET, "/alert-rules/channels".into(), None),
        (Method::GET, "/alerts".into(), None),
        (Method::GET, "/stats/dashboard".into(), None),
        (Method::GET, "/satellites".into(), None),
        (Method::GET, format!("/satellites/{}", pond.id), None),
        (Method::GET, format!("/satellites/{}/config", pond.id), None),
        (Method::PATCH, format!("/satellites/{}", pond.id), Some(json!({"name": "mine"}))),
        (Method::POST, format!("/satellites/{}/rotate-api-key", pond.id), None),
        (Method::POST, "/satellites".into(), Some(json!({"name": "new", "deviceId": "x-1"}))),
        (Method::POST, format!("/satellites/{}/update", garden.id), Some(json!({"targetVersion": "9.9.9"}))),
        (Method::POST, format!("/satellites/{}/logs/request", garden.id), Some(json!({}))),
        (Method::GET, format!("/satellites/{}/telemetry", garden.id), None),
        (Method::DELETE, format!("/satellites/{}", garden.id), None),
        (Method::GET, "/auth/me".into(), None),
        (Method::GET, "/tenants".into(), None),
        (Method::GET, "/api-keys".into(), None),
    ];
    for (method, path, body) in refused {
        let got = key.send(method.clone(), &path, body).await;
        assert_eq!(
            (got.0.as_u16(), got.1["code"].clone()),
            (403, json!("satellite_key_not_allowed")),
            "{method} {path}: {}",
            got.1
        );
    }
    // No team stream, so no live session on another satellite either.
    assert_eq!(refused_socket(&hub, &garden.api_key).await, (403, json!("satellite_key_not_allowed")));

    // What a device calls for itself still works.
    let (status, me) = key.get(&format!("/satellites/{}", garden.id)).await;
    assert_eq!((status.as_u16(), me["name"].clone()), (200, json!("garden")), "{me}");
    assert_eq!(key.get(&format!("/satellites/{}/config", garden.id)).await.0, 200);
    assert_eq!(key.get(&format!("/satellites/{}/schedule", garden.id)).await.0, 200);
    let (status, renamed) =
        key.send(Method::PATCH, &format!("/satellites/{}", garden.id), Some(json!({"name": "garden-2"}))).await;
    assert_eq!((status.as_u16(), renamed["name"].clone()), (200, json!("garden-2")), "{renamed}");
    let (status, body) =
        key.put(&format!("/satellites/{}/config", garden.id), json!({"overrides": {"filter_enabled": false}})).await;
    assert_eq!(status, 200, "{body}");
    assert_error(
        &key.put(&format!("/satellites/{}/config", garden.id), json!({"configLocked": true})).await,
        403,
        "admin_required",
    );
    assert_eq!(key.get("/health").await.0, 200);
    assert_ne!(key.get("/mobile/latest").await.0.as_u16(), 403, "a public route answers a device like anyone");
    let (status, rotated) = key.post_empty(&format!("/satellites/{}/rotate-api-key", garden.id)).await;
    assert_eq!(status, 200, "{rotated}");
    let new_key = Api::with_bearer(&hub.base_url, rotated["apiKey"].as_str().expect("key"));
    assert_eq!(new_key.get(&format!("/satellites/{}", garden.id)).await.0, 200);
    assert_error(&new_key.get("/detections").await, 403, "satellite_key_not_allowed");

    // A team API key works as before: a member key reads the team's data and watches live audio.
    let (status, created) = admin.post("/api-keys", json!({"name": "script", "role": "member"})).await;
    assert_eq!(status, 201, "{created}");
    let team_key_raw = created["key"].as_str().expect("key").to_owned();
    let team_key = Api::with_bearer(&hub.base_url, &team_key_raw);
    let (status, list) = team_key.get("/detections").await;
    assert_eq!(status, 200, "{list}");
    assert!(list.to_string().contains(&detection.to_string()), "the key sees the detection: {list}");
    for path in [
        format!("/detections/{detection}/share"),
        "/export/detections?format=csv".to_owned(),
        "/settings/tenant".to_owned(),
        "/satellites".to_owned(),
        format!("/satellites/{}", pond.id),
    ] {
        let (status, body) = team_key.get(&path).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    let mut ws = socket(&hub, &team_key_raw).await.expect("a team key opens the socket");
    let started = ask(&mut ws, json!({"type": "live-start", "satelliteId": pond.id}), "live-started").await;
    assert_eq!(started["type"], "live-started", "{started}");
}

#[tokio::test]
async fn the_socket_keeps_the_two_factor_gate() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let other = hub.user("other@example.org", false).await;
    let member = hub.member_of("member@example.org", owner.tenant, Role::Member).await;
    let member_token = hub.token(&member.email).await;
    let mut before = socket(&hub, &member_token).await.expect("no requirement yet: the socket opens");
    let mut unrelated = socket(&hub, &hub.token(&other.email).await).await.expect("another team's socket");

    let admin = hub.login(&owner.email).await;
    let (status, body) = admin.put("/settings/tenant", json!({"mfa_required": true})).await;
    assert_eq!(status, 200, "{body}");

    // The open socket is closed at its next re-check; a new one is refused like any route.
    assert!(closed_by_server(&mut before).await, "a member who must now enrol still listens to the team");
    assert!(still_open(&mut unrelated).await, "a person in a team without the requirement keeps listening");
    let fresh = hub.token(&member.email).await;
    assert_error(&Api::with_bearer(&hub.base_url, &fresh).get("/detections").await, 403, "mfa_enrollment_required");
    assert_eq!(refused_socket(&hub, &fresh).await, (403, json!("mfa_enrollment_required")));
}

/// `deviceId` of each satellite in the caller's list, by name.
async fn device_ids(api: &Api) -> Vec<(String, Value)> {
    let (status, list) = api.get("/satellites").await;
    assert_eq!(status, 200, "{list}");
    let mut rows: Vec<(String, Value)> = list["satellites"]
        .as_array()
        .expect("list")
        .iter()
        .map(|s| (s["name"].as_str().expect("name").to_owned(), s["device_id"].clone()))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows
}

/// The dashboard's satellite pages as `api`'s browser session sees them.
async fn pages(api: &Api, ids: &[&str]) -> String {
    let mut html = String::new();
    for path in std::iter::once("/satellites".to_owned()).chain(ids.iter().map(|id| format!("/satellites/{id}"))) {
        let resp = api.client.get(format!("{}{path}", api.base)).send().await.expect("page");
        assert_eq!(resp.status(), 200, "{path}");
        html.push_str(&resp.text().await.expect("html"));
    }
    html
}

#[tokio::test]
async fn only_those_who_may_manage_a_device_see_its_device_id() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let registrant = hub.member_of("reg@example.org", owner.tenant, Role::Member).await;
    let leaver = hub.member_of("leaver@example.org", owner.tenant, Role::Member).await;
    let other = hub.member_of("other@example.org", owner.tenant, Role::Member).await;
    let viewer = hub.member_of("viewer@example.org", owner.tenant, Role::Viewer).await;
    let reg = hub.login(&registrant.email).await;
    let mine = sat::register(&reg, json!({"name": "a-mine", "deviceId": "dev-registrant-1"})).await;
    let leaving = hub.login(&leaver.email).await;
    let owned = sat::register(&leaving, json!({"name": "b-owned", "deviceId": "dev-team-owned-1"})).await;
    // Leaving (devices kept running) makes the device team-owned: admin-managed from then on.
    assert_eq!(leaving.post(&format!("/tenants/{}/leave?devices=keep", owner.tenant), json!({})).await.0, 204);

    let admin = hub.login(&owner.email).await;
    let (viewer_api, other_api) = (hub.login(&viewer.email).await, hub.login(&other.email).await);
    let hidden = vec![("a-mine".to_owned(), Value::Null), ("b-owned".to_owned(), Value::Null)];
    assert_eq!(device_ids(&viewer_api).await, hidden, "a viewer");
    assert_eq!(device_ids(&other_api).await, hidden, "a member who did not register them");
    assert_eq!(
        device_ids(&reg).await,
        vec![("a-mine".to_owned(), json!("dev-registrant-1")), ("b-owned".to_owned(), Value::Null)],
        "the registrant sees their own device's id only"
    );
    assert_eq!(
        device_ids(&admin).await,
        vec![("a-mine".to_owned(), json!("dev-registrant-1")), ("b-owned".to_owned(), json!("dev-team-owned-1"))],
        "an admin manages both"
    );
    for (api, who) in [(&viewer_api, "viewer"), (&other_api, "member")] {
        for id in [&mine.id, &owned.id] {
            let (status, one) = api.get(&format!("/satellites/{id}")).await;
            assert_eq!((status.as_u16(), one["device_id"].clone()), (200, Value::Null), "{who}: {one}");
        }
    }
    assert_eq!(admin.get(&format!("/satellites/{}", owned.id)).await.1["device_id"], "dev-team-owned-1");
    let html = pages(&viewer_api, &[&mine.id, &owned.id]).await;
    assert!(
        !html.contains("dev-registrant-1") && !html.contains("dev-team-owned-1"),
        "the dashboard shows a viewer no device id"
    );

    // The registration rules (SPEC 4.4) still hold for whoever knows a device id.
    assert_error(
        &other_api.post("/satellites", json!({"name": "x", "deviceId": "dev-registrant-1"})).await,
        403,
        "device_registered_by_another",
    );
    assert_error(
        &viewer_api.post("/satellites", json!({"name": "x", "deviceId": "dev-team-owned-1"})).await,
        403,
        "insufficient_role",
    );
    let (status, claimed) =
        other_api.post("/satellites", json!({"name": "b-owned", "deviceId": "dev-team-owned-1"})).await;
    assert_eq!(
        (status.as_u16(), claimed["id"].clone()),
        (200, json!(owned.id)),
        "a member may claim a team-owned device: {claimed}"
    );
    assert_eq!(
        other_api.get(&format!("/satellites/{}", owned.id)).await.1["device_id"],
        "dev-team-owned-1",
        "the claimant now manages it"
    );
}
