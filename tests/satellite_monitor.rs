//! The satellite monitor on the hub's moved clock: a satellite that stops sending heartbeats goes
//! offline once, comes back online on its next heartbeat, and each change reaches WebSocket
//! clients of its team once, not on every pass. The team's threshold decides when.

mod common;

use std::time::Duration;

use birdhub::usecases::monitor;
use common::sat;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A heartbeat stamped with the hub's (moved) clock: the satellite's clock is right, so only
/// silence changes its state here (a wrong clock is `tests/clock_sanity.rs`).
async fn heartbeat(c: &sat::Client, r: &sat::Registered, clock: &birdhub::clock::Clock) {
    let hb = json!({"satelliteId": r.id, "tenantId": r.tenant, "uptimeSeconds": 60, "state": "recording",
                    "timestamp": clock.now().to_rfc3339()});
    c.publish(&r.topic("heartbeat"), hb.to_string()).await;
}

/// Polls the satellite until its `last_seen_at` differs from `before`.
async fn seen_after(api: &common::Api, id: &str, before: &Value) -> Value {
    for _ in 0..200 {
        let (_, v) = api.get(&format!("/satellites/{id}")).await;
        if !v["last_seen_at"].is_null() && &v["last_seen_at"] != before {
            return v["last_seen_at"].clone();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the heartbeat never arrived");
}

/// The next `satellite` frame on the socket, if one comes within a second.
async fn satellite_frame(ws: &mut Ws) -> Option<Value> {
    frame_of(ws, "satellite").await
}

/// The next frame of `kind` on the socket, if one comes within a second.
async fn frame_of(ws: &mut Ws, kind: &str) -> Option<Value> {
    let until = tokio::time::Instant::now() + Duration::from_secs(1);
    loop {
        match tokio::time::timeout_at(until, ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => {
                let v: Value = serde_json::from_str(&t).expect("json");
                if v["type"] == kind {
                    return Some(v["data"].clone());
                }
            }
            Ok(Some(Ok(_))) => continue,
            _ => return None,
        }
    }
}

#[tokio::test]
async fn a_silent_satellite_goes_offline_once_and_comes_back_on_its_next_heartbeat() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let r = sat::register(&api, json!({"name": "garden"})).await;
    let c = sat::connect(&hub, &r).await;
    let token = hub.token(&owner.email).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/api/ws/events?token={token}", hub.http_addr))
        .await
        .expect("ws");
    let s = hub.state();
    let check = || monitor::check(&s.store, &s.bus, &s.clock, &s.alerts);

    heartbeat(&c, &r, &s.clock).await;
    let first = seen_after(&api, &r.id, &Value::Null).await;
    assert_eq!(check().await.expect("pass"), monitor::Pass::default(), "heard from just now");

    // Six minutes of silence: past the default threshold of five.
    s.clock.advance(Duration::from_secs(6 * 60));
    assert_eq!(check().await.expect("pass").went_offline, 1);
    let frame = satellite_frame(&mut ws).await.expect("an offline frame");
    let alert_frame = frame_of(&mut ws, "alert").await.expect("an alert frame");
    assert_eq!(alert_frame["type"], "satellite_offline", "{alert_frame}");
    assert_eq!(frame["status"], "offline", "{frame}");
    assert_eq!(
        (frame["satellite"]["satelliteId"].clone(), frame["satellite"]["name"].clone()),
        (json!(r.id), json!("garden"))
    );
    assert_eq!(api.get(&format!("/satellites/{}", r.id)).await.1["is_online"], false);
    // Later passes of the same outage say nothing more.
    for _ in 0..3 {
        s.clock.advance(Duration::from_secs(60));
        assert_eq!(check().await.expect("pass"), monitor::Pass::default());
    }
    assert_eq!(satellite_frame(&mut ws).await, None, "one notice per outage");

    // One `satellite_offline` alert for the outage, under the team's system rule.
    let (_, alerts) = api.get("/alerts?acknowledged=false").await;
    assert_eq!(alerts["total"], 1, "{alerts}");
    let alert = alerts["alerts"][0].clone();
    assert_eq!(
        (alert["type"].clone(), alert["title"].clone()),
        (json!("satellite_offline"), json!("garden is offline"))
    );
    assert_eq!(alert["data"]["satelliteId"], json!(r.id));
    assert!(alert["rule_id"].is_string(), "{alert}");
    let (status, acked) = api.post_empty(&format!("/alerts/{}/acknowledge", alert["id"].as_str().expect("id"))).await;
    assert_eq!(status, 200, "{acked}");
    assert_eq!((acked["acknowledged"].clone(), acked["acknowledged_by"].clone()), (json!(true), json!(owner.id)));
    assert!(acked["acknowledged_at"].is_string());
    assert_eq!(api.get("/alerts?acknowledged=false").await.1["total"], 0);
    assert_eq!(api.get("/alerts?acknowledged=true").await.1["total"], 1);
    common::assert_error(&api.get("/alerts?acknowledged=maybe").await, 400, "invalid_acknowledged");
    common::assert_error(
        &api.post_empty(&format!("/alerts/{}/acknowledge", uuid::Uuid::new_v4())).await,
        404,
        "alert_not_found",
    );

    // The next heartbeat brings it back, once.
    heartbeat(&c, &r, &s.clock).await;
    seen_after(&api, &r.id, &first).await;
    assert_eq!(check().await.expect("pass").came_back, 1);
    assert_eq!(satellite_frame(&mut ws).await.expect("an online frame")["status"], "online");
    assert_eq!(check().await.expect("pass"), monitor::Pass::default());
    assert_eq!(api.get(&format!("/satellites/{}", r.id)).await.1["is_online"], true);
}

#[tokio::test]
async fn the_teams_threshold_decides_and_other_teams_hear_nothing() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let other = hub.user("other@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let (status, body) = api.put("/settings/tenant", json!({"satellite_offline_threshold_minutes": 10})).await;
    assert_eq!(status, 200, "{body}");
    let r = sat::register(&api, json!({"name": "pond"})).await;
    let c = sat::connect(&hub, &r).await;
    let token = hub.token(&other.email).await;
    let (mut theirs, _) =
        tokio_tungstenite::connect_async(format!("ws://{}/api/ws/events?token={token}", hub.http_addr))
            .await
            .expect("ws");
    let s = hub.state();
    heartbeat(&c, &r, &s.clock).await;
    seen_after(&api, &r.id, &Value::Null).await;
    s.clock.advance(Duration::from_secs(6 * 60));
    assert_eq!(
        monitor::check(&s.store, &s.bus, &s.clock, &s.alerts).await.expect("pass").went_offline,
        0,
        "10 minutes here"
    );
    s.clock.advance(Duration::from_secs(5 * 60));
    assert_eq!(monitor::check(&s.store, &s.bus, &s.clock, &s.alerts).await.expect("pass").went_offline, 1);
    assert_eq!(satellite_frame(&mut theirs).await, None, "another team's socket hears nothing");
    let (_, mine) = api.get("/alerts").await;
    let id = mine["alerts"][0]["id"].as_str().expect("an alert").to_owned();
    let stranger = hub.login(&other.email).await;
    assert_eq!(stranger.get("/alerts").await.1["total"], 0, "alerts stay in their team");
    common::assert_error(&stranger.post_empty(&format!("/alerts/{id}/acknowledge")).await, 404, "alert_not_found");
    assert_eq!(api.get("/alerts?acknowledged=false").await.1["total"], 1, "still unacknowledged");
}
