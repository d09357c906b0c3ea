//! End to end with the real model: a real bird recording published as `audio` comes back as a
//! detection on the satellite's `detection` topic, on the WebSocket and in `GET /detections`.

mod common;

use common::sat;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

async fn ws_connect(
    url: &str,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.expect("websocket");
    let hello = next_json(&mut ws, 5).await.expect("hello");
    assert_eq!(hello["type"], "hello");
    ws
}

async fn next_json<S>(ws: &mut S, secs: u64) -> Option<Value>
where
    S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match tokio::time::timeout(left, ws.next()).await.ok()?? {
            Ok(Message::Text(t)) => return serde_json::from_str(&t).ok(),
            Ok(_) => continue,
            Err(_) => return None,
        }
    }
}

#[tokio::test]
async fn a_real_bird_goes_from_mqtt_to_detection_websocket_and_api() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let owner = hub.user("owner@example.org", false).await;
    let outsider = hub.user("outsider@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let r = sat::register(&api, json!({"name": "hemlock ridge"})).await;
    let mut c = sat::connect(&hub, &r).await;
    assert!(c.subscribe(&format!("{}#", r.prefix)).await);
    let token = hub.token(&owner.email).await;
    let mut ws = ws_connect(&format!("ws://{}/api/ws/events?tenantId={}&token={token}", hub.http_addr, r.tenant)).await;
    let other_token = hub.token(&outsider.email).await;
    let mut other_ws = ws_connect(&format!("ws://{}/api/ws/events?token={other_token}", hub.http_addr)).await;

    let chunk = uuid::Uuid::new_v4().to_string();
    c.publish(&r.topic("audio"), sat::audio_message(&r, &chunk, &sat::warbler_wav(), 48_000, 3000)).await;
    assert_eq!(c.message_on(&r.topic("ack"), 10).await.expect("ack")["status"], "stored");

    let detection = c.message_on(&r.topic("detection"), 60).await.expect("a detection on the satellite's topic");
    assert_eq!(detection["commonName"], "Tennessee Warbler", "{detection}");
    assert_eq!(detection["scientificName"], "Leiothlypis peregrina");
    assert_eq!(detection["speciesCode"], "leiothlypis_peregrina");
    assert_eq!(detection["satelliteName"], "hemlock ridge");
    assert_eq!(detection["audioChunkId"], chunk.as_str());
    assert!(detection["confidence"].as_f64().is_some_and(|c| c >= 0.7), "{detection}");
    assert_eq!((detection["isFirstOfDay"].clone(), detection["isFirstOfSeason"].clone()), (json!(true), json!(true)));
    // The team's first record, but expected here (Tennessee Warblers pass through in May): new
    // for the team, not rare (issue 36).
    assert_eq!(detection["isFirstForTeam"], true, "the team's first record of the species");
    assert_eq!((detection["isRare"].clone(), detection["rareReason"].clone()), (json!(false), Value::Null));

    let frame = next_json(&mut ws, 10).await.expect("a WebSocket frame");
    assert_eq!(frame["type"], "detection");
    assert_eq!(frame["data"]["id"], detection["id"]);
    assert!(next_json(&mut other_ws, 1).await.is_none(), "another team sees nothing");

    let (status, list) = api.get("/detections").await;
    assert_eq!(status, 200);
    assert_eq!(list["total"], 1);
    let row = &list["detections"][0];
    assert_eq!(row["id"], detection["id"]);
    assert_eq!(row["expected_here"], true, "Tennessee Warblers pass through Pennsylvania in May");
    assert!(row["storage_key"].as_str().is_some_and(|k| k.ends_with(&format!("{chunk}.wav"))));
    let (status, _) =
        hub.login(&outsider.email).await.get(&format!("/detections/{}", detection["id"].as_str().expect("id"))).await;
    assert_eq!(status, 404, "another team's detection is invisible");
    // The chunk opened a recording session whose summary names the bird.
    let (_, sessions) = api.get("/sessions").await;
    assert_eq!(sessions["total"], 1, "{sessions}");
    assert_eq!(sessions["sessions"][0]["detection_count"], 1);
    assert_eq!(sessions["sessions"][0]["top_species"][0]["common_name"], "Tennessee Warbler");

    // The same song again, later that day: not the first of the day, not rare any more.
    let second = uuid::Uuid::new_v4().to_string();
    c.publish(&r.topic("audio"), sat::audio_message(&r, &second, &sat::warbler_wav(), 48_000, 3000)).await;
    let again = c.message_on(&r.topic("detection"), 60).await.expect("second detection");
    assert_eq!(
        (again["isFirstOfDay"].clone(), again["isFirstForTeam"].clone(), again["isRare"].clone()),
        (json!(false), json!(false), json!(false))
    );

    let (_, workers) = api.get("/workers").await;
    assert_eq!(workers["queue"]["done"], 2);
    let succeeded: u64 =
        workers["workers"].as_array().expect("workers").iter().filter_map(|w| w["jobsSucceeded"].as_u64()).sum();
    assert_eq!(succeeded, 2);
    let (_, jobs) = api.get("/workers/jobs").await;
    assert_eq!(jobs["jobs"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn split_mode_api_and_dispatcher_work_together() {
    let dir = tempfile::tempdir().expect("tempdir");
    let shared = dir.path().to_owned();
    let dispatcher = common::spawn_hub_in(dir, |s| {
        common::with_model(s);
        s.mode = birdhub::config::Mode::Dispatcher;
    })
    .await;
    let upstream = format!("127.0.0.1:{}", dispatcher.mqtt_port);
    let api_dir = tempfile::TempDir::new_in(&shared).expect("api dir");
    let api_hub = common::spawn_hub_in(api_dir, |s| {
        s.mode = birdhub::config::Mode::Api;
        s.data_dir = shared.clone();
        s.mqtt.upstream = upstream;
    })
    .await;
    assert_eq!(dispatcher.anon().get("/auth/me").await.0, 404, "the dispatcher serves health only");

    let owner = api_hub.user("owner@example.org", false).await;
    let api = api_hub.login(&owner.email).await;
    let r = sat::register(&api, json!({"name": "split"})).await;
    let mut c = sat::connect(&dispatcher, &r).await;
    assert!(c.subscribe(&format!("{}#", r.prefix)).await);
    let token = api_hub.token(&owner.email).await;
    let mut ws = ws_connect(&format!("ws://{}/api/ws/events?token={token}", api_hub.http_addr)).await;

    // The api process pushes config through the dispatcher's broker.
    let mut pushed = None;
    for _ in 0..20 {
        assert_eq!(
            api.put(&format!("/satellites/{}/config", r.id), json!({"overrides": {"heartbeat_interval_sec": 20}}))
                .await
                .0,
            200
        );
        pushed = c.message_on(&r.topic("config"), 2).await;
        if pushed.is_some() {
            break; // the api's MQTT client may still have been connecting
        }
    }
    assert_eq!(pushed.expect("config through the dispatcher")["heartbeatIntervalSec"], 20);

    // The dispatcher classifies; the api process's WebSocket clients hear about it.
    let chunk = uuid::Uuid::new_v4().to_string();
    c.publish(&r.topic("audio"), sat::audio_message(&r, &chunk, &sat::warbler_wav(), 48_000, 3000)).await;
    assert_eq!(c.message_on(&r.topic("ack"), 10).await.expect("ack")["status"], "stored");
    let frame = next_json(&mut ws, 60).await.expect("detection on the api's WebSocket");
    assert_eq!(frame["data"]["commonName"], "Tennessee Warbler");
    assert_eq!(api.get("/detections").await.1["total"], 1);

    // The dispatcher's monitor takes the satellite offline; the api's WebSocket hears it, alert too.
    let d = dispatcher.state();
    d.clock.advance(std::time::Duration::from_secs(10 * 60));
    let pass = birdhub::usecases::monitor::check(&d.store, &d.bus, &d.clock, &d.alerts).await.expect("pass");
    assert_eq!(pass.went_offline, 1);
    let mut kinds = Vec::new();
    while kinds.len() < 2 {
        let Some(frame) = next_json(&mut ws, 10).await else { break };
        if frame["type"] != "detection" {
            kinds.push(frame["type"].as_str().unwrap_or_default().to_owned());
        }
    }
    assert_eq!(kinds, ["satellite", "alert"], "relayed from the dispatcher");

    // Deleting the satellite on the api side drops its live session on the dispatcher's broker.
    assert_eq!(api.delete(&format!("/satellites/{}", r.id)).await.0, 204);
    let mut dropped = false;
    for _ in 0..8 {
        if let Some(sat::Seen::Disconnected(_)) = c.next(5).await {
            dropped = true;
            break;
        }
    }
    assert!(dropped, "the dispatcher kicked the deleted satellite");
}
