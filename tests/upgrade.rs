//! Upgrades: a database made by the first migration set, with data in it
//! (`tests/fixtures/schema-v1.sql`), is opened by today's hub. Every migration runs, nothing is
//! lost, the old detection is served by the API with today's fields, the statistics count it,
//! its audio plays, and the queued inference job is still queued after an upgrade and a restart.

mod common;

use birdhub::store;

const TEAM: &str = "0b9e4a52-7f1c-4c1e-9d7e-1a2b3c4d5e6f";
const DETECTION: &str = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f";
const CHUNK: &str = "3e4f5a6b-7c8d-4e9f-8a0b-1c2d3e4f5a6b";

/// A data dir holding the v1 database and the two chunks' WAV files.
fn v1_data_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    let conn = rusqlite::Connection::open(dir.path().join("birdhub.db")).expect("db");
    conn.execute_batch(include_str!("fixtures/schema-v1.sql")).expect("the v1 fixture loads");
    // The password of the fixture's user, so the test can sign in as her.
    let hash = birdhub::auth::password::hash(common::PASSWORD).expect("hash");
    conn.execute("UPDATE users SET password_hash = ?1", [hash]).expect("password");
    let version: u32 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).expect("version");
    assert_eq!(version, 1, "the fixture is the first schema");
    drop(conn);
    for n in 1..=2 {
        let path = dir.path().join(format!("objects/audio/v1/chunk-{n}.wav"));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, common::sat::tone_wav(48_000, 3.0)).expect("wav");
    }
    dir
}

fn queued(hub: &common::TestHub) -> i64 {
    hub.sql(|c| {
        c.query_row("SELECT count(*) FROM inference_jobs WHERE status = 'queued'", [], |r| r.get(0)).expect("jobs")
    })
}

#[tokio::test]
async fn a_first_schema_database_with_data_upgrades_and_keeps_everything() {
    let hub = common::spawn_hub_in(v1_data_dir(), |_| {}).await;
    let version: u32 = hub.sql(|c| c.pragma_query_value(None, "user_version", |r| r.get(0)).expect("version"));
    assert_eq!(version, store::migrate::latest(), "every migration ran");
    let ok: String = hub.sql(|c| c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).expect("check"));
    assert_eq!(ok, "ok");
    let broken: i64 =
        hub.sql(|c| c.query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| r.get(0)).expect("fk"));
    assert_eq!(broken, 0, "no dangling reference");
    assert_eq!(queued(&hub), 1, "the queued job survived the upgrade (no model: nothing claims it)");

    let api = hub.login("ana@example.org").await;
    let (status, d) = api.get(&format!("/detections/{DETECTION}")).await;
    assert_eq!(status, 200, "{d}");
    assert_eq!(
        (d["common_name"].as_str(), d["verification_status"].as_str()),
        (Some("Eurasian Blackbird"), Some("confirmed"))
    );
    assert_eq!((d["is_rare"].as_bool(), d["confidence"].as_f64()), (Some(true), Some(0.91)));
    assert!(d["audio_expired_at"].is_null(), "today's fields, with their defaults: {d}");
    let (_, comments) = api.get(&format!("/detections/{DETECTION}/comments")).await;
    assert!(comments.to_string().contains("First blackbird of spring"), "{comments}");
    // The rollups added later were filled from the old rows.
    let (_, dash) = api.get("/stats/dashboard?from=2026-03-01&to=2026-03-31").await;
    assert_eq!(dash["detections"].as_i64(), Some(1), "{dash}");
    assert_eq!(dash["species"].as_i64(), Some(1));
    // The old chunk's audio plays.
    let r = api.client.get(api_url(&hub, &format!("/audio/{CHUNK}"))).send().await.expect("audio");
    assert_eq!(r.status(), 200);
    let (_, teams) = api.get("/auth/me").await;
    assert!(teams.to_string().contains(TEAM), "the team is hers: {teams}");

    // A restart on the upgraded database keeps the queued job and changes nothing.
    let dir = hub.stop_keeping_data().await;
    let hub = common::spawn_hub_in(dir, |_| {}).await;
    assert_eq!(queued(&hub), 1, "the queued job is still queued after a restart");
    let api = hub.login("ana@example.org").await;
    let (status, list) = api.get("/detections").await;
    assert_eq!(status, 200);
    let ids: Vec<&str> =
        list["detections"].as_array().map(|a| a.iter().filter_map(|d| d["id"].as_str()).collect()).unwrap_or_default();
    assert_eq!(ids, [DETECTION]);
}

fn api_url(hub: &common::TestHub, path: &str) -> String {
    format!("{}/api{path}", hub.base_url)
}
