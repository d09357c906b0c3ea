//! SIGKILL while chunks flow: after a restart every acknowledged chunk is stored and every job
//! finishes exactly once (no lost chunk, no double detection).

mod common;

use std::{collections::HashSet, time::Duration};

use common::{
    process,
    sat::{self, Seen},
};
use serde_json::json;

/// Publishes every chunk not yet acknowledged, collecting `stored` acks for up to `secs`.
async fn send_all(
    c: &mut sat::Client,
    r: &sat::Registered,
    chunks: &[String],
    acked: &mut HashSet<String>,
    wav: &[u8],
    secs: u64,
) {
    for id in chunks.iter().filter(|id| !acked.contains(*id)) {
        c.publish(&r.topic("audio"), sat::audio_message(r, id, wav, 48_000, 3000)).await;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while acked.len() < chunks.len() {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match tokio::time::timeout(left, c.events.recv()).await {
            Ok(Some(Seen::Message { topic, payload })) if topic == r.topic("ack") => {
                let ack: serde_json::Value = serde_json::from_slice(&payload).expect("ack json");
                if ack["status"] == "stored" {
                    acked.insert(ack["chunkId"].as_str().expect("id").to_owned());
                }
            }
            Ok(Some(Seen::Disconnected(_))) | Ok(None) | Err(_) => return,
            Ok(Some(_)) => {}
        }
    }
}

#[tokio::test]
async fn a_sigkill_mid_flow_loses_and_doubles_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (http, mqtt) = (process::free_port(), process::free_port());
    let mut hub = process::serve(dir.path(), http, mqtt);
    common::wait_healthy(&format!("http://127.0.0.1:{http}/api/health")).await;
    process::create_user(dir.path(), "ops@example.org");
    let api = common::Api::new(&format!("http://127.0.0.1:{http}"));
    assert_eq!(api.post("/auth/login", json!({"email": "ops@example.org", "password": common::PASSWORD})).await.0, 200);
    let r = sat::register(&api, json!({"name": "crashy", "latitude": 40.8, "longitude": -77.9})).await;

    let wav = sat::warbler_wav();
    let chunks: Vec<String> = (0..24).map(|_| uuid::Uuid::new_v4().to_string()).collect();
    let mut acked = HashSet::new();
    let mut c = sat::connect_as(mqtt, &r.client_id, &r.id, &r.password).await;
    assert!(matches!(c.next(10).await, Some(Seen::Connected)));
    assert!(c.subscribe(&format!("{}#", r.prefix)).await);
    // Publish everything, and kill the hub as soon as a few acks are in: inference is mid-flight.
    for id in &chunks {
        c.publish(&r.topic("audio"), sat::audio_message(&r, id, &wav, 48_000, 3000)).await;
    }
    while acked.len() < 6 {
        match c.next(20).await {
            Some(Seen::Message { topic, payload }) if topic == r.topic("ack") => {
                let ack: serde_json::Value = serde_json::from_slice(&payload).expect("ack");
                assert_eq!(ack["status"], "stored");
                acked.insert(ack["chunkId"].as_str().expect("id").to_owned());
            }
            Some(_) => {}
            None => panic!("no acks before the kill"),
        }
    }
    process::signal(&mut hub, "KILL");
    let acked_before_kill = acked.clone();

    // Restart on the same data; the satellite's outbox resends whatever was not acknowledged.
    let (http, mqtt) = (process::free_port(), process::free_port());
    let mut hub = process::serve(dir.path(), http, mqtt);
    common::wait_healthy(&format!("http://127.0.0.1:{http}/api/health")).await;
    let mut c = sat::connect_as(mqtt, &r.client_id, &r.id, &r.password).await;
    assert!(matches!(c.next(10).await, Some(Seen::Connected)));
    assert!(c.subscribe(&format!("{}#", r.prefix)).await);
    send_all(&mut c, &r, &chunks, &mut acked, &wav, 60).await;
    assert_eq!(acked.len(), chunks.len(), "every chunk is acknowledged in the end");

    let db = dir.path().join("data/birdhub.db");
    let query = |sql: &str| -> i64 {
        rusqlite::Connection::open(&db).expect("db").query_row(sql, [], |r| r.get(0)).expect(sql)
    };
    let mut done = 0;
    for _ in 0..600 {
        done = query("SELECT count(*) FROM inference_jobs WHERE status = 'done'");
        if done == chunks.len() as i64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    process::signal(&mut hub, "TERM");

    assert_eq!(done, chunks.len() as i64, "every job finished");
    assert_eq!(query("SELECT count(*) FROM audio_chunks"), chunks.len() as i64, "each chunk stored once");
    assert_eq!(query("SELECT count(*) FROM inference_jobs"), chunks.len() as i64, "one job per chunk");
    assert_eq!(query("SELECT count(*) FROM inference_jobs WHERE status != 'done'"), 0);
    let per_chunk = query(
        "SELECT max(n) FROM (SELECT count(*) AS n FROM detections WHERE species_pk = (SELECT pk FROM species_labels WHERE species_code = 'leiothlypis_peregrina') GROUP BY chunk_pk)",
    );
    assert_eq!(per_chunk, 1, "no chunk got the same detection twice");
    assert_eq!(
        query(
            "SELECT count(DISTINCT chunk_pk) FROM detections WHERE species_pk = (SELECT pk FROM species_labels WHERE species_code = 'leiothlypis_peregrina')"
        ),
        chunks.len() as i64
    );
    let conn = rusqlite::Connection::open(&db).expect("db");
    for id in &acked_before_kill {
        let key: String = conn
            .query_row(
                &format!("SELECT {} FROM audio_chunks c WHERE c.id = ?1", birdhub::store::chunks::key_sql("c")),
                [id.parse::<birdhub::ids::ChunkId>().expect("id")],
                |r| r.get(0),
            )
            .expect("acked chunk row");
        let stored = std::fs::read(dir.path().join("data/objects").join(key)).expect("acked chunk file");
        assert_eq!(stored, wav, "the acknowledged WAV is intact");
    }
}
