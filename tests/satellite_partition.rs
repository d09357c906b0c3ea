//! A partition: the hub (a real `birdhub serve` process) stops for 60 s while two real
//! satellites keep recording in real time, and one of them is SIGKILLed and restarted
//! meanwhile. When the hub returns, every chunk the satellites kept is stored exactly once.

mod common;

use std::{collections::BTreeSet, path::Path, time::Duration};

use common::{
    Api, process,
    satellite::{Station, saved_id, station},
};
use serde_json::json;

/// The chunk ids the hub holds for a satellite (read from its database file).
fn hub_ids(data: &Path, satellite: &str) -> Vec<String> {
    let c = rusqlite::Connection::open_with_flags(data.join("birdhub.db"), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("hub db");
    c.busy_timeout(Duration::from_secs(5)).expect("busy timeout");
    let mut q = c
        .prepare("SELECT id FROM audio_chunks WHERE satellite_pk = (SELECT pk FROM satellites WHERE id = ?1)")
        .expect("query");
    q.query_map([satellite], |r| r.get::<_, birdhub::ids::ChunkId>(0))
        .expect("rows")
        .map(|r| r.expect("id").to_string())
        .collect()
}

/// Every chunk id in a satellite's outbox, and how many of them are not acked yet.
fn outbox_ids(s: &Station) -> (BTreeSet<String>, usize) {
    let c = rusqlite::Connection::open_with_flags(
        s.data().join("outbox").join("outbox.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("outbox db");
    c.busy_timeout(Duration::from_secs(5)).expect("busy timeout");
    let mut q = c.prepare("SELECT chunk_id, state FROM chunks").expect("query");
    let rows: Vec<(String, String)> =
        q.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).expect("rows").map(|r| r.expect("row")).collect();
    let unacked = rows.iter().filter(|(_, state)| state == "unacked").count();
    (rows.into_iter().map(|(id, _)| id).collect(), unacked)
}

async fn login(base: &str) -> Api {
    let api = Api::new(base);
    let (status, body) =
        api.post("/auth/login", json!({"email": "ops@example.org", "password": common::PASSWORD})).await;
    assert_eq!(status, 200, "{body}");
    api
}

async fn wait_healthy(base: &str) {
    common::wait_healthy(&format!("{base}/api/health")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_recorded_while_the_hub_is_away_arrive_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (http, mqtt) = (process::free_port(), process::free_port());
    let base = format!("http://127.0.0.1:{http}");
    let mut hub = process::serve(dir.path(), http, mqtt);
    wait_healthy(&base).await;
    process::create_user(dir.path(), "ops@example.org");
    let api = login(&base).await;

    // 9 recordings of 10 s each: about 90 s of real-time recording per satellite.
    let mut stations: Vec<Station> = ["meadow", "hedge"].iter().map(|n| station(dir.path(), n, 9)).collect();
    for s in &mut stations {
        s.register(&base, "ops@example.org", &["--pace", "realtime"]);
        s.id = saved_id(&s.config());
        let (status, body) =
            api.put(&format!("/satellites/{}/config", s.id), json!({"overrides": {"heartbeat_interval_sec": 5}})).await;
        assert_eq!(status, 200, "{body}");
        s.start();
    }
    let data = dir.path().join("data");
    for s in &stations {
        for _ in 0..120 {
            if hub_ids(&data, &s.id).len() >= 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert!(hub_ids(&data, &s.id).len() >= 2, "{} streams before the outage", s.instance);
    }

    // The hub goes away for 60 s; the satellites keep recording into their outboxes.
    process::signal(&mut hub, "TERM");
    let before: Vec<usize> = stations.iter().map(|s| hub_ids(&data, &s.id).len()).collect();
    tokio::time::sleep(Duration::from_secs(25)).await;
    // A SIGKILL loses nothing that was already in the outbox.
    stations[0].signal("KILL");
    let (kept, unacked) = outbox_ids(&stations[0]);
    assert!(unacked >= 5, "chunks recorded during the outage wait in the outbox: {unacked}");
    tokio::time::sleep(Duration::from_secs(5)).await;
    stations[0].start();
    tokio::time::sleep(Duration::from_secs(30)).await;

    let mut hub = process::serve(dir.path(), http, mqtt);
    wait_healthy(&base).await;
    // The recordings run out ~90 s after the start; then every outbox drains.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(180);
    for (i, s) in stations.iter().enumerate() {
        loop {
            let (ids, unacked) = outbox_ids(s);
            let held: Vec<String> = hub_ids(&data, &s.id);
            let distinct: BTreeSet<String> = held.iter().cloned().collect();
            // 9 files of 10.1 s: three whole chunks and a padded 1.1 s tail each.
            let done = s.status()["filterStats"]["totalProcessed"].as_i64().unwrap_or(0) >= 36;
            if done && unacked == 0 && distinct == ids {
                assert_eq!(held.len(), distinct.len(), "no chunk is stored twice");
                assert!(held.len() > before[i] + 10, "the outage's chunks arrived ({} then {})", before[i], held.len());
                if i == 0 {
                    assert!(kept.is_subset(&distinct), "every chunk in the killed satellite's outbox arrived");
                }
                let status = s.status();
                assert_eq!(status["outboxStats"]["unackedCount"], json!(0), "{status}");
                assert_eq!(status["filterStats"]["totalSent"].as_u64(), Some(held.len() as u64), "{status}");
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{}: outbox {} rows ({unacked} unacked), hub {} ({} distinct); missing {:?}",
                s.instance,
                ids.len(),
                held.len(),
                distinct.len(),
                ids.difference(&distinct).take(3).collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    process::signal(&mut hub, "TERM");
}
