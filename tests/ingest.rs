//! Satellite messages into the hub over real MQTT: audio acks, duplicates, bad input, heartbeats,
//! telemetry, config requests and pushes.

mod common;

use common::sat;
use serde_json::json;

async fn setup() -> (common::TestHub, common::Api, sat::Registered, sat::Client) {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let r = sat::register(&api, json!({"name": "garden"})).await;
    let mut c = sat::connect(&hub, &r).await;
    assert!(c.subscribe(&format!("{}#", r.prefix)).await);
    (hub, api, r, c)
}

fn count(hub: &common::TestHub, sql: &str) -> i64 {
    hub.sql(|c| c.query_row(sql, [], |r| r.get(0)).expect(sql))
}

#[tokio::test]
async fn a_chunk_is_stored_queued_and_acknowledged_once() {
    let (hub, _, r, mut c) = setup().await;
    let chunk = uuid::Uuid::new_v4().to_string();
    let wav = sat::tone_wav(48_000, 3.0);
    c.publish(&r.topic("audio"), sat::audio_message(&r, &chunk, &wav, 48_000, 3000)).await;
    let ack = c.message_on(&r.topic("ack"), 10).await.expect("ack");
    assert_eq!(ack, json!({"chunkId": chunk, "status": "stored"}));
    assert_eq!(count(&hub, "SELECT count(*) FROM audio_chunks"), 1);
    assert_eq!(count(&hub, "SELECT count(*) FROM inference_jobs WHERE status = 'queued'"), 1, "waits for a model");
    let sql = format!("SELECT {} FROM audio_chunks c", birdhub::store::chunks::key_sql("c"));
    let key: String = hub.sql(|c| c.query_row(&sql, [], |r| r.get(0)).expect("key"));
    assert_eq!(std::fs::read(hub.data_dir.join("objects").join(&key)).expect("wav on disk"), wav);

    // The satellite retries the same chunk: acknowledged again, stored once.
    c.publish(&r.topic("audio"), sat::audio_message(&r, &chunk, &wav, 48_000, 3000)).await;
    assert_eq!(c.message_on(&r.topic("ack"), 10).await.expect("ack")["status"], "stored");
    assert_eq!(count(&hub, "SELECT count(*) FROM audio_chunks"), 1);
    assert_eq!(count(&hub, "SELECT count(*) FROM inference_jobs"), 1);
    let last_seen: Option<String> =
        hub.sql(|c| c.query_row("SELECT last_seen_at FROM satellites", [], |r| r.get(0)).expect("seen"));
    assert!(last_seen.is_some());
}

#[tokio::test]
async fn bad_audio_gets_an_error_ack_and_leaves_nothing_behind() {
    let (hub, _, r, mut c) = setup().await;
    let id = || uuid::Uuid::new_v4().to_string();
    let wav = sat::tone_wav(48_000, 3.0);
    let stereo = {
        let spec = hound::WavSpec {
            channels: 2,
            sample_rate: 48_000,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut cur = std::io::Cursor::new(Vec::new());
        let mut w = hound::WavWriter::new(&mut cur, spec).expect("w");
        for i in 0..288_000 {
            w.write_sample((i % 100) as i16).expect("s");
        }
        w.finalize().expect("f");
        cur.into_inner()
    };
    let other_sat = uuid::Uuid::new_v4().to_string();
    let mut mismatch: serde_json::Value =
        serde_json::from_slice(&sat::audio_message(&r, &id(), &wav, 48_000, 3000)).expect("json");
    mismatch["satelliteId"] = json!(other_sat);
    let mut bad_b64: serde_json::Value =
        serde_json::from_slice(&sat::audio_message(&r, &id(), &wav, 48_000, 3000)).expect("json");
    bad_b64["audio"] = json!("%%% not base64 %%%");
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("malformed json", b"{\"chunkId\": ".to_vec(), "malformed"),
        ("missing fields", json!({"chunkId": id()}).to_string().into_bytes(), "malformed"),
        ("bad base64", bad_b64.to_string().into_bytes(), "base64"),
        ("not a wav", sat::audio_message(&r, &id(), b"RIFFnope", 48_000, 3000), "WAV"),
        ("stereo", sat::audio_message(&r, &id(), &stereo, 48_000, 3000), "mono"),
        ("rate mismatch", sat::audio_message(&r, &id(), &wav, 44_100, 3000), "sampleRate"),
        ("duration mismatch", sat::audio_message(&r, &id(), &wav, 48_000, 5000), "durationMs"),
        ("too long", sat::audio_message(&r, &id(), &sat::tone_wav(48_000, 12.0), 48_000, 12_000), "too long"),
        ("too large", sat::audio_message(&r, &id(), &sat::tone_wav(48_000, 25.0), 48_000, 25_000), "too large"),
        ("topic mismatch", mismatch.to_string().into_bytes(), "match"),
        ("not a uuid", sat::audio_message(&r, "chunk-1", &wav, 48_000, 3000), "UUID"),
    ];
    for (name, payload, needle) in cases {
        c.publish(&r.topic("audio"), payload).await;
        let ack = c.message_on(&r.topic("ack"), 10).await.unwrap_or_else(|| panic!("{name}: an ack"));
        assert_eq!(ack["status"], "error", "{name}: {ack}");
        let error = ack["error"].as_str().unwrap_or_default();
        assert!(error.contains(needle), "{name}: {error:?} should mention {needle:?}");
    }
    assert_eq!(count(&hub, "SELECT count(*) FROM audio_chunks"), 0);
    assert_eq!(count(&hub, "SELECT count(*) FROM inference_jobs"), 0);
    let files = walk(&hub.data_dir.join("objects"));
    assert!(files.is_empty(), "no stray files: {files:?}");

    // Unknown channels and hub channels are dropped; the hub keeps going.
    c.publish(&r.topic("sing"), b"la la".to_vec()).await;
    c.publish(&r.topic("ack"), b"{}".to_vec()).await;
    let chunk = id();
    c.publish(&r.topic("audio"), sat::audio_message(&r, &chunk, &wav, 48_000, 3000)).await;
    let ack = loop {
        let a = c.message_on(&r.topic("ack"), 10).await.expect("ack");
        if a["chunkId"] == chunk.as_str() {
            break a;
        }
    };
    assert_eq!(ack["status"], "stored");
}

#[tokio::test]
async fn chunks_arriving_together_are_each_acknowledged_for_themselves() {
    // Four satellites publish at once, so their chunks reach the writer together and share
    // commits; one chunk in the middle of the burst is bad. Each gets its own ack.
    let (hub, api, first, first_client) = setup().await;
    let mut sats = vec![(first, first_client)];
    for name in ["meadow", "pond", "orchard"] {
        let r = sat::register(&api, json!({"name": name})).await;
        let mut c = sat::connect(&hub, &r).await;
        assert!(c.subscribe(&format!("{}#", r.prefix)).await);
        sats.push((r, c));
    }
    let wav = sat::tone_wav(48_000, 3.0);
    let bad = uuid::Uuid::new_v4().to_string();
    let mut sent: Vec<Vec<String>> = vec![Vec::new(); sats.len()];
    for round in 0..4 {
        for (i, (r, c)) in sats.iter().enumerate() {
            let chunk = uuid::Uuid::new_v4().to_string();
            let (id, body) = if round == 2 && i == 1 {
                (bad.clone(), sat::audio_message(r, &bad, &wav[..wav.len() - 1], 48_000, 3000))
            } else {
                (chunk.clone(), sat::audio_message(r, &chunk, &wav, 48_000, 3000))
            };
            c.publish(&r.topic("audio"), body).await;
            sent[i].push(id);
        }
    }
    let mut good = 0;
    for (i, (r, c)) in sats.iter_mut().enumerate() {
        for id in &sent[i] {
            let ack = c.message_on(&r.topic("ack"), 15).await.expect("an ack for every chunk");
            assert_eq!(ack["chunkId"], id.as_str(), "acks come in publishing order");
            if *id == bad {
                assert_eq!(ack["status"], "error", "{ack}");
                assert!(ack["error"].as_str().unwrap_or_default().contains("WAV"), "{ack}");
            } else {
                assert_eq!(ack, json!({"chunkId": id, "status": "stored"}));
                good += 1;
            }
        }
    }
    assert_eq!(good, 15);
    assert_eq!(count(&hub, "SELECT count(*) FROM audio_chunks"), 15);
    assert_eq!(count(&hub, "SELECT count(*) FROM inference_jobs"), 15);
    assert_eq!(
        count(&hub, &format!("SELECT count(*) FROM audio_chunks WHERE lower(hex(id)) = replace('{bad}', '-', '')")),
        0
    );
    assert_eq!(walk(&hub.data_dir.join("objects")).len(), 15, "one file per stored chunk, none for the bad one");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

#[tokio::test]
async fn a_400_kb_chunk_goes_through() {
    let (hub, _, r, mut c) = setup().await;
    // 4.2 s at 48 kHz 16-bit is ~400 KB of WAV (~540 KB as base64 in the message).
    let wav = sat::tone_wav(48_000, 4.2);
    assert!(wav.len() > 400_000);
    let chunk = uuid::Uuid::new_v4().to_string();
    c.publish(&r.topic("audio"), sat::audio_message(&r, &chunk, &wav, 48_000, 4200)).await;
    assert_eq!(c.message_on(&r.topic("ack"), 15).await.expect("ack")["status"], "stored");
    assert_eq!(count(&hub, "SELECT count(*) FROM audio_chunks"), 1);
}

#[tokio::test]
async fn heartbeats_and_telemetry_update_the_satellite() {
    let (hub, api, r, c) = setup().await;
    hub.sql(|c| {
        c.execute("UPDATE satellites SET update_status = 'updating', target_version = '1.2.0'", []).expect("u")
    });
    let hb = |version: &str| {
        json!({"satelliteId": r.id, "tenantId": r.tenant, "uptimeSeconds": 120, "state": "recording", "noiseFloorRms": 0.004,
               "version": version, "stream": "satellite", "timestamp": "2026-05-15T06:30:00Z",
               "filterStats": {"totalProcessed": 10, "totalSent": 4}, "outboxStats": {"rowCount": 2}})
        .to_string()
    };
    c.publish(&r.topic("heartbeat"), hb("1.1.0")).await;
    let detail = wait_for(&api, &format!("/satellites/{}", r.id), |v| v["heartbeat_state"] == "recording").await;
    assert_eq!(detail["is_online"], true);
    assert_eq!(detail["version"], "1.1.0");
    assert_eq!(detail["update_status"], "updating", "not yet at the target version");
    c.publish(&r.topic("heartbeat"), hb("1.2.0")).await;
    let detail = wait_for(&api, &format!("/satellites/{}", r.id), |v| v["version"] == "1.2.0").await;
    assert_eq!(detail["update_status"], serde_json::Value::Null, "cleared at the target version");

    c.publish(
        &r.topic("heartbeat"),
        json!({"satelliteId": r.id, "tenantId": r.tenant, "state": "dancing"}).to_string(),
    )
    .await;
    let tel = json!({"satelliteId": r.id, "tenantId": r.tenant, "timestamp": "2026-05-15T06:31:00Z", "batteryLevel": null,
                     "storageFreeBytes": 123456, "cpuTemp": 48.5, "networkLatencyMs": 12.0, "packetLossPct": 0.0, "uptimeSeconds": 180});
    c.publish(&r.topic("telemetry"), tel.to_string()).await;
    for _ in 0..100 {
        if count(&hub, "SELECT count(*) FROM telemetry") == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let temp: f64 = hub.sql(|c| c.query_row("SELECT cpu_temp FROM telemetry", [], |r| r.get(0)).expect("t"));
    assert_eq!(temp, 48.5);
    let state: String =
        hub.sql(|c| c.query_row("SELECT heartbeat_state FROM satellites", [], |r| r.get(0)).expect("s"));
    assert_eq!(state, "dancing", "an unknown state is kept as the device sent it");
}

#[tokio::test]
async fn heartbeats_in_real_shapes_keep_the_device_online() {
    let (hub, api, r, c) = setup().await;
    let path = format!("/satellites/{}", r.id);
    // As a device sends it: a float uptime, a state and a stream this hub does not know yet.
    let raw = format!(
        r#"{{"satelliteId":"{}","tenantId":"{}","uptimeSeconds":12.7,"state":"calibrating","stream":"wearable",
            "noiseFloorRms":0.003,"version":"2.0.0","timestamp":"2026-05-15T06:30:00Z",
            "filterStats":{{"totalProcessed":10}},"outboxStats":{{"rowCount":1}}}}"#,
        r.id, r.tenant
    );
    c.publish(&r.topic("heartbeat"), raw).await;
    let detail = wait_for(&api, &path, |v| v["last_seen_at"].is_string()).await;
    assert_eq!(detail["uptime_seconds"], 12, "rounded down");
    assert_eq!(detail["heartbeat_state"], "calibrating");
    assert_eq!(detail["stream"], "wearable");
    assert_eq!(detail["version"], "2.0.0");
    assert_eq!(detail["is_online"], true);

    let tel = format!(
        r#"{{"satelliteId":"{}","tenantId":"{}","timestamp":"2026-05-15T06:31:00Z","storageFreeBytes":1.5e9,
            "uptimeSeconds":180.9,"cpuTemp":51}}"#,
        r.id, r.tenant
    );
    c.publish(&r.topic("telemetry"), tel).await;
    let row = || {
        hub.sql(|c| {
            c.query_row("SELECT storage_free_bytes, uptime_seconds FROM telemetry", [], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
            })
            .ok()
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while row().is_none() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(row(), Some((1_500_000_000, 180)), "telemetry numbers are read leniently too");

    // A heartbeat the hub cannot read at all is still a sign of life from the logged-in device.
    let before = detail["last_seen_at"].clone();
    hub.state().clock.advance(std::time::Duration::from_secs(120));
    c.publish(&r.topic("heartbeat"), br#"{"state": 5}"#.to_vec()).await;
    let detail = wait_for(&api, &path, |v| v["last_seen_at"] != before).await;
    assert_eq!(detail["heartbeat_state"], "calibrating", "what it could not read is not overwritten");
    assert_eq!(detail["is_online"], true);
}

async fn wait_for(api: &common::Api, path: &str, ok: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    for _ in 0..100 {
        let (_, v) = api.get(path).await;
        if ok(&v) {
            return v;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{path} never reached the expected state: {}", api.get(path).await.1);
}

#[tokio::test]
async fn config_is_pushed_on_request_on_override_change_and_on_tenant_change() {
    let (_hub, api, r, mut c) = setup().await;
    let request = |overrides: serde_json::Value| {
        json!({"satelliteId": r.id, "tenantId": r.tenant, "overrides": overrides}).to_string()
    };

    c.publish(&r.topic("config-request"), request(json!({}))).await;
    let config = c.message_on(&r.topic("config"), 10).await.expect("config");
    assert_eq!(config["heartbeatIntervalSec"], 30);
    assert_eq!(config["satelliteId"], r.id.as_str());
    assert_eq!(
        config["excludedClassifierCategories"],
        json!(["anthropogenic", "human_voice", "amphibian", "insect", "other_animal"])
    );
    assert_eq!(config["recordingProfile"]["sampleRate"], 48_000);

    c.publish(&r.topic("config-request"), request(json!({"filter_min_rms": 0.01}))).await;
    assert_eq!(
        c.message_on(&r.topic("config"), 10).await.expect("config")["filterMinRms"],
        0.01,
        "the device's own override"
    );

    let (status, body) = api
        .put(
            &format!("/satellites/{}/config", r.id),
            json!({"overrides": {"heartbeat_interval_sec": 15, "drop_insect_at_satellite": false}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let pushed = c.message_on(&r.topic("config"), 10).await.expect("push on override change");
    assert_eq!(pushed["heartbeatIntervalSec"], 15);
    assert!(!pushed["excludedClassifierCategories"].as_array().expect("array").contains(&json!("insect")));

    assert_eq!(api.put("/settings/tenant", json!({"outbox_max_age_hours": 24})).await.0, 200);
    let pushed = c.message_on(&r.topic("config"), 10).await.expect("push on tenant change");
    assert_eq!(pushed["outboxMaxAgeHours"], 24);
    assert_eq!(pushed["heartbeatIntervalSec"], 15, "the override still wins");

    assert_eq!(api.put(&format!("/satellites/{}/config", r.id), json!({"configLocked": true})).await.0, 200);
    c.message_on(&r.topic("config"), 10).await.expect("push on lock");
    c.publish(&r.topic("config-request"), request(json!({"filter_min_rms": 0.5}))).await;
    let pushed = c.message_on(&r.topic("config"), 10).await.expect("still answered");
    assert_eq!(pushed["filterMinRms"], 0.01, "a locked config ignores the device's overrides");

    let profile = json!({"type": "dawn_chorus", "schedule": [{"start": "-30", "end": "120", "reference": "sunrise"}],
                         "sampleRate": 48000, "chunkDurationMs": 3000, "overlapMs": 0, "gain": 1.5});
    assert_eq!(api.post(&format!("/satellites/{}/profile", r.id), profile.clone()).await.0, 200);
    let pushed = c.message_on(&r.topic("config"), 10).await.expect("push on profile");
    assert_eq!(pushed["recordingProfile"], profile);
}

#[tokio::test]
async fn a_config_request_always_gets_the_config_with_only_the_bad_keys_dropped() {
    let (hub, _api, r, mut c) = setup().await;
    let request = |overrides: serde_json::Value| {
        json!({"satelliteId": r.id, "tenantId": r.tenant, "overrides": overrides}).to_string()
    };
    // Overrides stored by an older hub or by hand: two good keys, an unknown one, a wrong type and
    // a value the team's settings refuse.
    let stored = json!({"filter_min_rms": 0.02, "outbox_max_age_hours": 48, "retired_key": true,
                        "heartbeat_interval_sec": "often", "classifier_min_bird_prob": 7.5});
    hub.sql(|c| c.execute("UPDATE satellites SET overrides_json = ?1", [stored.to_string()]).expect("store"));

    c.publish(&r.topic("config-request"), request(json!({}))).await;
    let config = c.message_on(&r.topic("config"), 10).await.expect("a config push");
    assert_eq!(config["filterMinRms"], 0.02, "a good stored override is kept");
    assert_eq!(config["outboxMaxAgeHours"], 48);
    assert_eq!(config["heartbeatIntervalSec"], 30, "the bad one falls back to the team's value");
    assert_eq!(config["classifierMinBirdProb"], 0.1);

    // The device's own overrides with a bad key: the good one is applied, the bad one dropped.
    c.publish(&r.topic("config-request"), request(json!({"heartbeat_interval_sec": 20, "no_such_key": 1}))).await;
    let config = c.message_on(&r.topic("config"), 10).await.expect("a config push");
    assert_eq!(config["heartbeatIntervalSec"], 20);
    assert_eq!(config["filterMinRms"], 0.02, "earlier overrides stay");
    let now_stored: serde_json::Value = hub.sql(|c| {
        let text: String = c.query_row("SELECT overrides_json FROM satellites", [], |r| r.get(0)).expect("row");
        serde_json::from_str(&text).expect("json")
    });
    assert_eq!(now_stored["heartbeat_interval_sec"], 20);
    assert_eq!(now_stored["filter_min_rms"], 0.02);
    assert!(now_stored.get("retired_key").is_none() && now_stored.get("no_such_key").is_none(), "{now_stored}");

    // Even a request the hub cannot read is answered with the config.
    c.publish(&r.topic("config-request"), b"{\"overrides\": ".to_vec()).await;
    let config = c.message_on(&r.topic("config"), 10).await.expect("a config push");
    assert_eq!(config["heartbeatIntervalSec"], 20);
}
