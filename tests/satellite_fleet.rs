//! The whole network on one machine: a hub with the real classifier and three real
//! `birdhub satellite` processes, registered through the CLI, recording from WAV folders.

mod common;

use std::{os::unix::fs::PermissionsExt, time::Duration};

use common::satellite::{Station, saved_id, stat, station, wait_satellite};
use serde_json::{Value, json};

/// Audio chunks the hub holds for a satellite, and how many distinct chunk ids among them.
fn hub_chunks(hub: &common::TestHub, id: &str) -> (i64, i64) {
    let id = id.to_owned();
    hub.sql(move |c| {
        c.query_row("SELECT count(*), count(DISTINCT id) FROM audio_chunks WHERE satellite_pk = (SELECT pk FROM satellites WHERE id = ?1)", [id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("count")
    })
}

/// Waits until the satellite's heartbeat says every stored chunk was acked and the hub holds
/// exactly as many chunks as the satellite sent.
async fn settled(hub: &common::TestHub, api: &common::Api, s: &Station, at_least: i64) -> Value {
    wait_satellite(api, &s.id, 180, "all chunks acknowledged and stored once", |v| {
        let sent = stat(v, "filter_stats", "totalSent");
        sent >= at_least && stat(v, "outbox_stats", "unackedCount") == 0 && hub_chunks(hub, &s.id) == (sent, sent)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_satellites_record_classify_and_obey_the_hub() {
    let hub = common::spawn_hub_with(common::with_model).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let dir = tempfile::tempdir().expect("tempdir");
    // The stations stand in London and play American warblers: the location filter would drop
    // them (docs/detection-quality.md). This test is about the network, so they are kept, flagged.
    let (status, _) = api.put("/settings/tenant", json!({"not_expected_action": "flag"})).await;
    assert_eq!(status, 200);

    let mut stations: Vec<Station> = ["north", "pond", "wood"].iter().map(|n| station(dir.path(), n, 2)).collect();
    for s in &mut stations {
        let printed = s.register(&hub.base_url, &owner.email, &["--pace", "fast", "--lat", "51.5", "--lon", "-0.12"]);
        assert!(printed.contains("Registered satellite"), "{printed}");
        let mode = std::fs::metadata(s.config()).expect("config").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the config holds secrets");
        s.id = saved_id(&s.config());
        // Heartbeats every 5 s (the minimum) so the test sees the stats soon.
        let (status, body) =
            api.put(&format!("/satellites/{}/config", s.id), json!({"overrides": {"heartbeat_interval_sec": 5}})).await;
        assert_eq!(status, 200, "{body}");
    }
    let (_, list) = api.get("/satellites").await;
    let devices: std::collections::HashSet<String> = list["satellites"]
        .as_array()
        .expect("satellite list")
        .iter()
        .filter_map(|s| s["device_id"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(devices.len(), 3, "each instance is its own device: {list}");

    for s in &mut stations {
        s.start();
    }
    let mut sent = Vec::new();
    for s in &stations {
        let v = settled(&hub, &api, s, 2).await;
        assert_eq!(v["is_online"], json!(true));
        assert_eq!(v["heartbeat_state"], json!("recording"));
        assert_eq!(
            stat(&v, "filter_stats", "totalProcessed"),
            stat(&v, "filter_stats", "totalSent"),
            "birdsong passes the gate"
        );
        sent.push(stat(&v, "filter_stats", "totalSent"));
    }

    // The classifier ran on the satellites' audio.
    let detections = wait_for_detections(&api, &stations[0].id).await;
    assert!(detections > 0, "the fixture's birds are detected");

    // A config push changes what the satellite does: with a silence gate above the fixture's
    // loudness, a new recording is counted as silence and nothing more is sent.
    let north = &stations[0];
    let (status, body) = api
        .put(
            &format!("/satellites/{}/config", north.id),
            json!({"overrides": {"heartbeat_interval_sec": 5, "filter_min_rms": 0.99}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    north.drop_recording("late.wav");
    let v = wait_satellite(&api, &north.id, 60, "the new recording judged as silence", |v| {
        stat(v, "filter_stats", "rejectedSilence") >= 2
    })
    .await;
    assert_eq!(stat(&v, "filter_stats", "totalSent"), sent[0], "nothing passes a 0.99 gate");
    assert_eq!(hub_chunks(&hub, &north.id).0, sent[0]);

    // `update` runs the update command, and the next heartbeat reports the new version.
    let pond = &stations[1];
    let (status, body) = api.post(&format!("/satellites/{}/update", pond.id), json!({"targetVersion": "9.9.9"})).await;
    assert_eq!(status, 202, "{body}");
    let v = wait_satellite(&api, &pond.id, 60, "the update round trip", |v| v["version"] == json!("9.9.9")).await;
    assert_eq!(v["update_status"], Value::Null, "the heartbeat with the target version clears the update: {v}");

    // A log request returns the satellite's real log lines.
    let wood = &stations[2];
    let (status, body) = api.post(&format!("/satellites/{}/logs/request", wood.id), json!({"tail": 200})).await;
    assert_eq!(status, 200, "{body}");
    let lines: Vec<&str> = body["lines"].as_array().expect("lines").iter().filter_map(Value::as_str).collect();
    assert!(lines.iter().any(|l| l.contains("connected to the hub")), "real log lines: {lines:?}");

    // Re-running register rotates the credentials of the same satellite.
    let before = std::fs::read_to_string(stations[2].config()).expect("config");
    stations[2].signal("TERM");
    let printed = stations[2].register(&hub.base_url, &owner.email, &[]);
    assert!(printed.contains("Re-registered"), "{printed}");
    assert_eq!(saved_id(&stations[2].config()), stations[2].id, "same device, same satellite");
    let after = std::fs::read_to_string(stations[2].config()).expect("config");
    let password =
        |t: &str| toml::from_str::<toml::Value>(t).expect("toml")["mqtt_password"].as_str().map(str::to_owned);
    assert_ne!(password(&before), password(&after), "new MQTT credentials");
}

async fn wait_for_detections(api: &common::Api, satellite: &str) -> usize {
    for _ in 0..240 {
        let (status, body) = api.get(&format!("/detections?satelliteId={satellite}")).await;
        let n = body["detections"].as_array().map_or(0, Vec::len);
        if status == 200 && n > 0 {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    0
}

/// A dashboard's live session reaches a real satellite, which streams what its microphone hears
/// (here a looping folder in real time) until the session times out on the hub's moved clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_session_relays_a_real_satellite_and_times_out() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let token = hub.token(&owner.email).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = station(dir.path(), "porch", 1);
    s.register(&hub.base_url, &owner.email, &["--pace", "realtime", "--loop-dir"]);
    s.id = saved_id(&s.config());
    s.start();
    wait_satellite(&api, &s.id, 60, "online", |v| v["is_online"] == json!(true)).await;

    // Malformed config pushes are logged and ignored; the last good config stays in force (the
    // live chunks below are still the default 3 s, not the bad push's 50 ms).
    let topic = format!("{}/{}/{}/config", hub.state().settings.mqtt.topic_root, owner.tenant, s.id);
    for body in [
        "not json at all".to_owned(),
        json!({"satelliteId": s.id, "tenantId": owner.tenant, "recordingProfile": {"type": "x", "schedule": [],
               "sampleRate": 48000, "chunkDurationMs": 50, "overlapMs": 0, "gain": 1.0}, "heartbeatIntervalSec": 5,
               "filterEnabled": true, "filterMinRms": 0.0, "classifierMinBirdProb": 0.1,
               "excludedClassifierCategories": [], "outboxSoftSizeMb": 10, "outboxHardSizeMb": 20,
               "outboxMaxAgeHours": 24})
        .to_string(),
    ] {
        hub.state().mqtt.publish(topic.clone(), body.into_bytes(), 1).await.expect("publish");
    }
    let log = || std::fs::read_to_string(s.log()).unwrap_or_default();
    for _ in 0..40 {
        if log().matches("ignoring a bad config push").count() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(log().matches("ignoring a bad config push").count(), 2, "both bad pushes are logged: {}", log());

    let url = format!("ws://{}/api/ws/events?tenantId={}&token={token}", hub.http_addr, owner.tenant);
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.expect("websocket");
    let next = async move |ws: &mut tokio_tungstenite::WebSocketStream<_>, kind: &str, secs: u64| -> Option<Value> {
        let until = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            match tokio::time::timeout_at(until, ws.next()).await {
                Ok(Some(Ok(Message::Text(t)))) => {
                    let v: Value = serde_json::from_str(&t).expect("json");
                    if v["type"] == kind {
                        return Some(v);
                    }
                }
                Ok(Some(Ok(_))) => {}
                _ => return None,
            }
        }
    };
    let frame = json!({"type": "live-start", "satelliteId": s.id}).to_string();
    ws.send(Message::Text(frame.into())).await.expect("send");
    let started = next(&mut ws, "live-started", 10).await.expect("live-started");
    let session = started["data"]["sessionId"].as_str().expect("session").to_owned();

    let mut seqs = Vec::new();
    for _ in 0..2 {
        let audio = next(&mut ws, "live-audio", 15).await.expect("live audio from the satellite");
        assert_eq!(audio["data"]["sessionId"], json!(session));
        use base64::Engine;
        let wav = base64::engine::general_purpose::STANDARD
            .decode(audio["data"]["audio"].as_str().expect("audio"))
            .expect("base64");
        let reader = hound::WavReader::new(std::io::Cursor::new(wav)).expect("a WAV");
        assert_eq!((reader.spec().sample_rate, reader.spec().channels), (48_000, 1));
        assert_eq!(reader.duration(), 144_000, "3 s chunks: the last good config, not the bad push");
        seqs.push(audio["data"]["seq"].as_u64().expect("seq"));
    }
    assert!(seqs[1] > seqs[0], "in order: {seqs:?}");

    // No keepalive for longer than the timeout: the hub ends the session and tells the satellite.
    hub.state().clock.advance(Duration::from_secs(61));
    let ended = next(&mut ws, "live-ended", 10).await.expect("live-ended");
    assert_eq!(ended["data"]["reason"], json!("timeout"));
    for _ in 0..40 {
        if log().contains("live session stopped") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(log().contains("live session stopped"), "the satellite stops streaming: {}", log());
}
