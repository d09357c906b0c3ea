//! What a hostile old-station file costs the hub's memory (issue 48): a `birds.db` or
//! `birdnet.db` whose rows are made of nothing by a generated column, rows with values of a
//! megabyte, and a 300 MB "clip". Each runs through the real hub in this process and is judged
//! by the process's peak resident memory (VmHWM, reset before each case), one case at a time.

mod common;

use std::path::Path;

use birdhub::usecases::imports::{self, ImportRequest, PeerKind, Target};
use common::{
    TestHub,
    api::Api,
    imports::{finished, upload},
    peers::{self, PiEra, PiRow},
    peers_go,
};
use reqwest::StatusCode;

/// The cases run one at a time: the peak is the process's.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const MB: u64 = 1024 * 1024;

/// A field of /proc/self/status, in bytes.
fn status_bytes(field: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").expect("status");
    let line = text.lines().find(|l| l.starts_with(field)).expect("field");
    line.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()).expect("kB") * 1024
}

/// Resets the peak to now and returns the resident memory now.
fn resting() -> u64 {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak");
    status_bytes("VmRSS:")
}

fn growth(rest: u64) -> u64 {
    status_bytes("VmHWM:").saturating_sub(rest)
}

/// Uploads `file` as a dry run; the import is refused with `unknown_schema` or ends with every
/// row corrupt. Returns what the hub's peak grew by.
async fn dry_run_refused_or_corrupt(hub: &TestHub, api: &Api, file: &Path, kind: &str, rows: u64) -> u64 {
    let rest = resting();
    let (status, body) = upload(hub, api, file, &[("kind", kind), ("dry_run", "true"), ("time_zone", "UTC")]).await;
    let grew = match status {
        StatusCode::UNPROCESSABLE_ENTITY => {
            assert_eq!(body["code"], "unknown_schema", "{body}");
            growth(rest)
        }
        StatusCode::ACCEPTED => {
            let done = finished(api, body["id"].as_str().expect("id")).await;
            let grew = growth(rest);
            assert_eq!(done["rows_corrupt"], rows, "every row is corrupt: {done}");
            assert_eq!(done["rows_added"], 0, "{done}");
            grew
        }
        other => panic!("{other}: {body}"),
    };
    eprintln!("{kind} {}: the hub's peak grew by {} MB", file.display(), grew / MB);
    grew
}

fn pi_rows(n: usize) -> Vec<PiRow> {
    (0..n)
        .map(|i| PiRow::new("2023-05-01", &format!("06:{:02}:00", i % 60), "Turdus merula", "Blackbird", 0.9, None))
        .collect()
}

#[tokio::test]
async fn a_database_whose_rows_are_made_of_nothing_or_of_megabytes_does_not_grow_the_hub() {
    let _one = ONE_AT_A_TIME.lock().await;
    let hub = common::spawn_hub_with(common::with_model).await;
    hub.user("owner@example.org", false).await;
    let api = hub.login("owner@example.org").await;
    let tmp = tempfile::tempdir().expect("tmp");
    // A plain station first, so the labels and the range model are loaded before measuring.
    let warm = tmp.path().join("warm").join("birds.db");
    std::fs::create_dir_all(warm.parent().expect("dir")).expect("dir");
    peers::pi_database(&warm, PiEra::Nachtzuster2024, &pi_rows(2), (52.52, 13.405));
    let (status, body) = upload(&hub, &api, &warm, &[("kind", "birdnet-pi"), ("dry_run", "true")]).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    finished(&api, body["id"].as_str().expect("id")).await;

    // BirdNET-Pi: a VIRTUAL generated column (hidden from pragma_table_info) of 50 MB a row.
    let virt = tmp.path().join("virtual").join("birds.db");
    std::fs::create_dir_all(virt.parent().expect("dir")).expect("dir");
    peers::pi_database(&virt, PiEra::Nachtzuster2024, &pi_rows(4), (52.52, 13.405));
    rusqlite::Connection::open(&virt)
        .expect("db")
        .execute_batch("ALTER TABLE detections ADD COLUMN Junk BLOB GENERATED ALWAYS AS (zeroblob(50000000)) VIRTUAL")
        .expect("generated column");
    assert!(std::fs::metadata(&virt).expect("size").len() < 64 * 1024, "a small file");
    let grew = dry_run_refused_or_corrupt(&hub, &api, &virt, "birdnet-pi", 4).await;
    assert!(grew < 100 * MB, "a {} KiB birds.db grew the hub by {} MB", 24, grew / MB);

    // BirdNET-Pi: stored values of 300 KB (under the reader's SQLite limit) and 1.5 MB (over it).
    let big = tmp.path().join("big").join("birds.db");
    std::fs::create_dir_all(big.parent().expect("dir")).expect("dir");
    peers::pi_database(&big, PiEra::Nachtzuster2024, &pi_rows(30), (52.52, 13.405));
    rusqlite::Connection::open(&big)
        .expect("db")
        .execute_batch(
            "UPDATE detections SET Com_Name = CAST(zeroblob(300000) AS TEXT) || 'x' WHERE rowid > 1;
             UPDATE detections SET File_Name = CAST(zeroblob(1500000) AS TEXT) || 'x' WHERE rowid = 1;",
        )
        .expect("big values");
    let grew = dry_run_refused_or_corrupt(&hub, &api, &big, "birdnet-pi", 30).await;
    assert!(grew < 100 * MB, "megabyte values grew the hub by {} MB", grew / MB);

    // BirdNET-Go: the same generated column on `notes`.
    let go = tmp.path().join("go");
    peers_go::legacy_station(&go, "");
    rusqlite::Connection::open(go.join("birdnet.db"))
        .expect("db")
        .execute_batch("ALTER TABLE notes ADD COLUMN junk BLOB GENERATED ALWAYS AS (zeroblob(50000000)) VIRTUAL")
        .expect("generated column");
    let grew = dry_run_refused_or_corrupt(&hub, &api, &go.join("birdnet.db"), "birdnet-go", 6).await;
    assert!(grew < 100 * MB, "grew by {} MB", grew / MB);
}

#[tokio::test]
async fn a_300_mb_file_named_like_a_clip_is_not_read_into_memory_nor_stored() {
    let _one = ONE_AT_A_TIME.lock().await;
    let hub = common::spawn_hub_with(common::with_model).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login("owner@example.org").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let station = tmp.path().join("station");
    let rows = pi_rows(2);
    peers::pi_clips(&station, &[&rows[0]]);
    let huge = station.join(rows[1].clip_path());
    std::fs::create_dir_all(huge.parent().expect("dir")).expect("dir");
    // Sparse: 300 MB that cost no disk, starting like an MP3.
    let f = std::fs::File::create(&huge).expect("clip");
    std::io::Write::write_all(&mut &f, b"ID3\x04\0\0\0\0\0\0").expect("head");
    f.set_len(300 * MB).expect("300 MB");
    peers::pi_database(&station.join("birds.db"), PiEra::Nachtzuster2024, &rows, (52.52, 13.405));

    // What `birdhub import birdnet-pi <dir>` does, in this process; a small station first, so
    // the labels and the range model are loaded before the peak is measured.
    let state = hub.state();
    let warm = tmp.path().join("warm");
    // The same rows with both clips real: the measured run differs only by the huge file.
    peers::pi_clips(&warm, &[&rows[0], &rows[1]]);
    peers::pi_database(&warm.join("birds.db"), PiEra::Nachtzuster2024, &rows, (52.52, 13.405));
    let req = ImportRequest::new(owner.tenant, PeerKind::BirdnetPi, warm, Target::New { name: Some("Warm".into()) });
    let id = imports::prepare(&state.store, &hub.data_dir, req).await.expect("prepare");
    imports::run(hub_of(state, &hub.data_dir), id, |_| {}).await.expect("run");
    let req = ImportRequest::new(owner.tenant, PeerKind::BirdnetPi, station.clone(), Target::New { name: None });
    let rest = resting();
    let id = imports::prepare(&state.store, &hub.data_dir, req).await.expect("prepare");
    let job = imports::run(hub_of(state, &hub.data_dir), id, |_| {}).await.expect("run");
    let grew = growth(rest);
    eprintln!("a 300 MB clip: the peak grew by {} MB", grew / MB);
    assert!(grew < 100 * MB, "grew by {} MB", grew / MB);
    assert_eq!((job.rows_added, job.clips_copied, job.clips_missing), (2, 1, 1), "{job:?}");
    assert!(job.missing_clips.iter().any(|m| m.contains("larger than a clip")), "{:?}", job.missing_clips);
    let objects = hub.data_dir.join("objects");
    let mut largest = 0;
    let mut stack = vec![objects];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let m = e.metadata().expect("meta");
            if m.is_dir() { stack.push(e.path()) } else { largest = largest.max(m.len()) }
        }
    }
    assert!(largest < 32 * MB, "an object of {largest} bytes was stored");
    let sat = job.satellite_id.expect("satellite").to_string();
    let (status, body) = api.get(&format!("/detections?satelliteId={sat}&limit=10")).await;
    assert_eq!(status, StatusCode::OK);
    let mut statuses = Vec::new();
    for d in body["detections"].as_array().expect("list") {
        let chunk = d["audio_chunk_id"].as_str().expect("chunk");
        statuses.push(api.get(&format!("/audio/{chunk}")).await.0);
    }
    statuses.sort();
    assert_eq!(statuses, vec![StatusCode::OK, StatusCode::GONE], "the real clip plays, the huge file is not audio");
}

/// What `imports::run` needs of the hub under test.
fn hub_of<'a>(state: &'a birdhub::state::AppState, data_dir: &'a std::path::Path) -> imports::Hub<'a> {
    imports::Hub {
        store: &state.store,
        objects: &state.objects,
        names: &state.names,
        range: Some(&state.range),
        data_dir,
    }
}
