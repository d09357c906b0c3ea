//! Live audio end to end (SPEC 2.8, 3, 4.15): dashboards watch a satellite over the team
//! WebSocket, the hub drives the satellite's session over the real broker (`live-start`,
//! `live-stop`) and relays its `live-audio` chunks to the watching sockets only. Timeouts run on
//! the hub's movable clock.

mod common;

use std::time::Duration;

use birdhub::domain::Role;
use common::{Api, TestHub, assert_error, sat};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, tungstenite::Message};

type Ws = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

/// A hub, its owner's session and token, a registered satellite and that satellite's MQTT client
/// (subscribed to its own `live-start` and `live-stop` channels).
struct Setup {
    hub: TestHub,
    api: Api,
    token: String,
    r: sat::Registered,
    c: sat::Client,
}

async fn setup() -> Setup {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let token = hub.token(&owner.email).await;
    let r = sat::register(&api, json!({"name": "garden", "deviceId": "pi-live"})).await;
    let mut c = sat::connect(&hub, &r).await;
    assert!(c.subscribe(&r.topic("live-start")).await, "own live-start channel");
    assert!(c.subscribe(&r.topic("live-stop")).await, "own live-stop channel");
    Setup { hub, api, token, r, c }
}

/// Opens the team socket with `token` and reads its hello.
async fn open(hub: &TestHub, tenant: &str, token: &str) -> Ws {
    let url = format!("ws://{}/api/ws/events?tenantId={tenant}&token={token}", hub.http_addr);
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.expect("websocket");
    let hello = next_frame(&mut ws, 5).await.expect("hello");
    assert_eq!(hello["type"], "hello");
    ws
}

async fn send(ws: &mut Ws, frame: Value) {
    ws.send(Message::Text(frame.to_string().into())).await.expect("send");
}

/// The next JSON text frame within `secs`, skipping control frames; `None` if none came.
async fn next_frame(ws: &mut Ws, secs: u64) -> Option<Value> {
    let until = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        match tokio::time::timeout_at(until, ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => return Some(serde_json::from_str(&t).expect("json frame")),
            Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => continue,
            _ => return None,
        }
    }
}

/// The next frame that is part of the live protocol (skipping team events such as detections).
async fn next_live(ws: &mut Ws, secs: u64) -> Option<Value> {
    loop {
        let frame = next_frame(ws, secs).await?;
        let kind = frame["type"].as_str().unwrap_or_default();
        if kind.starts_with("live-") || kind == "error" {
            return Some(frame);
        }
    }
}

/// Sends `frame` and expects the answer to be of `kind`.
async fn ask(ws: &mut Ws, frame: Value, kind: &str) -> Value {
    send(ws, frame.clone()).await;
    let answer = next_live(ws, 10).await.unwrap_or_else(|| panic!("no answer to {frame}"));
    assert_eq!(answer["type"], kind, "answer to {frame}: {answer}");
    answer
}

async fn start(ws: &mut Ws, satellite: &str) -> Value {
    ask(ws, json!({"type": "live-start", "satelliteId": satellite}), "live-started").await["data"].clone()
}

/// Sends `frame` and expects an error frame with `code`.
async fn refused(ws: &mut Ws, frame: Value, code: &str) {
    let answer = ask(ws, frame.clone(), "error").await;
    assert_eq!(answer["data"]["code"], code, "answer to {frame}: {answer}");
    assert!(answer["data"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{answer}");
}

/// A `live-audio` message of the satellite, published QoS 0 as a satellite does.
async fn chunk(s: &Setup, session: &str, seq: u64, audio: &str) {
    let body = json!({"sessionId": session, "satelliteId": s.r.id, "tenantId": s.r.tenant, "seq": seq,
                      "recordedAt": "2026-05-15T06:30:00.000Z", "audio": audio});
    s.c.client
        .publish(s.r.topic("live-audio"), rumqttc::QoS::AtMostOnce, false, body.to_string().into_bytes())
        .await
        .expect("publish live-audio");
}

/// Polls `GET path` until `ok` holds.
async fn wait_for(api: &Api, path: &str, ok: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..400 {
        let (status, body) = api.get(path).await;
        if status == 200 && ok(&body) {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{path} never reached the expected state: {:?}", api.get(path).await);
}

/// The `live-start` / `live-stop` messages the satellite received within `ms` milliseconds.
async fn control_messages(c: &mut sat::Client, r: &sat::Registered, ms: u64) -> Vec<(String, Value)> {
    let mut seen = Vec::new();
    let until = tokio::time::Instant::now() + Duration::from_millis(ms);
    while let Ok(Some(event)) = tokio::time::timeout_at(until, c.events.recv()).await {
        if let sat::Seen::Message { topic, payload } = event {
            let channel = topic.strip_prefix(&r.prefix).unwrap_or(&topic).to_owned();
            seen.push((channel, serde_json::from_slice(&payload).expect("json")));
        }
    }
    seen
}

#[tokio::test]
async fn watchers_share_one_session_and_only_they_get_its_audio() {
    let mut s = setup().await;
    let (mut first, mut second, mut bystander) = (
        open(&s.hub, &s.r.tenant, &s.token).await,
        open(&s.hub, &s.r.tenant, &s.token).await,
        open(&s.hub, &s.r.tenant, &s.token).await,
    );
    let live = format!("/satellites/{}/live", s.r.id);
    let (_, idle) = s.api.get(&live).await;
    assert_eq!(idle["active"], false, "{idle}");

    let started = start(&mut first, &s.r.id).await;
    assert_eq!((started["satelliteId"].as_str(), started["watchers"].as_u64()), (Some(s.r.id.as_str()), Some(1)));
    let session = started["sessionId"].as_str().expect("sessionId").to_owned();
    let msg = s.c.message_on(&s.r.topic("live-start"), 10).await.expect("live-start");
    assert_eq!(msg, json!({"sessionId": session}));

    let audio = ["UklGRgAAAAA=", "UklGRgEBAQE=", "UklGRgICAgI="];
    for (seq, a) in audio.iter().enumerate() {
        chunk(&s, &session, seq as u64, a).await;
    }
    for (seq, a) in audio.iter().enumerate() {
        let got = next_live(&mut first, 10).await.expect("live-audio");
        assert_eq!(got["type"], "live-audio");
        assert_eq!(
            got["data"],
            json!({"sessionId": session, "satelliteId": s.r.id, "seq": seq, "recordedAt": "2026-05-15T06:30:00.000Z", "audio": a})
        );
    }

    let joined = start(&mut second, &s.r.id).await;
    assert_eq!((joined["sessionId"].as_str(), joined["watchers"].as_u64()), (Some(session.as_str()), Some(2)));
    for (channel, body) in control_messages(&mut s.c, &s.r, 500).await {
        assert_eq!((channel.as_str(), body), ("live-start", json!({"sessionId": session})), "no second session");
    }

    chunk(&s, &session, 3, "UklGRgMDAwM=").await;
    for ws in [&mut first, &mut second] {
        let got = next_live(ws, 10).await.expect("live-audio");
        assert_eq!((got["data"]["seq"].as_u64(), got["data"]["sessionId"].as_str()), (Some(3), Some(session.as_str())));
    }
    assert_eq!(next_live(&mut bystander, 1).await, None, "a socket that did not join gets no live audio");

    let shown = s.api.get(&live).await.1;
    assert_eq!((shown["active"].clone(), shown["sessionId"].clone()), (json!(true), json!(session)));
    assert_eq!((shown["watchers"].as_u64(), shown["chunksRelayed"].as_u64()), (Some(2), Some(4)), "{shown}");
    let audits: i64 = s.hub.sql(|c| {
        c.query_row(
            "SELECT count(*) FROM audit_log WHERE action = 'admin.satellite_live_started' AND target_id = ?1",
            [&s.r.id],
            |row| row.get(0),
        )
        .expect("audit")
    });
    assert_eq!(audits, 1, "one session was created");
}

#[tokio::test]
async fn a_session_nobody_keeps_alive_times_out() {
    let mut s = setup().await;
    let mut ws = open(&s.hub, &s.r.tenant, &s.token).await;
    let session = start(&mut ws, &s.r.id).await["sessionId"].as_str().expect("id").to_owned();
    assert_eq!(s.c.message_on(&s.r.topic("live-start"), 10).await, Some(json!({"sessionId": session})));

    s.hub.state().clock.advance(Duration::from_secs(61));
    assert_eq!(s.c.message_on(&s.r.topic("live-stop"), 10).await, Some(json!({"sessionId": session})));
    let ended = next_live(&mut ws, 10).await.expect("live-ended");
    assert_eq!(
        ended,
        json!({"type": "live-ended", "data": {"sessionId": session, "satelliteId": s.r.id, "reason": "timeout"}})
    );
    let (_, shown) = s.api.get(&format!("/satellites/{}/live", s.r.id)).await;
    assert_eq!(shown["active"], false, "{shown}");
    // The ended session's chunks go nowhere.
    chunk(&s, &session, 9, "UklGRg==").await;
    assert_eq!(next_live(&mut ws, 1).await, None);
}

#[tokio::test]
async fn keepalives_keep_the_session_and_live_start_is_repeated() {
    let mut s = setup().await;
    let mut ws = open(&s.hub, &s.r.tenant, &s.token).await;
    let live = format!("/satellites/{}/live", s.r.id);
    let session = start(&mut ws, &s.r.id).await["sessionId"].as_str().expect("id").to_owned();
    let again = json!({"sessionId": session});
    assert_eq!(s.c.message_on(&s.r.topic("live-start"), 10).await.as_ref(), Some(&again));

    let clock = &s.hub.state().clock;
    clock.advance(Duration::from_secs(40));
    assert_eq!(s.c.message_on(&s.r.topic("live-start"), 10).await.as_ref(), Some(&again), "refreshed after 20 s");
    send(&mut ws, json!({"type": "live-keepalive", "satelliteId": s.r.id})).await;
    wait_for(&s.api, &live, |v| v["lastKeepaliveAt"] != v["startedAt"]).await;

    clock.advance(Duration::from_secs(40));
    // The sweeper ends timed-out sessions before it refreshes the others: a refresh now means the
    // session survived 80 s with a keepalive at 40 s.
    assert_eq!(s.c.message_on(&s.r.topic("live-start"), 10).await.as_ref(), Some(&again), "still running");
    let shown = s.api.get(&live).await.1;
    assert_eq!((shown["active"].clone(), shown["sessionId"].clone()), (json!(true), again["sessionId"].clone()));
    chunk(&s, &session, 1, "UklGRg==").await;
    assert_eq!(next_live(&mut ws, 10).await.expect("audio")["type"], "live-audio");

    clock.advance(Duration::from_secs(61));
    assert_eq!(s.c.message_on(&s.r.topic("live-stop"), 10).await.as_ref(), Some(&again));
    assert_eq!(next_live(&mut ws, 10).await.expect("ended")["data"]["reason"], "timeout");
}

#[tokio::test]
async fn the_last_watcher_leaving_stops_the_satellite() {
    let mut s = setup().await;
    let (mut a, mut b) = (open(&s.hub, &s.r.tenant, &s.token).await, open(&s.hub, &s.r.tenant, &s.token).await);
    let session = start(&mut a, &s.r.id).await["sessionId"].as_str().expect("id").to_owned();
    start(&mut b, &s.r.id).await;
    let stop = json!({"type": "live-stop", "satelliteId": s.r.id});
    let left = ask(&mut a, stop.clone(), "live-stopped").await;
    assert_eq!(left["data"]["watchers"], 1);
    refused(&mut a, json!({"type": "live-keepalive", "satelliteId": s.r.id}), "not_watching").await;
    refused(&mut a, stop.clone(), "not_watching").await;
    let seen = control_messages(&mut s.c, &s.r, 500).await;
    assert!(!seen.iter().any(|(c, _)| c == "live-stop"), "one watcher is left: {seen:?}");

    assert_eq!(ask(&mut b, stop, "live-stopped").await["data"]["watchers"], 0);
    assert_eq!(s.c.message_on(&s.r.topic("live-stop"), 10).await, Some(json!({"sessionId": session})));
    assert_eq!(s.api.get(&format!("/satellites/{}/live", s.r.id)).await.1["active"], false);

    // Closing the socket leaves its sessions too.
    let session = start(&mut a, &s.r.id).await["sessionId"].as_str().expect("id").to_owned();
    assert_eq!(s.c.message_on(&s.r.topic("live-start"), 10).await, Some(json!({"sessionId": session})));
    a.close(None).await.expect("close");
    assert_eq!(s.c.message_on(&s.r.topic("live-stop"), 10).await, Some(json!({"sessionId": session})));
}

#[tokio::test]
async fn delete_and_satellite_removal_end_the_session_for_every_watcher() {
    let mut s = setup().await;
    let mut ws = open(&s.hub, &s.r.tenant, &s.token).await;
    let live = format!("/satellites/{}/live", s.r.id);
    assert_error(&s.api.delete(&live).await, 404, "live_session_not_found");
    let session = start(&mut ws, &s.r.id).await["sessionId"].as_str().expect("id").to_owned();
    assert_eq!(s.api.delete(&live).await.0, 204);
    assert_eq!(s.c.message_on(&s.r.topic("live-stop"), 10).await, Some(json!({"sessionId": session})));
    let ended = next_live(&mut ws, 10).await.expect("live-ended");
    assert_eq!((ended["type"].as_str(), ended["data"]["reason"].as_str()), (Some("live-ended"), Some("stopped")));
    assert_error(&s.api.delete(&live).await, 404, "live_session_not_found");

    start(&mut ws, &s.r.id).await;
    assert_eq!(s.api.delete(&format!("/satellites/{}", s.r.id)).await.0, 204);
    let ended = next_live(&mut ws, 10).await.expect("live-ended");
    assert_eq!(ended["data"]["reason"], "satellite_deleted", "{ended}");
}

#[tokio::test]
async fn bad_requests_get_error_frames_and_the_socket_stays_usable() {
    let s = setup().await;
    let mut ws = open(&s.hub, &s.r.tenant, &s.token).await;

    let stranger = s.hub.user("stranger@example.org", false).await;
    let outsider = s.hub.login(&stranger.email).await;
    let theirs = sat::register(&outsider, json!({"name": "far", "deviceId": "pi-far"})).await;
    let start_of = |id: &str| json!({"type": "live-start", "satelliteId": id});
    refused(&mut ws, start_of(&theirs.id), "satellite_not_found").await;
    refused(&mut ws, start_of(&uuid::Uuid::new_v4().to_string()), "satellite_not_found").await;
    refused(&mut ws, start_of("not-a-uuid"), "invalid_message").await;
    refused(&mut ws, json!({"type": "live-start"}), "invalid_message").await;
    refused(&mut ws, json!({"type": "live-rewind", "satelliteId": s.r.id}), "invalid_message").await;
    send(&mut ws, json!("{not json")).await;
    ws.send(Message::Text("{not json".into())).await.expect("send");
    for _ in 0..2 {
        assert_eq!(next_live(&mut ws, 10).await.expect("error")["data"]["code"], "invalid_message");
    }
    ws.send(Message::Binary(vec![1, 2, 3].into())).await.expect("send");
    assert_eq!(next_live(&mut ws, 10).await.expect("error")["data"]["code"], "invalid_message");
    refused(&mut ws, json!({"type": "live-keepalive", "satelliteId": s.r.id}), "not_watching").await;
    // Still usable.
    start(&mut ws, &s.r.id).await;

    // A viewer of the team may look but not listen.
    let viewer = s.hub.member_of("viewer@example.org", s.r.tenant.parse().expect("tenant"), Role::Viewer).await;
    let mut viewing = open(&s.hub, &s.r.tenant, &s.hub.token(&viewer.email).await).await;
    refused(&mut viewing, start_of(&s.r.id), "forbidden").await;
    let as_viewer = s.hub.login(&viewer.email).await;
    let live = format!("/satellites/{}/live", s.r.id);
    let (status, shown) = as_viewer.get(&live).await;
    assert_eq!((status.as_u16(), shown["active"].clone(), shown["watchers"].clone()), (200, json!(true), json!(1)));
    assert_eq!(as_viewer.delete(&live).await.0, 403);

    // Another team's satellite is not found over HTTP either.
    let theirs_live = format!("/satellites/{}/live", theirs.id);
    assert_error(&s.api.get(&theirs_live).await, 404, "satellite_not_found");
    assert_error(&s.api.delete(&theirs_live).await, 404, "satellite_not_found");
    assert_error(&outsider.get(&live).await, 404, "satellite_not_found");
    assert_error(&outsider.delete(&live).await, 404, "satellite_not_found");
}

#[tokio::test]
async fn chunks_of_another_session_are_not_relayed() {
    let s = setup().await;
    let mut ws = open(&s.hub, &s.r.tenant, &s.token).await;
    let live = format!("/satellites/{}/live", s.r.id);
    // Before any session: dropped.
    chunk(&s, &uuid::Uuid::new_v4().to_string(), 0, "UklGRgAA").await;
    let session = start(&mut ws, &s.r.id).await["sessionId"].as_str().expect("id").to_owned();
    chunk(&s, &uuid::Uuid::new_v4().to_string(), 1, "UklGRgEB").await;
    // A chunk claiming another satellite in its body is refused too.
    let forged = json!({"sessionId": session, "satelliteId": uuid::Uuid::new_v4(), "tenantId": s.r.tenant, "seq": 2,
                        "recordedAt": "2026-05-15T06:30:00.000Z", "audio": "UklGRgIC"});
    s.c.publish(&s.r.topic("live-audio"), forged.to_string()).await;
    // Over 2 MiB: dropped at the door.
    chunk(&s, &session, 4, &"A".repeat((2 << 20) + 4)).await;
    chunk(&s, &session, 3, "UklGRgMD").await;
    let got = next_live(&mut ws, 10).await.expect("live-audio");
    assert_eq!((got["data"]["seq"].as_u64(), got["data"]["audio"].as_str()), (Some(3), Some("UklGRgMD")), "{got}");
    let shown = wait_for(&s.api, &live, |v| v["chunksRelayed"] == 1).await;
    assert_eq!(shown["chunksDropped"], 1, "{shown}");
    assert_eq!(next_live(&mut ws, 1).await, None);
}
