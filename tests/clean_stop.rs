//! A satellite stopped cleanly (SIGTERM, as systemd stops it) says so before it leaves, and the
//! hub shows it offline at once, on the embedded broker and on mosquitto; a satellite that goes
//! silent (SIGKILL, power cut) still waits for the team's offline threshold.

mod common;

use std::time::Duration;

use common::{
    mosquitto_broker::Mosquitto,
    satellite::{Station, saved_id, station, wait_satellite},
};
use futures_util::StreamExt;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The team's event socket, past its hello.
async fn events(hub: &common::TestHub, email: &str, tenant: impl std::fmt::Display) -> Socket {
    let token = hub.token(email).await;
    let url = format!("ws://{}/api/ws/events?tenantId={tenant}&token={token}", hub.http_addr);
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.expect("websocket");
    let hello = next_event(&mut ws, 5, |_| true).await.expect("hello");
    assert_eq!(hello["type"], "hello");
    ws
}

/// The next event that `pick` accepts within `secs`.
async fn next_event(ws: &mut Socket, secs: u64, pick: impl Fn(&Value) -> bool) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if let Ok(Message::Text(t)) = tokio::time::timeout(left, ws.next()).await.ok()?? {
            let v: Value = serde_json::from_str(&t).ok()?;
            if pick(&v) {
                return Some(v);
            }
        }
    }
}

/// Registers and starts a satellite through the real CLI; returns once the hub shows it recording.
async fn running(hub: &common::TestHub, api: &common::Api, email: &str, s: &mut Station) {
    let printed = s.register(&hub.base_url, email, &["--lat", "51.5", "--lon", "-0.12"]);
    assert!(printed.contains("Registered satellite"), "{printed}");
    s.id = saved_id(&s.config());
    s.start();
    wait_satellite(api, &s.id, 60, "online and recording", |v| {
        v["is_online"] == true && v["heartbeat_state"] == "recording"
    })
    .await;
}

/// The satellite's dashboard page, as the signed-in browser of `web` gets it.
async fn page(hub: &common::TestHub, web: &common::Api, id: &str) -> String {
    let resp = web.client.get(format!("{}/satellites/{id}", hub.base_url)).send().await.expect("page");
    assert_eq!(resp.status(), 200);
    resp.text().await.expect("body")
}

/// The whole story on one broker: SIGTERM shows offline at once (API, page, socket), a restart
/// comes back, and SIGKILL waits for the threshold.
async fn stop_and_see(hub: common::TestHub) {
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = station(dir.path(), "porch", 0);
    running(&hub, &api, &owner.email, &mut s).await;
    let mut ws = events(&hub, &owner.email, owner.tenant).await;
    let (status, body) = api.put("/settings/tenant", serde_json::json!({"public_page_enabled": true})).await;
    assert_eq!(status, 200, "{body}");
    let public = |hub: &common::TestHub| {
        let (anon, path) = (hub.anon(), format!("/public/{}", owner.tenant));
        async move {
            let (status, today) = anon.get(&path).await;
            assert_eq!(status, 200, "{today}");
            today["stations"].as_array().and_then(|l| l.iter().find(|s| s["name"] == "porch")).expect("listed")["online"]
                .clone()
        }
    };
    assert_eq!(public(&hub).await, true, "the public page lists it as listening");

    s.signal("TERM");
    let v = wait_satellite(&api, &s.id, 10, "offline right after a clean stop", |v| v["is_online"] == false).await;
    assert!(v["last_seen_at"].is_string(), "it was seen, and said it stopped: {v}");
    let said = next_event(&mut ws, 10, |e| e["type"] == "satellite").await.expect("a satellite event at once");
    assert_eq!(said["data"]["status"], "offline", "{said}");
    let html = page(&hub, &api, &s.id).await;
    assert!(html.contains("sat-state offline"), "the satellite's page says offline");
    // The public view is cached for 10 s; within that it says so too, long before the threshold.
    let mut listening = public(&hub).await;
    for _ in 0..30 {
        if listening == false {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        listening = public(&hub).await;
    }
    assert_eq!(listening, false, "the public page no longer lists it as listening");

    // Started again, it is online again at once.
    s.start();
    wait_satellite(&api, &s.id, 30, "online again after a restart", |v| {
        v["is_online"] == true && v["heartbeat_state"] == "recording"
    })
    .await;

    // A satellite that goes silent says nothing: it stays online until the team's threshold.
    s.signal("KILL");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (_, v) = api.get(&format!("/satellites/{}", s.id)).await;
    assert_eq!(v["is_online"], true, "a silent satellite waits for the offline threshold: {v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cleanly_stopped_satellite_is_offline_at_once_on_the_embedded_broker() {
    stop_and_see(common::spawn_hub().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cleanly_stopped_satellite_is_offline_at_once_on_mosquitto() {
    let broker = Mosquitto::start().await;
    let hub = common::spawn_hub_with(|s| {
        broker.configure(s);
        s.mqtt.public_url = format!("mqtt://{}", broker.address());
    })
    .await;
    stop_and_see(hub).await;
}
