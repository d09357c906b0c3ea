//! `birdhub import birdnet-pi` (issue 38) against a real hub: stations of each BirdNET-Pi era,
//! built with the schemas IMPORTS.md documents and clips made with ffmpeg from the project's real
//! recording, imported by the real binary while the hub runs, and checked through the hub's API
//! and pages: counts, UTC times from the station's zone, names mapped, clips that play and draw,
//! a rerun that adds nothing, a SIGKILLed import that resumes, a dry run that writes nothing, and
//! clear errors for a path without a database or with an unknown schema.

mod common;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    time::Duration,
};

use common::{
    TestHub, TestUser,
    peers::{self, PiEra, PiRow},
    process::BIN,
};
use serde_json::Value;

/// The command line for `birdhub import birdnet-pi` on the hub's data dir.
fn import_cmd(hub: &TestHub, path: &Path, args: &[&str]) -> Command {
    let model = birdhub::inference::ModelDir::locate("").expect("model (run models/fetch.sh)");
    let config = hub.data_dir.join("empty.toml");
    std::fs::write(&config, "").expect("config");
    let mut cmd = Command::new(BIN);
    cmd.args(["import", "birdnet-pi"])
        .arg(path)
        .arg("--config")
        .arg(&config)
        .arg("--data-dir")
        .arg(&hub.data_dir)
        .args(args)
        .env("BIRDHUB_INFERENCE__MODEL_DIR", &model.path)
        .env("BIRDHUB_LOG_LEVEL", "warn");
    cmd
}

fn import(hub: &TestHub, path: &Path, args: &[&str]) -> (bool, String, String) {
    let out: Output = import_cmd(hub, path, args).output().expect("run birdhub import");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

fn count(hub: &TestHub, sql: &str) -> i64 {
    hub.sql(|c| c.query_row(sql, [], |r| r.get(0)).expect("count"))
}

async fn detections(api: &common::Api, satellite: &str) -> Vec<Value> {
    let (status, body) = api.get(&format!("/detections?satelliteId={satellite}&limit=500")).await;
    assert_eq!(status, 200, "{body}");
    body["detections"].as_array().cloned().unwrap_or_default()
}

fn find<'a>(list: &'a [Value], sci: &str, at: &str) -> &'a Value {
    list.iter()
        .find(|d| d["scientific_name"] == sci && d["detected_at"] == at)
        .unwrap_or_else(|| panic!("no {sci} at {at} in {list:#?}"))
}

/// The only satellite of the user's team.
fn satellite_of(hub: &TestHub, user: &TestUser) -> (String, String) {
    hub.sql(|c| {
        c.query_row(
            "SELECT id, name FROM satellites WHERE tenant_id = ?1 AND deleted_at IS NULL",
            [user.tenant.to_string()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("one satellite")
    })
}

/// A mcguirepr89-era station (New York): rows sharing a recording's start second, a file two
/// rows share, a missing clip, a garbage clip, a corrupt row, a name the model lacks, a
/// re-identified row and a time in the spring-forward gap.
fn mcguirepr89_station(dir: &Path) -> Vec<PiRow> {
    let rows = vec![
        PiRow::new("2023-05-01", "06:12:03", "Accipiter cooperii", "Coopers Hawk", 0.87, None),
        PiRow::new("2023-05-01", "06:12:03", "Turdus migratorius", "American Robin", 0.9123, None),
        // Another 3 s chunk of the same recording, same species and percent: the same file.
        PiRow::new("2023-05-01", "06:12:03", "Turdus migratorius", "American Robin", 0.9087, None),
        PiRow::new("2023-05-02", "07:00:00", "Cardinalis cardinalis", "Northern Cardinal", 0.8, None),
        PiRow::new("2023-05-02", "08:00:00", "Baeolophus bicolor", "Tufted Titmouse", 0.75, None),
        PiRow::new("2023-05-03", "09:30:00", "Avis imaginaria", "Dream Bird", 0.9, None),
        PiRow::new("2023-05-04", "05:45:15", "Zenaida macroura", "Mourning Dove", 0.0, None),
        PiRow::new("2023-03-12", "02:30:00", "Poecile atricapillus", "Black-capped Chickadee", 0.8, None),
    ];
    let extracted = dir.join("BirdSongs/Extracted");
    peers::pi_clips(&extracted, &[&rows[0], &rows[1], &rows[6]]);
    peers::garbage_clip(&extracted, &rows[4]);
    let scripts = dir.join("BirdNET-Pi/scripts");
    std::fs::create_dir_all(&scripts).expect("mkdir");
    peers::pi_database(&scripts.join("birds.db"), PiEra::Mcguirepr89, &rows, (40.7128, -74.006));
    peers::pi_corrupt_row(&scripts.join("birds.db"), "2023-13-45");
    peers::birdnet_conf(&dir.join("BirdNET-Pi/birdnet.conf"), "Garden Pi", (40.7128, -74.006));
    rows
}

#[tokio::test]
async fn a_mcguirepr89_station_comes_over_with_its_clips_and_a_rerun_adds_nothing() {
    let hub = common::spawn_hub().await;
    let user = hub.user("pi@birdhub.test", false).await;
    let api = hub.login("pi@birdhub.test").await;
    let station = tempfile::tempdir().expect("dir");
    let rows = mcguirepr89_station(station.path());

    let (ok, out, err) = import(&hub, station.path(), &["--zone", "America/New_York"]);
    assert!(ok, "import failed: {out}\n{err}");
    for line in [
        "added: 7",
        "corrupt rows: 1",
        "unmapped names: 1 rows",
        "  Avis imaginaria (1)",
        // The text file where the titmouse's clip should be is not audio: not copied (issue 48).
        "clips copied: 3",
        "missing clips: 3",
        ": not audio (not copied)",
        "undecodable clips (kept, no spectrogram): 0",
        "times read in: America/New_York",
    ] {
        assert!(out.contains(line), "{line:?} missing from the summary:\n{out}");
    }
    assert!(err.contains("rows 9/9 (100 %)"), "progress on stderr: {err}");

    let (sat, name) = satellite_of(&hub, &user);
    assert_eq!(name, "Garden Pi", "named after the station's SITE_NAME");
    let list = detections(&api, &sat).await;
    assert_eq!(list.len(), 7);
    // New York is UTC-4 in May; the chickadee's 02:30 did not exist on 2023-03-12 (the clock
    // jumped to 03:00): read as 03:30 EDT.
    let hawk = find(&list, "Accipiter cooperii", "2023-05-01T10:12:03.000Z");
    assert_eq!(hawk["common_name"], "Cooper's Hawk", "the hub's own name, not the stripped one");
    find(&list, "Poecile atricapillus", "2023-03-12T07:30:00.000Z");
    let dove = find(&list, "Zenaida macroura", "2023-05-04T09:45:15.000Z");
    assert_eq!(dove["verification_status"], "confirmed", "a re-identified row was checked by a person");
    assert_eq!(hawk["verification_status"], "unverified");
    let robins: Vec<&Value> = list.iter().filter(|d| d["scientific_name"] == "Turdus migratorius").collect();
    assert_eq!(robins.len(), 2, "two rows of one recording second are two detections");
    assert_eq!(robins.iter().filter(|d| d["is_first_for_team"] == true).count(), 1);

    // The clip plays with its own type and bytes, and draws.
    let source = std::fs::read(station.path().join("BirdSongs/Extracted").join(rows[0].clip_path())).expect("clip");
    let audio = api.client.get(hub.api(&format!("/audio/{}", hawk["audio_chunk_id"].as_str().expect("chunk")))).send();
    let audio = audio.await.expect("GET audio");
    assert_eq!(audio.status(), 200);
    assert_eq!(audio.headers()["content-type"], "audio/mpeg");
    assert_eq!(audio.bytes().await.expect("bytes").as_ref(), source.as_slice(), "the very bytes of the station's clip");
    let png = api.client.get(hub.api(&format!("/detections/{}/spectrogram.png", hawk["id"].as_str().expect("id"))));
    let png = png.send().await.expect("GET spectrogram");
    assert_eq!(png.status(), 200);
    assert_eq!(png.headers()["content-type"], "image/png");

    // The garbage clip is not audio: never stored nor served, the detection has no audio (issue 48;
    // it used to be kept and served as bytes).
    let titmouse = find(&list, "Baeolophus bicolor", "2023-05-02T12:00:00.000Z");
    let got = api.get(&format!("/audio/{}", titmouse["audio_chunk_id"].as_str().expect("chunk"))).await;
    common::assert_error(&got, 410, "no_audio");
    // The missing clip: the detection is there, its audio a clear 410.
    let cardinal = find(&list, "Cardinalis cardinalis", "2023-05-02T11:00:00.000Z");
    let got = api.get(&format!("/audio/{}", cardinal["audio_chunk_id"].as_str().expect("chunk"))).await;
    common::assert_error(&got, 410, "no_audio");
    assert_eq!(count(&hub, "SELECT count(*) FROM inference_jobs"), 0, "imported chunks are not classified again");
    assert_eq!(count(&hub, "SELECT count(*) FROM alerts"), 0, "imported history raises no alert");

    // The dashboard shows the history.
    let page = api.client.get(format!("{}/detections?satelliteId={sat}", hub.base_url)).send().await.expect("page");
    assert_eq!(page.status(), 200);
    let html = page.text().await.expect("html");
    assert!(html.contains("Cooper&#39;s Hawk") || html.contains("Cooper's Hawk"), "the page lists the hawk");
    assert!(html.contains("Garden Pi"));

    // A rerun adds nothing, and goes into the same satellite.
    let (ok, out, err) = import(&hub, station.path(), &["--zone", "America/New_York"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("added: 0") && out.contains("duplicates (already imported): 7"), "{out}");
    assert_eq!(detections(&api, &sat).await.len(), 7);
    assert_eq!(count(&hub, "SELECT count(*) FROM satellites"), 1);
}

/// A Nachtzuster 2024 station (ISO weeks, apostrophes kept, some names in German) restored from
/// its backup tar, in Berlin.
#[tokio::test]
async fn a_nachtzuster_backup_tar_with_german_names_is_unpacked_and_imported() {
    let hub = common::spawn_hub().await;
    let user = hub.user("tar@birdhub.test", false).await;
    let api = hub.login("tar@birdhub.test").await;
    let station = tempfile::tempdir().expect("dir");
    let rows = vec![
        PiRow::new("2024-06-01", "05:10:00", "Erithacus rubecula", "Rotkehlchen", 0.93, None),
        PiRow::new("2024-06-01", "05:10:00", "Turdus merula", "Amsel", 0.81, None),
        PiRow::new("2024-03-02", "07:00:00", "Accipiter cooperii", "Cooper's Hawk", 0.77, None),
    ];
    peers::pi_clips(station.path(), &[&rows[0], &rows[1]]);
    peers::pi_database(&station.path().join("birds.db"), PiEra::Nachtzuster2024, &rows, (52.52, 13.405));
    peers::birdnet_conf(&station.path().join("birdnet.conf"), "Balkon", (52.52, 13.405));
    let backup = station.path().join("backup.tar");
    peers::pi_backup(station.path(), &backup);

    let (ok, out, err) = import(&hub, &backup, &["--zone", "Europe/Berlin"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("added: 3") && out.contains("clips copied: 2") && out.contains("missing clips: 1"), "{out}");
    let (sat, name) = satellite_of(&hub, &user);
    assert_eq!(name, "Balkon");
    let place: (Option<f64>, Option<f64>) = hub
        .sql(|c| c.query_row("SELECT latitude, longitude FROM satellites", [], |r| Ok((r.get(0)?, r.get(1)?))))
        .expect("place");
    assert_eq!(place, (Some(52.52), Some(13.405)), "placed where the station was");
    let list = detections(&api, &sat).await;
    let robin = find(&list, "Erithacus rubecula", "2024-06-01T03:10:00.000Z");
    assert_eq!(robin["common_name"], "European Robin", "a German row maps by its scientific name");
    find(&list, "Accipiter cooperii", "2024-03-02T06:00:00.000Z");
    let audio = api.client.get(hub.api(&format!("/audio/{}", robin["audio_chunk_id"].as_str().expect("chunk"))));
    let audio = audio.send().await.expect("GET");
    assert_eq!(audio.status(), 200);
    assert_eq!(audio.bytes().await.expect("bytes").as_ref(), peers::mp3_clip());
    // Backups unpack under `<data>/imports/scratch/` (issue 48): nothing of this one stays.
    let scratch = hub.data_dir.join("imports/scratch");
    let left: Vec<_> = std::fs::read_dir(&scratch).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(left.is_empty(), "the unpacked backup is removed: {left:?}");
    let beside: Vec<_> = std::fs::read_dir(hub.data_dir.join("imports"))
        .map(|d| d.flatten().filter(|e| e.file_name() != "scratch").collect())
        .unwrap_or_default();
    assert!(beside.is_empty(), "nothing is unpacked beside the scratch directory: {beside:?}");
}

/// A Nachtzuster station of late 2024 (detection times, RTSP stream ids in the file names), big
/// enough to be killed mid-way, imported into a satellite that already exists.
fn late_station(dir: &Path, n: usize) -> PathBuf {
    let species = [
        ("Turdus migratorius", "American Robin"),
        ("Cardinalis cardinalis", "Northern Cardinal"),
        ("Zenaida macroura", "Mourning Dove"),
    ];
    let start = chrono::NaiveDate::from_ymd_opt(2024, 11, 28).expect("date").and_hms_opt(5, 0, 0).expect("time");
    let rows: Vec<PiRow> = (0..n)
        .map(|i| {
            let at = start + chrono::Duration::seconds(i as i64 * 37);
            let (sci, com) = species[i % species.len()];
            let date = at.format("%Y-%m-%d").to_string();
            let time = at.format("%H:%M:%S").to_string();
            PiRow::new(&date, &time, sci, com, 0.7 + (i % 30) as f64 / 100.0, Some((i % 2) as u8 + 1))
        })
        .collect();
    peers::pi_clips(dir, &rows.iter().take(3).collect::<Vec<_>>());
    let db = dir.join("birds.db");
    peers::pi_database(&db, PiEra::NachtzusterLate, &rows, (40.7128, -74.006));
    db
}

#[tokio::test]
async fn an_import_killed_mid_way_resumes_to_the_same_totals() {
    let hub = common::spawn_hub().await;
    let user = hub.user("kill@birdhub.test", false).await;
    let api = hub.login("kill@birdhub.test").await;
    let sat = hub
        .state()
        .store
        .call(move |c| {
            birdhub::store::satellites::insert(
                c,
                &birdhub::store::satellites::NewSatellite {
                    tenant_id: user.tenant,
                    name: "Feeder",
                    device_id: None,
                    kind: birdhub::domain::DeviceKind::Satellite,
                    registered_by: None,
                    mqtt_password_hash: "x",
                    latitude: None,
                    longitude: None,
                },
            )
        })
        .await
        .expect("satellite")
        .to_string();
    let station = tempfile::tempdir().expect("dir");
    let n = 12_000;
    let db = late_station(station.path(), n);

    let args = ["--satellite", sat.as_str(), "--zone", "America/New_York"];
    let mut child = import_cmd(&hub, &db, &args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn");
    // Kill it once it has committed some rows and before it is done.
    for _ in 0..2_000 {
        if count(&hub, "SELECT count(*) FROM detections") > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Command::new("kill").args(["-KILL", &child.id().to_string()]).status().expect("kill");
    child.wait().expect("reap");
    let killed_at = count(&hub, "SELECT count(*) FROM detections");
    assert!(killed_at > 0 && killed_at < n as i64, "killed mid-way ({killed_at} of {n} rows)");
    let status: String = hub.sql(|c| c.query_row("SELECT status FROM imports", [], |r| r.get(0))).expect("job");
    assert_eq!(status, "running", "the job row shows the interrupted run");

    let (ok, out, err) = import(&hub, &db, &args);
    assert!(ok, "{out}\n{err}");
    assert_eq!(count(&hub, "SELECT count(*) FROM detections"), n as i64, "every row once");
    assert_eq!(count(&hub, "SELECT count(*) FROM imports"), 1, "the rerun resumed the same job");
    let (added, read): (i64, i64) = hub
        .sql(|c| c.query_row("SELECT rows_added, rows_read FROM imports", [], |r| Ok((r.get(0)?, r.get(1)?))))
        .expect("job");
    assert_eq!((added, read), (n as i64, n as i64), "the totals of one clean run");
    let (status, body) = api.get(&format!("/detections?satelliteId={sat}&limit=1&withCount=true")).await;
    assert_eq!(status, 200);
    assert_eq!(body["total"], n as i64);
    assert_eq!(count(&hub, "SELECT count(*) FROM satellites"), 1, "into the existing satellite");
}

#[tokio::test]
async fn a_dry_run_prints_the_summary_and_writes_nothing() {
    let hub = common::spawn_hub().await;
    hub.user("dry@birdhub.test", false).await;
    let station = tempfile::tempdir().expect("dir");
    mcguirepr89_station(station.path());
    let (ok, out, err) = import(&hub, station.path(), &["--zone", "America/New_York", "--dry-run"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("dry run: nothing was written"), "{out}");
    assert!(out.contains("would add: 7") && out.contains("clips that would be copied: 3"), "{out}");
    assert!(out.contains("  Avis imaginaria (1)"), "{out}");
    assert_eq!(count(&hub, "SELECT count(*) FROM detections"), 0);
    assert_eq!(count(&hub, "SELECT count(*) FROM satellites"), 0);
    assert_eq!(count(&hub, "SELECT count(*) FROM audio_chunks"), 0);
}

#[tokio::test]
async fn a_path_without_a_database_or_with_an_unknown_schema_is_a_clear_error_and_writes_nothing() {
    let hub = common::spawn_hub().await;
    hub.user("err@birdhub.test", false).await;
    let empty = tempfile::tempdir().expect("dir");
    std::fs::write(empty.path().join("notes.txt"), "hello").expect("file");
    std::fs::create_dir(empty.path().join("photos")).expect("dir");
    let (ok, out, err) = import(&hub, empty.path(), &[]);
    assert!(!ok, "{out}");
    assert!(err.contains("no birds.db") && err.contains("found notes.txt, photos/"), "{err}");

    let other = empty.path().join("other.db");
    let c = rusqlite::Connection::open(&other).expect("db");
    c.execute_batch("CREATE TABLE birds (name TEXT, seen_at TEXT);").expect("schema");
    drop(c);
    let (ok, _, err) = import(&hub, &other, &[]);
    assert!(!ok);
    assert!(
        err.contains("unknown schema") && err.contains("expected a detections table with columns Date, Time"),
        "{err}"
    );
    assert!(err.contains("found tables birds (name, seen_at)"), "{err}");

    let (ok, _, err) = import(&hub, &other, &["--zone", "Mars/Olympus"]);
    assert!(!ok);
    assert!(err.contains("\"Mars/Olympus\" is not a time zone name the hub knows"), "{err}");
    for table in ["imports", "satellites", "detections", "audio_chunks"] {
        assert_eq!(count(&hub, &format!("SELECT count(*) FROM {table}")), 0, "{table}");
    }
}
