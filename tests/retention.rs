//! Audio retention as an owner meets it: old plain audio goes after `keep_audio_days`, verified,
//! rare, annotated and shared audio stays; under the free-space minimum (a real 16 MB tmpfs)
//! plain audio goes oldest first, then kept audio, never shared audio; a still-full disk makes
//! ingest answer `disk_full`; and a SIGKILL in the middle of a sweep leaves no row pointing at a
//! missing file and no expired file behind.

mod common;

use std::{path::Path, process::Command, time::Duration};

use birdhub::{
    ids::{ChunkId, DetectionId, SatelliteId, TenantId},
    usecases::audio_retention,
};
use common::{TestHub, process, sat, seed};
use serde_json::json;

fn days_ago(hub: &TestHub, days: i64, minutes: i64) -> String {
    (hub.state().clock.now() - chrono::Duration::days(days) - chrono::Duration::minutes(minutes))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn key_of(hub: &TestHub, chunk: ChunkId) -> std::path::PathBuf {
    let key: String = hub.sql(|c| {
        let sql = format!("SELECT {} FROM audio_chunks c WHERE c.id = ?1", birdhub::store::chunks::key_sql("c"));
        c.query_row(&sql, [chunk], |r| r.get(0)).expect("chunk")
    });
    hub.state().objects.path_of(&key).expect("key")
}

fn expired(hub: &TestHub, chunk: ChunkId) -> bool {
    hub.sql(|c| {
        c.query_row("SELECT audio_expired_at IS NOT NULL FROM audio_chunks WHERE id = ?1", [chunk], |r| r.get(0))
            .expect("chunk")
    })
}

/// The classifier is done with every chunk so far (these hubs run without the model).
fn classified(hub: &TestHub) {
    hub.sql(|c| c.execute("UPDATE inference_jobs SET status = 'done', finished_at = '2026-01-01T00:00:00.000Z'", []))
        .expect("jobs done");
}

/// Not rare: the first detection of a species is marked rare ("first ever") when it is recorded.
fn make_plain(hub: &TestHub, d: DetectionId) {
    hub.sql(|c| c.execute("UPDATE detections SET is_rare = 0, rare_reason = NULL WHERE id = ?1", [d])).expect("plain");
}

/// A detection made rare (as the rarity check marks it).
fn make_rare(hub: &TestHub, d: DetectionId) {
    hub.sql(|c| c.execute("UPDATE detections SET is_rare = 1, rare_reason = 'first ever' WHERE id = ?1", [d]))
        .expect("rare");
}

struct Team {
    hub: TestHub,
    api: common::Api,
    tenant: TenantId,
    sat: SatelliteId,
}

async fn team(hub: TestHub) -> Team {
    let owner = hub.user("owner@example.org", false).await;
    let sat = seed::satellite(&hub, owner.tenant, "Garden").await;
    let api = hub.login(&owner.email).await;
    Team { hub, api, tenant: owner.tenant, sat }
}

#[tokio::test]
async fn old_plain_audio_goes_and_verified_rare_annotated_shared_and_young_audio_stays() {
    let t = team(
        common::spawn_hub_with(|s| {
            s.retention.min_free_disk_mb = 0;
            s.retention.keep_audio_days = 30;
        })
        .await,
    )
    .await;
    let (hub, api) = (&t.hub, &t.api);
    let silent = seed::chunk(hub, t.tenant, t.sat, &days_ago(hub, 40, 6)).await;
    let (pending_c, pending) = seed::heard(hub, t.tenant, t.sat, &days_ago(hub, 40, 5), seed::ROBIN, 0.8).await;
    let (confirmed_c, confirmed) = seed::heard(hub, t.tenant, t.sat, &days_ago(hub, 40, 4), seed::ROBIN, 0.8).await;
    let (rare_c, rare) = seed::heard(hub, t.tenant, t.sat, &days_ago(hub, 40, 3), seed::WARBLER, 0.8).await;
    let (annotated_c, annotated) = seed::heard(hub, t.tenant, t.sat, &days_ago(hub, 40, 2), seed::WREN, 0.8).await;
    let (shared_c, shared) = seed::heard(hub, t.tenant, t.sat, &days_ago(hub, 40, 1), seed::WREN, 0.8).await;
    let (young_c, _) = seed::heard(hub, t.tenant, t.sat, &days_ago(hub, 5, 0), seed::ROBIN, 0.8).await;
    assert!(api.post(&format!("/detections/{confirmed}/verify"), json!({ "vote": "confirm" })).await.0.is_success());
    make_rare(hub, rare);
    let bx =
        json!({ "vote": "unsure", "timeStartMs": 500, "timeEndMs": 1500, "freqLowHz": 3000.0, "freqHighHz": 6000.0 });
    assert_eq!(api.post(&format!("/detections/{annotated}/annotate"), bx).await.0, 201);
    let (status, link) = api.get(&format!("/detections/{shared}/share")).await;
    assert_eq!(status, 200, "{link}");
    make_plain(hub, pending);
    for d in [confirmed, annotated, shared] {
        make_plain(hub, d);
    }

    classified(hub);
    // An old recording still waiting for the classifier (a satellite's backlog) keeps its audio.
    let backlog = seed::chunk(hub, t.tenant, t.sat, &days_ago(hub, 40, 7)).await;
    let size = std::fs::metadata(key_of(hub, silent)).expect("wav").len();
    let s = hub.state();
    let swept = s.disk.sweep(&s.store, &s.objects, &s.clock).await.expect("sweep");
    assert_eq!((swept.expired_by_age, swept.deleted_for_space, swept.bytes), (2, 0, 2 * size), "{swept:?}");
    for gone in [silent, pending_c] {
        assert!(expired(hub, gone) && !key_of(hub, gone).exists(), "plain audio older than 30 days goes");
    }
    for kept in [confirmed_c, rare_c, annotated_c, shared_c, young_c, backlog] {
        assert!(!expired(hub, kept) && key_of(hub, kept).exists(), "{kept} is kept");
    }

    // The detection stays, saying its audio expired; the recording answers 410.
    let (status, d) = api.get(&format!("/detections/{pending}")).await;
    assert_eq!(status, 200);
    assert!(d["audio_expired_at"].is_string(), "{d}");
    common::assert_error(&api.get(&format!("/audio/{pending_c}")).await, 410, "audio_expired");
    common::assert_error(&api.get(&format!("/detections/{pending}/spectrogram.png")).await, 410, "audio_expired");
    let page =
        api.client.get(format!("{}/detections?species={}", hub.base_url, seed::ROBIN.0)).send().await.expect("page");
    assert!(page.text().await.expect("html").contains("audio expired"), "the list says so");
    // The shared link still plays.
    let token = link["token"].as_str().expect("token");
    let audio = reqwest::get(format!("{}/api/share/audio/{shared}/{token}", hub.base_url)).await.expect("shared audio");
    assert_eq!(audio.status(), 200);

    // The status page counts what was reclaimed; a second sweep has nothing to do.
    let admin = hub.user("root@example.org", true).await;
    let (_, status) = hub.login(&admin.email).await.get("/system/status").await;
    let r = &status["infrastructure"]["objectStorage"]["retention"];
    assert_eq!(
        (r["reclaimedBytes"].as_u64(), r["expiredChunks"].as_u64(), r["keepAudioDays"].as_u64()),
        (Some(2 * size), Some(2), Some(30)),
        "{status}"
    );
    let again = s.disk.sweep(&s.store, &s.objects, &s.clock).await.expect("sweep");
    assert_eq!(again.expired_by_age + again.deleted_for_space + again.finished, 0);
}

/// A tmpfs of `mb` megabytes mounted on a fresh directory, unmounted on drop.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(mb: u32) -> Self {
        let dir = tempfile::tempdir().expect("dir");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mb}m"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("mount");
        assert!(ok.success(), "the retention test mounts a tmpfs (it runs as root in CI)");
        Self(dir)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

fn free(path: &Path) -> u64 {
    audio_retention::free_bytes(path).expect("statvfs")
}

#[tokio::test]
async fn under_the_minimum_plain_audio_goes_oldest_first_then_kept_audio_then_ingest_says_disk_full() {
    let fs = Tmpfs::mount(16);
    let dir = tempfile::tempdir_in(fs.0.path()).expect("data dir");
    let hub = common::spawn_hub_in(dir, |s| s.retention.min_free_disk_mb = 6).await;
    let data = hub.state().settings.data_dir.clone();
    let t = team(hub).await;
    let hub = &t.hub;
    // 8 plain chunks (1 to 8 days old, the oldest first in time), 4 confirmed, 1 shared.
    let mut plain = Vec::new();
    for day in (1..=8).rev() {
        let (c, d) = seed::heard(hub, t.tenant, t.sat, &days_ago(hub, day, 0), seed::ROBIN, 0.5).await;
        make_plain(hub, d);
        plain.push(c);
    }
    let mut kept = Vec::new();
    for day in (1..=4).rev() {
        let (c, d) = seed::heard(hub, t.tenant, t.sat, &days_ago(hub, day, 30), seed::WREN, 0.9).await;
        assert!(t.api.post(&format!("/detections/{d}/verify"), json!({ "vote": "confirm" })).await.0.is_success());
        kept.push(c);
    }
    let (shared_c, shared) = seed::heard(hub, t.tenant, t.sat, &days_ago(hub, 9, 0), seed::WREN, 0.4).await;
    assert_eq!(t.api.get(&format!("/detections/{shared}/share")).await.0, 200);
    classified(hub);
    let wav = std::fs::metadata(key_of(hub, plain[0])).expect("wav").len();

    // Ballast until about 3 chunks short of the minimum.
    let min = 6 * 1_048_576;
    let short = 3 * wav + wav / 2;
    let ballast = (free(&data) + short).saturating_sub(min);
    std::fs::write(data.join("ballast-1"), vec![7u8; ballast as usize]).expect("ballast");
    let s = hub.state();
    let swept = s.disk.sweep(&s.store, &s.objects, &s.clock).await.expect("sweep");
    assert!(!swept.still_short && free(&data) >= min, "{swept:?}");
    let gone: Vec<bool> = plain.iter().map(|c| expired(hub, *c)).collect();
    let n = gone.iter().filter(|g| **g).count();
    assert!(
        (4..=5).contains(&n),
        "3.5 chunks short: 4 plain chunks make the room (one more if the database grew): {gone:?}"
    );
    assert!(gone.iter().take(n).all(|g| *g) && gone.iter().skip(n).all(|g| !*g), "the oldest first: {gone:?}");
    assert!(kept.iter().chain([&shared_c]).all(|c| !expired(hub, *c)), "plain audio goes before kept audio");

    // Far more ballast: every plain and kept chunk goes, oldest first; the shared one stays, and
    // the disk is still too full.
    std::fs::write(data.join("ballast-2"), vec![7u8; (free(&data) - 512 * 1024) as usize]).expect("ballast");
    let swept = s.disk.sweep(&s.store, &s.objects, &s.clock).await.expect("sweep");
    assert!(swept.still_short, "{swept:?}");
    assert!(plain.iter().chain(&kept).all(|c| expired(hub, *c) && !key_of(hub, *c).exists()));
    assert!(!expired(hub, shared_c) && key_of(hub, shared_c).exists(), "shared audio is never deleted");

    // A satellite's chunk now gets `disk_full`, and nothing is written.
    let r = sat::register(&t.api, json!({ "name": "hedge" })).await;
    let mut c = sat::connect(hub, &r).await;
    assert!(c.subscribe(&r.topic("ack")).await);
    let chunk = ChunkId::new().to_string();
    c.publish(&r.topic("audio"), sat::audio_message(&r, &chunk, &sat::tone_wav(48_000, 3.0), 48_000, 3000)).await;
    let ack = c.message_on(&r.topic("ack"), 10).await.expect("an ack");
    assert_eq!((ack["chunkId"].as_str(), ack["status"].as_str()), (Some(chunk.as_str()), Some("error")), "{ack}");
    assert!(ack["error"].as_str().is_some_and(|e| e.starts_with("disk_full")), "{ack}");
    let stored: i64 = hub.sql(|c| {
        let id: ChunkId = chunk.parse().expect("id");
        c.query_row("SELECT count(*) FROM audio_chunks WHERE id = ?1", [id], |r| r.get(0)).expect("count")
    });
    assert_eq!(stored, 0, "no row for a refused chunk");

    // Room again (the ballast goes): the same chunk is stored.
    std::fs::remove_file(data.join("ballast-2")).expect("rm");
    c.publish(&r.topic("audio"), sat::audio_message(&r, &chunk, &sat::tone_wav(48_000, 3.0), 48_000, 3000)).await;
    let ack = c.message_on(&r.topic("ack"), 10).await.expect("an ack");
    assert_eq!(ack["status"], "stored", "{ack}");
    drop(fs);
}

/// Old chunks the killed sweep works through.
const CHUNKS: i64 = 20_000;

#[tokio::test]
async fn a_sigkill_in_the_middle_of_a_sweep_leaves_no_broken_row_and_no_file_behind() {
    let work = tempfile::tempdir().expect("dir");
    let data = work.path().join("data");
    // 20,000 chunks 40 days old with small files, written as ingest leaves them (rows without
    // jobs: nothing to classify), in the hub's own database, which is then stopped.
    {
        let hub =
            common::spawn_hub_in(tempfile::tempdir().expect("seed dir"), |s| s.retention.min_free_disk_mb = 0).await;
        let t = team(hub).await;
        let at = days_ago(&t.hub, 40, 0);
        let rows: Vec<(String, String)> = (0..CHUNKS)
            .map(|i| {
                let id = ChunkId::new().to_string();
                (id.clone(), format!("audio/{}/{}/old/{id}-{i}.wav", t.tenant, t.sat))
            })
            .collect();
        for (_, key) in &rows {
            let path = t.hub.state().objects.path_of(key).expect("key");
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, b"RIFF-small").expect("file");
        }
        let (tenant, sat) = (t.tenant.to_string(), t.sat.to_string());
        t.hub.sql(|c| {
            let tx = c.unchecked_transaction().expect("tx");
            for (id, key) in &rows {
                tx.execute(
                    "INSERT INTO audio_chunks (id, tenant_pk, satellite_pk, recorded_at, duration_ms, sample_rate,
                         storage_key, size_bytes)
                     VALUES (?1, (SELECT pk FROM tenants WHERE id = ?2), (SELECT pk FROM satellites WHERE id = ?3),
                             CAST(round((julianday(?4) - 2440587.5) * 86400000) AS INTEGER), 3000, 48000, ?5, 10)",
                    rusqlite::params![id.parse::<ChunkId>().expect("id"), tenant, sat, at, key],
                )
                .expect("row");
            }
            tx.commit().expect("commit");
        });
        let kept = t.hub.stop_keeping_data().await;
        copy_dir(kept.path(), &data);
    }
    let count = |sql: &str| -> i64 {
        let c = rusqlite::Connection::open(data.join("birdhub.db")).expect("db");
        c.query_row(sql, [], |r| r.get(0)).expect(sql)
    };
    let (http, mqtt) = (process::free_port(), process::free_port());
    let retention = [("BIRDHUB_RETENTION__KEEP_AUDIO_DAYS", "30")];
    let mut hub = process::serve_with_env(work.path(), http, mqtt, &retention);
    // Kill it while the start-up sweep is running.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while count("SELECT count(*) FROM audio_chunks WHERE audio_expired_at IS NOT NULL") == 0 {
        assert!(std::time::Instant::now() < deadline, "the sweep never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    process::signal(&mut hub, "KILL");
    let expired_at_kill = count("SELECT count(*) FROM audio_chunks WHERE audio_expired_at IS NOT NULL");
    assert!(expired_at_kill < CHUNKS, "killed in the middle ({expired_at_kill} of {CHUNKS} marked)");
    println!("killed with {expired_at_kill} of {CHUNKS} chunks marked");
    check_rows_and_files(&data, false);

    // Restarted, the hub finishes: every file of an expired row is gone, every other file is there.
    let mut hub = process::serve_with_env(work.path(), http, mqtt, &retention);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while count("SELECT count(*) FROM audio_chunks WHERE audio_deleted = 1") < CHUNKS {
        assert!(std::time::Instant::now() < deadline, "the sweep never finished");
        std::thread::sleep(Duration::from_millis(50));
    }
    process::signal(&mut hub, "TERM");
    check_rows_and_files(&data, true);
    let c = rusqlite::Connection::open(data.join("birdhub.db")).expect("db");
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).expect("check");
    assert_eq!(ok, "ok");
}

/// No live row without its file; no file of a row marked deleted; after a finished sweep, no
/// file of any expired row.
fn check_rows_and_files(data: &Path, finished: bool) {
    let c = rusqlite::Connection::open(data.join("birdhub.db")).expect("db");
    let sql = format!(
        "SELECT {}, c.audio_expired_at IS NOT NULL, c.audio_deleted FROM audio_chunks c",
        birdhub::store::chunks::key_sql("c")
    );
    let mut stmt = c.prepare(&sql).expect("sql");
    let rows: Vec<(String, bool, bool)> =
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).expect("rows").map(|r| r.expect("row")).collect();
    assert_eq!(rows.len() as i64, CHUNKS, "no row is lost");
    for (key, expired, deleted) in rows {
        let exists = data.join("objects").join(&key).exists();
        if !expired {
            assert!(exists, "a live row has its file: {key}");
        }
        if deleted || (finished && expired) {
            assert!(!exists, "a deleted row's file is gone: {key}");
        }
    }
    // No half-written temp file anywhere under the objects.
    let temp = walk(&data.join("objects").join(".tmp"));
    assert!(temp.is_empty(), "{} half-written files", temp.len());
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p.display().to_string());
        }
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read").flatten() {
        let p = e.path();
        let dest = to.join(e.file_name());
        if p.is_dir() { copy_dir(&p, &dest) } else { std::fs::copy(&p, &dest).map(|_| ()).expect("copy") }
    }
}
