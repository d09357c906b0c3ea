//! Backup and restore (issue 17): a backup taken while 10 satellites send chunks restores to a
//! hub whose database passes `PRAGMA integrity_check` and holds every chunk acknowledged before
//! the backup started, with its file; restore refuses a damaged or changed archive, a newer
//! schema, paths leaving the data dir, a non-empty data dir without `--force` and a database in
//! use; the daily backup runs at its time on the hub's clock and keeps `backup.keep`; and the
//! real binary's `admin backup` / `admin restore` do the same for a person at a terminal.

mod common;

use std::{
    collections::{HashMap, HashSet},
    io::Read,
    path::{Path, PathBuf},
    process::Command,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use birdhub::{
    store::chunks::key_sql,
    usecases::backup::{self, RestoreError},
};
use chrono::{Local, Timelike};
use common::{Api, sat};
use serde_json::json;

/// A backup of the running hub into `to`, as `admin backup` makes it.
async fn backup_of(hub: &common::TestHub, to: &Path) -> backup::Manifest {
    let manifest =
        backup::backup(&hub.state().store, &hub.data_dir, to, hub.state().clock.now()).await.expect("backup");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(to).expect("backup file").permissions());
    assert_eq!(mode & 0o777, 0o600, "a backup holds the secrets: only its owner may read it");
    manifest
}

/// Every entry of a backup, in order.
fn entries(file: &Path) -> Vec<(String, Vec<u8>)> {
    let mut archive = tar::Archive::new(zstd::Decoder::new(std::fs::File::open(file).expect("open")).expect("zstd"));
    let mut out = Vec::new();
    for entry in archive.entries().expect("entries") {
        let mut entry = entry.expect("entry");
        let name = entry.path().expect("path").display().to_string();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).expect("read");
        out.push((name, bytes));
    }
    out
}

/// Writes `entries` as a backup archive; names go into the header raw, so `../x` can be made.
fn write_archive(file: &Path, entries: &[(String, Vec<u8>)]) {
    let encoder = zstd::Encoder::new(std::fs::File::create(file).expect("create"), 3).expect("zstd");
    let mut tar = tar::Builder::new(encoder);
    for (name, bytes) in entries {
        let mut h = tar::Header::new_old();
        h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        h.set_size(bytes.len() as u64);
        h.set_mode(0o640);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_cksum();
        tar.append(&h, bytes.as_slice()).expect("append");
    }
    tar.into_inner().expect("tar").finish().expect("finish");
}

fn integrity(db: &Path) -> String {
    rusqlite::Connection::open(db).expect("db").query_row("PRAGMA integrity_check", [], |r| r.get(0)).expect("check")
}

fn dir_is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).map(|mut d| d.next().is_none()).unwrap_or(true)
}

/// 3 s of 48 kHz noise: recorded audio barely compresses, and neither does this.
fn noise_wav(seed: u32) -> Vec<u8> {
    let mut x: u32 = seed | 1;
    let samples: Vec<f32> = (0..144_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x as f32 / u32::MAX as f32 - 0.5) * 0.2
        })
        .collect();
    birdhub::inference::audio::encode_wav_i16(&samples, 48_000)
}

fn rand_seed() -> u32 {
    uuid::Uuid::new_v4().as_u128() as u32
}

/// One satellite sending chunks one after the other until `stop`, noting each `stored` ack.
async fn send_until_stopped(
    mut c: sat::Client,
    r: sat::Registered,
    stop: Arc<AtomicBool>,
    acks: Arc<Mutex<Vec<(String, Instant)>>>,
    sent: Arc<Mutex<HashMap<String, Vec<u8>>>>,
) {
    while !stop.load(Ordering::Relaxed) {
        let id = uuid::Uuid::new_v4().to_string();
        let wav = noise_wav(rand_seed());
        sent.lock().expect("sent").insert(id.clone(), wav.clone());
        c.publish(&r.topic("audio"), sat::audio_message(&r, &id, &wav, 48_000, 3000)).await;
        let ack = c.message_on(&r.topic("ack"), 20).await.expect("an ack");
        assert_eq!(ack["chunkId"], id.as_str());
        assert_eq!(ack["status"], "stored", "{ack}");
        acks.lock().expect("acks").push((id, Instant::now()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_backup_under_ten_satellites_restores_every_chunk_acked_before_it() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("ops@example.org", true).await;
    let api = hub.login(&owner.email).await;
    let (stop, acks) = (Arc::new(AtomicBool::new(false)), Arc::new(Mutex::new(Vec::new())));
    let sent = Arc::new(Mutex::new(HashMap::new()));
    let mut senders = Vec::new();
    for n in 0..10 {
        let r = sat::register(&api, json!({"name": format!("sat {n}"), "latitude": 40.8, "longitude": -77.9})).await;
        let mut c = sat::connect(&hub, &r).await;
        assert!(c.subscribe(&r.topic("ack")).await);
        senders.push(tokio::spawn(send_until_stopped(c, r, stop.clone(), acks.clone(), sent.clone())));
    }
    let count = |acks: &Arc<Mutex<Vec<(String, Instant)>>>| acks.lock().expect("acks").len();
    while count(&acks) < 100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let token = hub.token(&owner.email).await;
    let out = tempfile::tempdir().expect("tempdir");
    let file = out.path().join("hub.tar.zst");
    let started = Instant::now();
    let acked_before: HashSet<String> = acks.lock().expect("acks").iter().map(|(id, _)| id.clone()).collect();
    let manifest = backup_of(&hub, &file).await;
    let took = started.elapsed();
    let during = acks.lock().expect("acks").iter().filter(|(_, at)| *at > started).count();
    // Keep the load on a little longer, then stop it.
    let after = count(&acks);
    while count(&acks) < after + 20 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for s in senders {
        s.await.expect("sender");
    }
    let size = std::fs::metadata(&file).expect("backup").len();
    eprintln!(
        "backup of {} files ({} objects, {} bytes, db {} bytes) took {took:?}, {size} bytes compressed; \
         {during} chunks acked while it ran, {} acked before it",
        manifest.files.len(),
        manifest.object_count(),
        manifest.total_bytes(),
        manifest.db_bytes(),
        acked_before.len()
    );
    assert!(during > 0, "chunks kept flowing while the backup ran");
    assert_eq!(manifest.schema_version, birdhub::store::migrate::latest());
    assert!(manifest.files.iter().any(|f| f.path == "secrets.toml"), "the secrets are in it");
    let left: Vec<_> = std::fs::read_dir(out.path()).expect("ls").map(|e| e.expect("e").file_name()).collect();
    assert_eq!(left, ["hub.tar.zst"], "no temp file or snapshot is left beside the backup");

    let hub_dir = hub.stop_keeping_data().await;
    let fresh = tempfile::tempdir().expect("tempdir");
    let restored = backup::restore(&file, fresh.path(), false).expect("restore");
    assert_eq!(restored.manifest, manifest);
    assert_eq!(restored.moved_aside, None);
    let db = fresh.path().join("birdhub.db");
    assert_eq!(integrity(&db), "ok");
    let conn = rusqlite::Connection::open(&db).expect("db");
    let sent = sent.lock().expect("sent").clone();
    for id in &acked_before {
        let key: String = conn
            .query_row(
                &format!("SELECT {} FROM audio_chunks c WHERE c.id = ?1", key_sql("c")),
                [id.parse::<birdhub::ids::ChunkId>().expect("id")],
                |r| r.get(0),
            )
            .unwrap_or_else(|e| panic!("chunk {id} acked before the backup is restored: {e}"));
        let bytes = std::fs::read(fresh.path().join("objects").join(&key)).expect("its file is restored");
        assert!(bytes == sent[id], "chunk {id} has the same bytes");
    }
    // Every restored row has its file, including chunks stored while the backup ran.
    let keys: Vec<String> = conn
        .prepare(&format!("SELECT {} FROM audio_chunks c", key_sql("c")))
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .map(|k| k.expect("key"))
        .collect();
    assert!(keys.len() >= acked_before.len());
    for key in &keys {
        assert!(fresh.path().join("objects").join(key).is_file(), "{key} has its file");
    }
    drop((conn, hub_dir));

    // A hub on the restored data dir serves it, and a session signed before the backup still
    // works: the secrets came back too.
    let restored_hub = common::spawn_hub_in(fresh, |_| {}).await;
    let (status, me) = Api::with_bearer(&restored_hub.base_url, &token).get("/auth/me").await;
    assert_eq!(status, 200, "{me}");
    let (status, sats) = restored_hub.login(&owner.email).await.get("/satellites").await;
    assert_eq!(status, 200);
    assert_eq!(sats["satellites"].as_array().map(Vec::len), Some(10), "{sats}");
}

#[tokio::test]
async fn restore_checks_everything_before_it_touches_the_data_dir() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("ops@example.org", true).await;
    common::seed::satellite(&hub, owner.tenant, "s").await;
    hub.state().objects.put("chunks/a/one.wav", b"RIFF one".to_vec()).await.expect("put");
    hub.state().objects.put("chunks/a/two.wav", b"RIFF two".to_vec()).await.expect("put");
    let work = tempfile::tempdir().expect("tempdir");
    let good = work.path().join("good.tar.zst");
    let manifest = backup_of(&hub, &good).await;
    assert_eq!(manifest.object_count(), 2, "{manifest:?}");
    let original = entries(&good);
    assert_eq!(original.last().map(|e| e.0.as_str()), Some("manifest.json"));

    let parent = tempfile::tempdir().expect("tempdir");
    let target = parent.path().join("data");
    let refused = |file: &Path| {
        let err = backup::restore(file, &target, false).expect_err("refused");
        assert!(dir_is_empty(&target), "the data dir is untouched after: {err}");
        let names: Vec<_> = std::fs::read_dir(parent.path()).expect("ls").map(|e| e.expect("e").file_name()).collect();
        assert_eq!(names, ["data"], "no staging folder is left after: {err}");
        err
    };

    // One changed byte in an object: the checksum names it.
    let tampered = work.path().join("tampered.tar.zst");
    let mut changed = original.clone();
    let object = changed.iter_mut().find(|e| e.0 == "objects/chunks/a/two.wav").expect("object");
    object.1[5] ^= 0x20;
    write_archive(&tampered, &changed);
    let err = refused(&tampered);
    assert!(matches!(&err, RestoreError::Checksum(p) if p == "objects/chunks/a/two.wav"), "{err}");

    // A file the manifest does not list, and one it lists that is gone.
    let mut extra = original.clone();
    extra.insert(0, ("objects/chunks/a/three.wav".into(), b"RIFF".to_vec()));
    write_archive(&tampered, &extra);
    assert!(matches!(refused(&tampered), RestoreError::Unexpected(p) if p == "objects/chunks/a/three.wav"));
    let missing: Vec<_> = original.iter().filter(|e| e.0 != "objects/chunks/a/one.wav").cloned().collect();
    write_archive(&tampered, &missing);
    assert!(matches!(refused(&tampered), RestoreError::Missing(p) if p == "objects/chunks/a/one.wav"));

    // A path that climbs out of the data dir, or starts at the root.
    for evil in ["../evil.txt", "objects/../../evil.txt", "/tmp/evil.txt"] {
        let mut escaping = original.clone();
        escaping.insert(0, (evil.into(), b"x".to_vec()));
        write_archive(&tampered, &escaping);
        assert!(matches!(refused(&tampered), RestoreError::UnsafePath(_)), "{evil}");
        assert!(!parent.path().join("evil.txt").exists());
    }

    // A manifest from a newer schema: both numbers are named.
    let latest = birdhub::store::migrate::latest();
    let mut newer = original.clone();
    let m = newer.last_mut().expect("manifest");
    let mut json: serde_json::Value = serde_json::from_slice(&m.1).expect("json");
    json["schemaVersion"] = json!(latest + 1);
    m.1 = serde_json::to_vec(&json).expect("json");
    write_archive(&tampered, &newer);
    let err = refused(&tampered);
    assert!(matches!(err, RestoreError::TooNew { backup, supported } if backup == latest + 1 && supported == latest));
    let text = err.to_string();
    assert!(text.contains(&(latest + 1).to_string()) && text.contains(&latest.to_string()), "{text}");

    // Not a backup at all.
    std::fs::write(&tampered, b"hello").expect("write");
    assert!(matches!(refused(&tampered), RestoreError::Archive { .. }));

    // The good one restores; a second time the dir is not empty; --force keeps the old aside.
    backup::restore(&good, &target, false).expect("restore");
    std::fs::write(target.join("note.txt"), b"mine").expect("note");
    let err = backup::restore(&good, &target, false).expect_err("not empty");
    assert!(matches!(err, RestoreError::NotEmpty(_)), "{err}");
    assert!(err.to_string().contains("--force"));
    let again = backup::restore(&good, &target, true).expect("forced");
    let aside = again.moved_aside.expect("moved aside");
    assert!(aside.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("data.before-restore-")));
    assert_eq!(std::fs::read(aside.join("note.txt")).expect("old note kept"), b"mine");
    assert!(aside.join("birdhub.db").is_file(), "the old database is kept aside too");
    assert!(!target.join("note.txt").exists());
    assert_eq!(std::fs::read(target.join("objects/chunks/a/two.wav")).expect("object"), b"RIFF two");
    assert_eq!(integrity(&target.join("birdhub.db")), "ok");

    // The running hub's own data dir: its database is in use, even with --force.
    let err = backup::restore(&good, &hub.data_dir, true).expect_err("in use");
    assert!(matches!(err, RestoreError::InUse(_)), "{err}");
    assert!(err.to_string().contains("stop the hub"));
}

#[tokio::test]
async fn an_older_schema_is_migrated_on_restore() {
    let hub = common::spawn_hub().await;
    let work = tempfile::tempdir().expect("tempdir");
    let good = work.path().join("good.tar.zst");
    backup_of(&hub, &good).await;
    // Swap in a database from before the first migration (schema 0), as the oldest hub would
    // have left it; the restore must bring it to this binary's schema.
    let mut old = entries(&good);
    let db_file = work.path().join("old.db");
    let latest = birdhub::store::migrate::latest();
    rusqlite::Connection::open(&db_file).expect("db").pragma_update(None, "user_version", 0).expect("version");
    let bytes = std::fs::read(&db_file).expect("read");
    let mut manifest: backup::Manifest = serde_json::from_slice(&old.last().expect("m").1).expect("manifest");
    for f in &mut manifest.files {
        if f.path == "birdhub.db" {
            f.size = bytes.len() as u64;
            f.sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes));
        }
    }
    manifest.schema_version = 0;
    for e in &mut old {
        if e.0 == "birdhub.db" {
            e.1 = bytes.clone();
        } else if e.0 == "manifest.json" {
            e.1 = serde_json::to_vec(&manifest).expect("json");
        }
    }
    let older = work.path().join("older.tar.zst");
    write_archive(&older, &old);
    let target = tempfile::tempdir().expect("tempdir");
    let restored = backup::restore(&older, target.path(), false).expect("restore");
    assert_eq!((restored.migrated_from, restored.migrated_to), (0, latest));
    let version: u32 = rusqlite::Connection::open(target.path().join("birdhub.db"))
        .expect("db")
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .expect("version");
    assert_eq!(version, latest);
}

/// `HH:MM` local, `ahead` from the hub's clock now.
fn local_hhmm(hub: &common::TestHub, ahead: chrono::Duration) -> String {
    let t = (hub.state().clock.now() + ahead).with_timezone(&Local);
    format!("{:02}:{:02}", t.hour(), t.minute())
}

fn daily_backups(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.expect("e").file_name().into_string().expect("utf8")).collect())
        .unwrap_or_default();
    names.retain(|n| n.starts_with("birdhub-backup-"));
    names.sort();
    names
}

#[tokio::test]
async fn the_daily_backup_runs_at_its_time_on_the_hub_clock_and_keeps_n() {
    let out = tempfile::tempdir().expect("tempdir");
    let dir: PathBuf = out.path().join("daily");
    let probe = common::spawn_hub().await;
    // Three hours ahead, on a whole minute: the next slot is 2 h 59 min to 3 h away.
    let at = local_hhmm(&probe, chrono::Duration::hours(3));
    drop(probe);
    // What a backup cut short by a power cut leaves behind; the job sweeps it at start.
    std::fs::create_dir_all(&dir).expect("dir");
    let half = dir.join(".birdhub-backup-20260101-033000.tar.zst.tmp-0123abcd");
    std::fs::write(&half, b"half").expect("half");
    let dir_setting = dir.display().to_string();
    let hub = common::spawn_hub_with(move |s| {
        s.backup.daily_at = at;
        s.backup.dir = dir_setting;
        s.backup.keep = 2;
    })
    .await;
    std::fs::write(dir.join("notes.tar.zst"), b"mine").expect("foreign file");
    for _ in 0..100 {
        if !half.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!half.exists(), "the half-written backup is swept");
    let state = hub.state();
    let pass = || async { birdhub::jobs::backup::pass(state).await.expect("pass") };

    // Yesterday's slot was missed (the hub was not running): one backup at the first pass,
    // made by the job at start or by this pass, and only one.
    pass().await;
    assert_eq!(daily_backups(&dir).len(), 1);
    assert!(pass().await.is_none(), "nothing more is due today");

    // Until a minute before the time, nothing; two minutes later, the day's backup.
    let at = birdhub::usecases::backup::schedule::parse_daily_at(&state.settings.backup.daily_at).expect("at");
    let now = state.clock.now().with_timezone(&Local).naive_local();
    let next = birdhub::usecases::backup::schedule::last_slot(now, at) + chrono::Duration::days(1);
    let wait = (next - now - chrono::Duration::minutes(1)).to_std().expect("ahead");
    state.clock.advance(wait);
    assert!(pass().await.is_none(), "not yet");
    assert_eq!(daily_backups(&dir).len(), 1);
    state.clock.advance(Duration::from_secs(120));
    pass().await;
    let made = daily_backups(&dir);
    assert_eq!(made.len(), 2, "{made:?}");
    let stamp = next.format("%Y%m%d-%H%M").to_string();
    assert!(made[1].starts_with(&format!("birdhub-backup-{stamp}")), "{made:?} named after the slot {stamp}");

    // A day later a third: the oldest goes, the foreign file stays.
    state.clock.advance(Duration::from_secs(24 * 3600));
    pass().await;
    let now_made = daily_backups(&dir);
    assert_eq!(now_made.len(), 2, "keep = 2: {now_made:?}");
    assert_eq!(now_made[0], made[1]);
    assert!(!now_made.contains(&made[0]));
    assert_eq!(std::fs::read(dir.join("notes.tar.zst")).expect("kept"), b"mine");
    // And each one is a whole backup.
    let target = tempfile::tempdir().expect("tempdir");
    backup::restore(&dir.join(&now_made[1]), target.path(), false).expect("a daily backup restores");
}

/// `birdhub ARGS --config empty --data-dir DATA` with the machine's settings out of the way.
fn birdhub(config_dir: &Path, data: &Path, args: &[&str]) -> (bool, String, String) {
    let config = config_dir.join("empty.toml");
    std::fs::write(&config, "").expect("config");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_birdhub"));
    cmd.args(args).arg("--config").arg(&config).arg("--data-dir").arg(data);
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("BIRDHUB_") || k == "RUST_LOG") {
        cmd.env_remove(k);
    }
    let out = cmd.output().expect("run birdhub");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn the_binary_backs_up_a_running_hub_and_restores_it() {
    let hub = common::spawn_hub().await;
    hub.user("ops@example.org", true).await;
    hub.state().objects.put("chunks/x/y.wav", b"RIFF y".to_vec()).await.expect("put");
    let work = tempfile::tempdir().expect("tempdir");
    let file = work.path().join("out").join("hub.tar.zst");
    let file_arg = file.display().to_string();

    let (ok, stdout, stderr) = birdhub(work.path(), &hub.data_dir, &["admin", "backup", "--to", &file_arg]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("1 objects") && stdout.contains(&format!("wrote {file_arg}")), "{stdout}");
    assert!(file.is_file());

    let fresh = work.path().join("fresh");
    let (ok, stdout, stderr) = birdhub(work.path(), &fresh, &["admin", "restore", &file_arg]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("restored the backup") && stdout.contains("secrets included"), "{stdout}");
    assert_eq!(std::fs::read(fresh.join("objects/chunks/x/y.wav")).expect("object"), b"RIFF y");
    assert_eq!(integrity(&fresh.join("birdhub.db")), "ok");
    assert_eq!(
        std::fs::read(fresh.join("secrets.toml")).expect("secrets"),
        std::fs::read(hub.data_dir.join("secrets.toml")).expect("secrets")
    );

    let (ok, _, stderr) = birdhub(work.path(), &fresh, &["admin", "restore", &file_arg]);
    assert!(!ok && stderr.contains("not empty") && stderr.contains("--force"), "{stderr}");
    let (ok, _, stderr) = birdhub(work.path(), &hub.data_dir, &["admin", "restore", &file_arg, "--force"]);
    assert!(!ok && stderr.contains("in use") && stderr.contains("stop the hub"), "{stderr}");
    let (ok, stdout, stderr) = birdhub(work.path(), &fresh, &["admin", "restore", &file_arg, "--force"]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("previous contents are in"), "{stdout}");

    let (ok, help, _) = birdhub(work.path(), &fresh, &["admin", "restore", "--help"]);
    assert!(ok && help.contains("Stop the hub first"), "{help}");
}
