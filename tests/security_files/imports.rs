//! The station importers' rows of "Untrusted files": a team admin's upload (`POST /api/imports`)
//! of a tar, a database or a station whose config and clips are hostile, and the command line's
//! directory import with clips that are not clips. Every sample is checked by its effect: what
//! the hub kept and serves, what it wrote outside its data dir, its peak memory, and that no
//! scratch or upload is left once the job has ended.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use birdhub::usecases::imports::{self, ImportRequest, PeerKind, Target};
use serde_json::Value;

use super::{assert_clear_4xx, assert_serving};
use crate::common::{
    self, TestHub,
    api::Api,
    hostile::{Watch, absolute_target, nested_data_dir},
    peers::{self, PiEra, PiRow},
    peers_go,
};

/// A hub with the model (species are mapped) on a nested data dir, and a team admin's session.
async fn hub() -> (tempfile::TempDir, TestHub, Api) {
    let (root, data) = nested_data_dir();
    let hub = common::spawn_hub_in(data, common::with_model).await;
    hub.user("owner@example.org", false).await;
    let api = hub.login("owner@example.org").await;
    // One real station first: the labels and the range model load once, before anything is measured.
    let warm = tempfile::tempdir().expect("tmp");
    peers_go::legacy_station(&warm.path().join("station"), "");
    let tar = warm.path().join("warm.tar");
    tar_dir(&warm.path().join("station"), &tar);
    let answer = upload(&hub, &api, &tar, &[("kind", "birdnet-go"), ("name", "Warm")]).await;
    let job = outcome(&hub, &api, "warm-up", answer).await.expect("a real station imports");
    assert_eq!(job["status"], "done", "{job}");
    (root, hub, api)
}

/// `POST /api/imports` (a 409 of a busy team slot is tried again), its status as a number.
async fn upload(hub: &TestHub, api: &Api, file: &Path, fields: &[(&str, &str)]) -> (u16, Value) {
    let (status, body) = common::imports::upload(hub, api, file, fields).await;
    (status.as_u16(), body)
}

/// The ended job of an accepted upload, or the clear 4xx of a refused one (`None`).
async fn outcome(hub: &TestHub, api: &Api, what: &str, answer: (u16, Value)) -> Option<Value> {
    let (status, body) = answer;
    if status != 202 {
        assert_clear_4xx(what, status, &body);
        assert_no_scratch(hub, what).await;
        return None;
    }
    let id = body["id"].as_str().expect("job id").to_owned();
    for _ in 0..600 {
        let (_, job) = api.get(&format!("/imports/{id}")).await;
        if job["status"] == "done" || job["status"] == "failed" {
            assert_no_scratch(hub, what).await;
            let text = job.to_string();
            let data = hub.data_dir.display().to_string();
            assert!(!text.contains(&data) && !text.contains("unpack-"), "{what}: the job shows a hub path: {job}");
            return Some(job);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: the import never ended");
}

/// Nothing of an ended import stays: no unpacked backup, no database copy, no upload.
async fn assert_no_scratch(hub: &TestHub, what: &str) {
    let left = |dir: &str| std::fs::read_dir(hub.data_dir.join(dir)).map(Iterator::count).unwrap_or(0);
    for _ in 0..100 {
        if left("imports/scratch") + left("imports/uploads") == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what}: scratch {} and uploads {} left", left("imports/scratch"), left("imports/uploads"));
}

/// No stored object holds any of `needles`.
fn assert_objects_hold_none(hub: &TestHub, what: &str, needles: &[&[u8]]) {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if e.path().is_dir() { walk(&e.path(), out) } else { out.push(e.path()) }
        }
    }
    let mut files = Vec::new();
    walk(&hub.data_dir.join("objects"), &mut files);
    for f in files {
        let bytes = std::fs::read(&f).expect("object");
        for n in needles.iter().filter(|n| !n.is_empty()) {
            assert!(
                !bytes.windows(n.len()).any(|w| w == *n),
                "{what}: {} holds a file it was never handed",
                f.display()
            );
        }
    }
}

/// A tar of `entries`, each path written into the header as given (`..` and `/` included), as
/// a hostile tool writes them.
/// An archive entry: its path, kind, data and link target.
type RawEntry<'a> = (&'a str, tar::EntryType, &'a [u8], &'a str);

fn raw_tar(out: &Path, entries: &[RawEntry]) {
    let mut b = tar::Builder::new(std::fs::File::create(out).expect("tar"));
    for (path, kind, data, link) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(*kind);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        if path.len() >= 100 {
            // A long (deep) path of plain names: the builder writes GNU's long-name entry.
            b.append_data(&mut h, path, *data).expect("long entry");
            continue;
        }
        h.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
        h.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
        h.set_cksum();
        b.append(&h, *data).expect("entry");
    }
    b.finish().expect("finish");
}

/// `tar -cf out -C dir .`
fn tar_dir(dir: &Path, out: &Path) {
    let ok = std::process::Command::new("tar").arg("-cf").arg(out).arg("-C").arg(dir).arg(".").status().expect("tar");
    assert!(ok.success());
}

// ---------------------------------------------------------------------------------------------
// `import-archive`: a backup tar.

pub async fn import_archive() {
    let (root, hub, api) = hub().await;
    let work = tempfile::tempdir().expect("tmp");
    let outside = absolute_target("tar");
    let station = work.path().join("station");
    peers_go::legacy_station(&station, "");
    let db = std::fs::read(station.join("birdnet.db")).expect("db");
    let deep = format!("{}/x.bin", (0..300).map(|i| format!("d{i}")).collect::<Vec<_>>().join("/"));
    let escape = format!("data/../../../{}", outside.file_name().and_then(|n| n.to_str()).expect("name"));
    let absolute = outside.to_str().expect("utf-8").to_owned();
    let file = tar::EntryType::Regular;
    let samples: Vec<(&str, Vec<RawEntry>)> = vec![
        ("dot-dot", vec![("data/birdnet.db", file, &db, ""), (escape.as_str(), file, b"out", "")]),
        ("absolute", vec![("data/birdnet.db", file, &db, ""), (absolute.as_str(), file, b"out", "")]),
        (
            "link-out",
            vec![
                ("data/birdnet.db", file, &db, ""),
                ("data/clips", tar::EntryType::Symlink, b"", "/etc"),
                ("data/hard", tar::EntryType::Link, b"", "/etc/passwd"),
            ],
        ),
        ("deep", vec![("data/birdnet.db", file, &db, ""), (deep.as_str(), file, &[7u8; 1024], "")]),
        ("cut-short", vec![("data/birdnet.db", file, &db[..db.len().min(700)], "")]),
    ];
    for (name, entries) in samples {
        let what = format!("import-archive {name}");
        let tar = work.path().join(format!("{name}.tar"));
        raw_tar(&tar, &entries);
        if name == "cut-short" {
            // A header that promises more than the file holds.
            let bytes = std::fs::read(&tar).expect("tar");
            std::fs::write(&tar, &bytes[..1024]).expect("cut");
        }
        let watch = Watch::start(&what, root.path(), &hub.data_dir);
        let answer = upload(&hub, &api, &tar, &[("kind", "birdnet-go"), ("name", name)]).await;
        if let Some(job) = outcome(&hub, &api, &what, answer).await {
            assert!(name == "link-out", "{what}: accepted: {job}");
            assert_eq!(job["clips_copied"], 0, "{what}: no clip through a link: {job}");
        }
        assert_serving(&hub, &what).await;
        watch.finish(std::slice::from_ref(&outside));
    }
    assert_objects_hold_none(&hub, "import-archive", &[b"root:x:0"]);
}

// ---------------------------------------------------------------------------------------------
// `import-database`: `birds.db` or `birdnet.db`, uploaded alone.

pub async fn import_database() {
    let (root, hub, api) = hub().await;
    let work = tempfile::tempdir().expect("tmp");
    let rows: Vec<PiRow> = (0..400)
        .map(|i| {
            PiRow::new("2024-06-01", &format!("05:{:02}:{:02}", i / 60, i % 60), "Turdus merula", "Amsel", 0.8, None)
        })
        .collect();

    // Rows made of nothing: a VIRTUAL generated column that `pragma_table_info` does not show.
    let nothing = work.path().join("nothing").join("birds.db");
    std::fs::create_dir_all(nothing.parent().expect("dir")).expect("dir");
    peers::pi_database(&nothing, PiEra::Nachtzuster2024, &rows, (52.5, 13.4));
    let c = rusqlite::Connection::open(&nothing).expect("open");
    c.execute_batch("ALTER TABLE detections ADD COLUMN pad BLOB GENERATED ALWAYS AS (zeroblob(50000000)) VIRTUAL;")
        .expect("generated column");
    drop(c);
    // Rows of megabytes: values twice the length a foreign connection may make (1 MiB).
    let heavy = work.path().join("heavy").join("birds.db");
    std::fs::create_dir_all(heavy.parent().expect("dir")).expect("dir");
    peers::pi_database(&heavy, PiEra::Nachtzuster2024, &rows[..3], (52.5, 13.4));
    let c = rusqlite::Connection::open(&heavy).expect("open");
    c.execute("UPDATE detections SET Com_Name = ?1", [&"A".repeat(2 << 20)]).expect("heavy");
    drop(c);
    // Not a database at all.
    let text = work.path().join("text").join("birds.db");
    std::fs::create_dir_all(text.parent().expect("dir")).expect("dir");
    std::fs::write(&text, b"SQLite format 3\0 and then nothing a database holds".repeat(50)).expect("text");

    for (name, file) in [("rows-of-nothing", &nothing), ("rows-of-megabytes", &heavy), ("not-a-database", &text)] {
        let what = format!("import-database {name}");
        let watch = Watch::start(&what, root.path(), &hub.data_dir);
        let answer = upload(&hub, &api, file, &[("kind", "birdnet-pi"), ("dry_run", "true")]).await;
        if let Some(job) = outcome(&hub, &api, &what, answer).await {
            assert!(job["status"] == "failed" || job["rows_added"] == 0, "{what}: read as rows: {job}");
        }
        assert_serving(&hub, &what).await;
        watch.finish(&[]);
    }

    // A WAL database on its own is copied to be read: under the data dir, never the temp dir.
    let wal = peers_go::many_notes(&work.path().join("wal"), 50, true);
    let temp_before = temp_dir_copies();
    let what = "import-database wal-alone";
    let watch = Watch::start(what, root.path(), &hub.data_dir);
    let answer = upload(&hub, &api, &wal, &[("kind", "birdnet-go"), ("name", "Wal")]).await;
    let job = outcome(&hub, &api, what, answer).await.expect("a WAL database imports");
    assert_eq!(job["status"], "done", "{job}");
    assert_eq!(temp_dir_copies(), temp_before, "{what}: a copy went to the system's temp dir");
    watch.finish(&[]);
}

/// The importer's database copies in the system's temp dir.
fn temp_dir_copies() -> usize {
    std::fs::read_dir(std::env::temp_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("birdnet-go-"))
        .count()
}

// ---------------------------------------------------------------------------------------------
// `import-config`: `config.yaml` and `birdnet.conf` inside a backup.

/// A BirdNET-Go data directory whose rows name `clips` and whose config is `yaml`.
fn go_station(dir: &Path, clips: &[&str], yaml: &str) {
    std::fs::create_dir_all(dir).expect("dir");
    let conn = rusqlite::Connection::open(dir.join("birdnet.db")).expect("db");
    conn.execute_batch(&peers_go::legacy_schema("")).expect("schema");
    let notes: Vec<_> = clips
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let time: &'static str = format!("06:0{i}:00").leak();
            let clip: &'static str = (*c).to_owned().leak();
            peers_go::note("2026-05-01", time, "Turdus merula", "Eurasian Blackbird", 0.9, clip)
        })
        .collect();
    peers_go::insert_notes(&conn, &notes);
    std::fs::write(dir.join("config.yaml"), yaml).expect("config.yaml");
}

fn export_yaml(path: &str) -> String {
    format!("main:\n  name: Hostile\nrealtime:\n  audio:\n    export:\n      enabled: true\n      path: {path}\n")
}

pub async fn import_config() {
    let (root, hub, api) = hub().await;
    let work = tempfile::tempdir().expect("tmp");
    let secrets_file = hub.data_dir.join("secrets.toml");
    if !secrets_file.exists() {
        std::fs::write(&secrets_file, "jwt_secret = \"a-secret-no-clip-may-hold\"\n").expect("secrets");
    }
    let secrets = std::fs::read(&secrets_file).expect("secrets");
    let huge_name = format!("Gar\u{1b}[31mden\u{7}{}", "x".repeat(11_890));
    let samples: Vec<(&str, Vec<&str>, String)> = vec![
        // From `<data>/imports/scratch/unpack-X`, `../../..` is the data dir.
        ("clips-at-the-data-dir", vec!["secrets.toml", "birdhub.db"], export_yaml("../../..")),
        ("clips-at-etc", vec!["passwd"], export_yaml("/etc")),
        (
            "name-and-place-off-the-earth",
            vec![""],
            format!("main:\n  name: \"{huge_name}\"\nbirdnet:\n  latitude: 1e300\n  longitude: -999\n"),
        ),
        ("a-megabyte-of-config", vec![""], format!("main:\n  name: Heavy\n{}", "# padding\n".repeat(100_000))),
    ];
    for (name, clips, yaml) in samples {
        let what = format!("import-config {name}");
        let station = work.path().join(name);
        go_station(&station, &clips, &yaml);
        let tar = work.path().join(format!("{name}.tar"));
        tar_dir(&station, &tar);
        let watch = Watch::start(&what, root.path(), &hub.data_dir);
        let answer = upload(&hub, &api, &tar, &[("kind", "birdnet-go"), ("time_zone", "UTC")]).await;
        let job = outcome(&hub, &api, &what, answer).await.expect("the station itself imports");
        assert_eq!((job["status"].as_str(), job["clips_copied"].as_u64()), (Some("done"), Some(0)), "{what}: {job}");
        let sat = job["satellite_id"].as_str().expect("satellite").to_owned();
        let (_, s) = api.get(&format!("/satellites/{sat}")).await;
        let shown = s["name"].as_str().unwrap_or_default();
        assert!(!shown.chars().any(char::is_control) && shown.chars().count() <= 100, "{what}: named {shown:?}");
        // Placed only where its rows say (issue 51, defect 13: New York), never by the hostile config.
        let rows_place = s["latitude"] == 40.7128 && s["longitude"] == -74.006;
        assert!(rows_place || (s["latitude"].is_null() && s["longitude"].is_null()), "{what}: placed at {s}");
        assert_ne!(shown, "Heavy", "{what}: an oversized config is not read");
        assert_serving(&hub, &what).await;
        watch.finish(&[]);
    }
    assert_objects_hold_none(&hub, "import-config", &[&secrets, b"root:x:0", b"SQLite format 3"]);
}

// ---------------------------------------------------------------------------------------------
// `import-clip`: the clip files a station directory holds, through `birdhub import`'s path.

pub async fn import_clip() {
    let (root, hub, _api) = hub().await;
    let owner = hub.user("cli@example.org", false).await;
    let work = tempfile::tempdir().expect("tmp");
    let secret = hub.data_dir.join("secrets.toml");
    if !secret.exists() {
        std::fs::write(&secret, "jwt_secret = \"a-secret-no-clip-may-hold\"\n").expect("secrets");
    }
    let state = hub.state();
    let run = |dir: PathBuf, name: &'static str| {
        let state = state.clone();
        let data = hub.data_dir.clone();
        async move {
            let req =
                ImportRequest::new(owner.tenant, PeerKind::BirdnetPi, dir, Target::New { name: Some(name.into()) });
            let id = imports::prepare(&state.store, &data, req).await.expect("prepare");
            let hub = imports::Hub {
                store: &state.store,
                objects: &state.objects,
                names: &state.names,
                range: Some(&state.range),
                data_dir: &data,
            };
            imports::run(hub, id, |_| {}).await.expect("run")
        }
    };
    // Load the labels and the range model before anything is measured.
    let warm = work.path().join("warm");
    let warm_row = PiRow::new("2023-06-01", "05:00:00", "Parus major", "Great Tit", 0.8, None);
    peers::pi_clips(&warm, &[&warm_row]);
    peers::pi_database(&warm.join("birds.db"), PiEra::Nachtzuster2024, std::slice::from_ref(&warm_row), (52.5, 13.4));
    run(warm, "Warm").await;

    let row = PiRow::new("2024-06-01", "05:10:00", "Turdus merula", "Amsel", 0.81, None);
    type Make = fn(&Path, &Path);
    let samples: [(&str, Make); 3] = [
        ("300-mb-named-like-a-clip", |clip, _| {
            let f = std::fs::File::create(clip).expect("clip");
            std::io::Write::write_all(&mut &f, b"ID3\x04\0\0\0\0\0\0").expect("head");
            f.set_len(300 << 20).expect("300 MB, sparse");
        }),
        ("text-named-like-a-clip", |clip, _| {
            std::fs::write(clip, b"not audio, only text where a clip should be\n".repeat(40)).expect("text")
        }),
        ("a-link-out-of-the-station", |clip, secret| std::os::unix::fs::symlink(secret, clip).expect("link")),
    ];
    for (name, make) in samples {
        let what = format!("import-clip {name}");
        let station = work.path().join(name);
        let clip = station.join(row.clip_path());
        std::fs::create_dir_all(clip.parent().expect("dir")).expect("dir");
        make(&clip, &secret);
        peers::pi_database(&station.join("birds.db"), PiEra::Nachtzuster2024, std::slice::from_ref(&row), (52.5, 13.4));
        let watch = Watch::start(&what, root.path(), &hub.data_dir);
        let job = run(station, name).await;
        assert_eq!((job.rows_added, job.clips_copied), (1, 0), "{what}: {job:?}");
        assert_serving(&hub, &what).await;
        watch.finish(&[]);
    }
    let secrets = std::fs::read(&secret).expect("secrets");
    assert_objects_hold_none(&hub, "import-clip", &[&secrets, b"not audio, only text"]);
}
