//! Importing BirdNET-Go stations (issue 38) through the real `birdhub import birdnet-go` and
//! `POST /api/imports`, checked through a real hub's API and pages: the legacy `notes` schema
//! (and its early-2025 extra columns), the v2 schema after a legacy import of the same station,
//! a WAL file whose `-wal` holds rows, an interrupted import, a BirdNET-Pi file given as
//! BirdNET-Go, and the upload API's roles and refusals. Fixtures: `common/peers_go.rs`.

mod common;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    time::Duration,
};

use birdhub::domain::Role;
use chrono::{DateTime, Utc};
use common::{TestHub, api::Api, peers_go, process::BIN};
use reqwest::StatusCode;
use serde_json::Value;

async fn hub() -> TestHub {
    common::spawn_hub_with(common::with_model).await
}

fn model_dir() -> PathBuf {
    birdhub::inference::ModelDir::locate("").expect("model (run models/fetch.sh)").path
}

/// `birdhub import birdnet-go <source> <args>` on the hub's data dir (the hub keeps running).
fn import_cmd(hub: &TestHub, source: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("--data-dir")
        .arg(&hub.data_dir)
        .args(["import", "birdnet-go"])
        .arg(source)
        .args(args)
        .env("BIRDHUB_INFERENCE__MODEL_DIR", model_dir())
        .env("BIRDHUB_LOG_LEVEL", "warn");
    cmd
}

fn import(hub: &TestHub, source: &Path, args: &[&str]) -> Output {
    import_cmd(hub, source, args).output().expect("run birdhub import")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A summary line's count: `added: 4` → 4.
fn figure(summary: &str, label: &str) -> u64 {
    let line = summary.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("no {label:?} in:\n{summary}"));
    let digits: String = line[label.len()..].chars().filter(char::is_ascii_digit).collect();
    digits.parse().unwrap_or_else(|_| panic!("no number in {line:?}"))
}

/// The satellite the summary names (`satellite: Garden Go (<id>)`).
fn satellite_of(summary: &str) -> String {
    let line = summary.lines().find(|l| l.starts_with("satellite: ")).expect("satellite line");
    line.rsplit('(').next().expect("id").trim_end_matches(')').to_owned()
}

async fn detections(api: &Api, sat: &str) -> Vec<Value> {
    let (status, body) = api.get(&format!("/detections?satelliteId={sat}&limit=100&sortBy=date&sortDir=asc")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["detections"].as_array().expect("detections").clone()
}

fn by_name<'a>(rows: &'a [Value], scientific: &str) -> &'a Value {
    rows.iter().find(|d| d["scientific_name"] == scientific).unwrap_or_else(|| panic!("no {scientific} in {rows:?}"))
}

fn at(d: &Value) -> DateTime<Utc> {
    d["detected_at"].as_str().expect("detected_at").parse().expect("RFC 3339")
}

fn utc(s: &str) -> DateTime<Utc> {
    s.parse().expect("time")
}

async fn comments(api: &Api, d: &Value) -> Vec<String> {
    let (status, body) = api.get(&format!("/detections/{}/comments", d["id"].as_str().expect("id"))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let list = body.as_array().cloned().or_else(|| body["comments"].as_array().cloned()).expect("comments");
    list.iter().map(|c| c["body"].as_str().expect("body").to_owned()).collect()
}

/// The clip of `d` as `/api/audio/{chunk}` serves it: content type and bytes.
async fn audio(api: &Api, hub: &TestHub, d: &Value) -> (StatusCode, String, Vec<u8>) {
    let chunk = d["audio_chunk_id"].as_str().expect("chunk");
    let resp = api.client.get(hub.api(&format!("/audio/{chunk}"))).send().await.expect("audio");
    let status = resp.status();
    let ct = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    (status, ct, resp.bytes().await.expect("bytes").to_vec())
}

async fn page(hub: &TestHub, api: &Api, path: &str) -> String {
    let resp = api.client.get(format!("{}{path}", hub.base_url)).send().await.expect("page");
    assert_eq!(resp.status(), StatusCode::OK, "{path}");
    resp.text().await.expect("html")
}

#[tokio::test]
async fn a_legacy_station_comes_over_with_times_names_reviews_comments_and_clips() {
    let hub = hub().await;
    hub.user("owner@example.org", false).await;
    let api = hub.login("owner@example.org").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let station = tmp.path().join("birdnet-go-app/data");
    peers_go::legacy_station(&station, "");

    let out = import(&hub, &station, &["--name", "Garden Go", "--zone", "America/New_York"]);
    let summary = text(&out.stdout);
    assert!(out.status.success(), "{summary}\n{}", text(&out.stderr));
    assert_eq!(figure(&summary, "added:"), 4, "{summary}");
    assert_eq!(figure(&summary, "corrupt rows:"), 1, "{summary}");
    assert_eq!(figure(&summary, "missing clips:"), 1, "{summary}");
    assert!(summary.contains("Avis inventa (1)"), "the unmapped name is reported: {summary}");
    assert!(summary.contains(peers_go::CLIP_GONE), "the missing clip is listed: {summary}");
    let sat = satellite_of(&summary);

    let rows = detections(&api, &sat).await;
    assert_eq!(rows.len(), 4);
    let blackbird = by_name(&rows, "Turdus merula");
    // 06:12:03 on the station's New York wall clock (EDT, UTC-4).
    assert_eq!(at(blackbird), utc("2024-05-01T10:12:03Z"));
    assert_eq!(blackbird["species_code"], "turdus_merula", "mapped to the model's label");
    assert_eq!(blackbird["common_name"], "Eurasian Blackbird");
    assert_eq!(blackbird["satellite_name"], "Garden Go");
    assert_eq!(blackbird["verification_status"], "confirmed", "reviewed correct");
    assert_eq!(comments(&api, blackbird).await, ["Singing from the chimney", "Same bird as yesterday"]);
    let tit = by_name(&rows, "Parus major");
    assert_eq!(at(tit), utc("2026-05-01T11:00:00Z"));
    assert_eq!(tit["verification_status"], "rejected", "reviewed false positive");
    let chaffinch = by_name(&rows, "Fringilla coelebs");
    assert_eq!(chaffinch["verification_status"], "confirmed", "a locked note is kept like a verified one");
    let robin = by_name(&rows, "Erithacus rubecula");
    assert!(!["confirmed", "rejected"].contains(&robin["verification_status"].as_str().unwrap_or_default()));

    // The old-style `clips/2024/05/…` name and the current `2026/05/…` one both play, byte for byte.
    for (d, file) in [
        (blackbird, station.join(peers_go::CLIP_OLD_STYLE)),
        (tit, station.join("clips").join(peers_go::CLIP_NEW_STYLE)),
    ] {
        let (status, ct, bytes) = audio(&api, &hub, d).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(ct, "audio/wav");
        assert_eq!(bytes, std::fs::read(&file).expect("source clip"), "the clip as the station kept it");
    }
    let spectrogram = api
        .client
        .get(hub.api(&format!("/detections/{}/spectrogram.png", blackbird["id"].as_str().expect("id"))))
        .send()
        .await
        .expect("spectrogram");
    assert_eq!(spectrogram.status(), StatusCode::OK);
    let (status, _, _) = audio(&api, &hub, robin).await;
    assert!(status.is_client_error(), "a purged clip has no audio: {status}");

    // A rerun adds nothing twice.
    let again = import(&hub, &station, &["--name", "Garden Go", "--zone", "America/New_York"]);
    let summary = text(&again.stdout);
    assert!(again.status.success(), "{summary}\n{}", text(&again.stderr));
    assert_eq!(figure(&summary, "added:"), 0, "{summary}");
    assert_eq!(satellite_of(&summary), sat, "the rerun goes into the same satellite");
    assert_eq!(detections(&api, &sat).await.len(), 4);

    // The dashboard's satellite page shows the imported history.
    let html = page(&hub, &api, &format!("/satellites/{sat}")).await;
    assert!(html.contains("Garden Go"), "the satellite page names it");
    assert!(html.contains("history-total\">4<"), "its history counts the imported detections");
    assert!(html.contains("Common Chaffinch"), "and shows its imported species");
}

#[tokio::test]
async fn early_2025_columns_and_rows_still_in_the_wal_are_read_without_touching_the_copy() {
    let hub = hub().await;
    hub.user("owner@example.org", false).await;
    let api = hub.login("owner@example.org").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let live = tmp.path().join("live");
    let db = peers_go::legacy_station(&live, ",`verified` text,`comment` text");
    // The station keeps writing in WAL mode: a row with the early-2025 columns, not checkpointed.
    let writer = rusqlite::Connection::open(&db).expect("writer");
    writer.pragma_update(None, "journal_mode", "wal").expect("wal");
    writer.pragma_update(None, "wal_autocheckpoint", 0).expect("no checkpoint");
    writer
        .execute(
            "INSERT INTO notes (source_node, date, time, scientific_name, common_name, confidence, threshold,
               sensitivity, clip_name, verified, comment)
             VALUES ('garden-go', '2025-01-25', '08:15:00', 'Sitta europaea', 'Eurasian Nuthatch', 0.88, 0.8, 1.0,
               '', 'correct', 'Verified on the old station')",
            [],
        )
        .expect("wal row");
    // A person copies the database with its -wal and -shm while the station runs.
    let copy = tmp.path().join("copy");
    std::fs::create_dir_all(&copy).expect("copy dir");
    for suffix in ["", "-wal", "-shm"] {
        std::fs::copy(live.join(format!("birdnet.db{suffix}")), copy.join(format!("birdnet.db{suffix}")))
            .expect("copy");
    }
    drop(writer);
    let before: Vec<(String, Vec<u8>)> = std::fs::read_dir(&copy)
        .expect("ls")
        .map(|e| {
            let e = e.expect("entry");
            (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).expect("read"))
        })
        .collect();
    assert!(before.iter().any(|(n, b)| n == "birdnet.db-wal" && !b.is_empty()), "the -wal holds the new row");

    let out = import(&hub, &copy.join("birdnet.db"), &["--name", "Copied", "--zone", "Europe/Berlin"]);
    let summary = text(&out.stdout);
    assert!(out.status.success(), "{summary}\n{}", text(&out.stderr));
    assert_eq!(figure(&summary, "added:"), 5, "{summary}");
    let rows = detections(&api, &satellite_of(&summary)).await;
    let nuthatch = by_name(&rows, "Sitta europaea");
    assert_eq!(at(nuthatch), utc("2025-01-25T07:15:00Z"), "08:15 in Berlin (CET)");
    assert_eq!(nuthatch["verification_status"], "confirmed", "the notes.verified column of early 2025");
    assert_eq!(comments(&api, nuthatch).await, ["Verified on the old station"]);

    let mut after: Vec<(String, Vec<u8>)> = std::fs::read_dir(&copy)
        .expect("ls")
        .map(|e| {
            let e = e.expect("entry");
            (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).expect("read"))
        })
        .collect();
    let mut before = before;
    before.sort();
    after.sort();
    assert!(before == after, "the source files are neither written nor joined by new ones");
}

#[tokio::test]
async fn the_v2_file_after_a_legacy_import_adds_only_new_rows_and_v2_times_are_absolute() {
    let hub = hub().await;
    hub.user("owner@example.org", false).await;
    let api = hub.login("owner@example.org").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let legacy = tmp.path().join("before");
    peers_go::legacy_station(&legacy, "");
    let out = import(&hub, &legacy, &["--name", "Garden Go", "--zone", "America/New_York"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sat = satellite_of(&text(&out.stdout));

    // The same station later, migrated to v2 (rows keep their legacy_id) with one new row.
    let v2 = tmp.path().join("after");
    peers_go::v2_station(&v2);
    let out = import(&hub, &v2, &["--satellite", &sat]);
    let summary = text(&out.stdout);
    assert!(out.status.success(), "{summary}\n{}", text(&out.stderr));
    assert_eq!(figure(&summary, "added:"), 1, "only the row written since: {summary}");
    let rows = detections(&api, &sat).await;
    assert_eq!(rows.len(), 5, "nothing twice");
    let starling = by_name(&rows, "Sturnus vulgaris");
    assert_eq!(at(starling), utc("2026-06-01T09:00:00Z"));
    assert_eq!(starling["common_name"], "European Starling", "v2 stores no common names: the hub's appear");
    assert_eq!(starling["verification_status"], "confirmed");
    assert_eq!(comments(&api, starling).await, ["First starling this year"]);
    let (status, ct, bytes) = audio(&api, &hub, starling).await;
    assert_eq!((status, ct.as_str()), (StatusCode::OK, "audio/wav"));
    assert_eq!(bytes, std::fs::read(v2.join("clips").join(peers_go::CLIP_V2_ONLY)).expect("clip"));

    // v2 alone (another copy of the file), into a new satellite: detected_at is an instant,
    // whatever zone is given.
    let v2_alone = tmp.path().join("elsewhere");
    peers_go::v2_station(&v2_alone);
    let out = import(&hub, &v2_alone, &["--name", "Garden v2", "--zone", "Asia/Tokyo"]);
    let summary = text(&out.stdout);
    assert!(out.status.success(), "{summary}\n{}", text(&out.stderr));
    assert_eq!(figure(&summary, "added:"), 5, "{summary}");
    let rows = detections(&api, &satellite_of(&summary)).await;
    assert_eq!(at(by_name(&rows, "Turdus merula")), utc("2024-05-01T10:12:03Z"));
    assert_eq!(by_name(&rows, "Parus major")["verification_status"], "rejected");
    assert_eq!(by_name(&rows, "Fringilla coelebs")["verification_status"], "confirmed", "locked");
}

/// Rows of a big legacy station (one species a minute from 2025-03-01, a clip every 50th row).
fn big_station(dir: &Path, rows: usize) -> PathBuf {
    std::fs::create_dir_all(dir.join("clips/2025/03")).expect("dir");
    let db = dir.join("birdnet.db");
    let mut conn = rusqlite::Connection::open(&db).expect("db");
    conn.execute_batch(&peers_go::legacy_schema("")).expect("schema");
    let species = [
        ("Turdus merula", "Eurasian Blackbird"),
        ("Parus major", "Great Tit"),
        ("Erithacus rubecula", "European Robin"),
    ];
    let sample = dir.join("clips/2025/03/sample.wav");
    peers_go::clip(&sample, 0.0, 1.0);
    let tx = conn.transaction().expect("tx");
    let start = chrono::NaiveDate::from_ymd_opt(2025, 3, 1).and_then(|d| d.and_hms_opt(0, 0, 0)).expect("start");
    for i in 0..rows {
        let t = start + chrono::Duration::minutes(i as i64);
        let (sci, com) = species[i % species.len()];
        let clip = if i % 50 == 0 {
            let name = format!("2025/03/{}_{i}.wav", sci.to_lowercase().replace(' ', "_"));
            std::fs::hard_link(&sample, dir.join("clips").join(&name)).expect("clip");
            name
        } else {
            String::new()
        };
        tx.execute(
            "INSERT INTO notes (source_node, date, time, scientific_name, common_name, confidence, threshold, sensitivity, clip_name)
             VALUES ('big', ?1, ?2, ?3, ?4, 0.8, 0.8, 1.0, ?5)",
            rusqlite::params![t.format("%Y-%m-%d").to_string(), t.format("%H:%M:%S").to_string(), sci, com, clip],
        )
        .expect("row");
    }
    tx.commit().expect("commit");
    db
}

#[tokio::test]
async fn an_interrupted_import_resumes_to_the_same_totals() {
    const ROWS: usize = 12_000;
    let hub = hub().await;
    hub.user("owner@example.org", false).await;
    let api = hub.login("owner@example.org").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let station = tmp.path().join("big");
    big_station(&station, ROWS);

    let mut child = import_cmd(&hub, &station, &["--name", "Big", "--zone", "UTC"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn import");
    // Killed once some batches are in, well before the end.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let added: Option<i64> =
            hub.sql(|c| c.query_row("SELECT rows_added FROM imports WHERE status = 'running'", [], |r| r.get(0)).ok());
        if added.is_some_and(|n| n > 0) {
            break;
        }
        assert!(child.try_wait().expect("wait").is_none(), "the import ended before it could be interrupted");
        assert!(std::time::Instant::now() < deadline, "the import never got going");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Command::new("kill").args(["-KILL", &child.id().to_string()]).status().expect("kill");
    child.wait().expect("reap");
    let (partial, status): (i64, String) = hub.sql(|c| {
        c.query_row("SELECT rows_added, status FROM imports", [], |r| Ok((r.get(0)?, r.get(1)?))).expect("job")
    });
    assert!(partial > 0 && (partial as usize) < ROWS, "interrupted part-way: {partial}");
    assert_eq!(status, "running", "the killed job is left to be resumed");

    let out = import(&hub, &station, &["--name", "Big", "--zone", "UTC"]);
    let summary = text(&out.stdout);
    assert!(out.status.success(), "{summary}\n{}", text(&out.stderr));
    let jobs: i64 = hub.sql(|c| c.query_row("SELECT COUNT(*) FROM imports", [], |r| r.get(0)).expect("jobs"));
    assert_eq!(jobs, 1, "the rerun resumed the same job");
    let sat = satellite_of(&summary);
    let (status, body) = api.get(&format!("/detections?satelliteId={sat}&limit=1&withCount=true")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["total"], ROWS as u64, "every row once, none twice");
    let clips: i64 = hub.sql(|c| c.query_row("SELECT clips_copied FROM imports", [], |r| r.get(0)).expect("clips"));
    assert_eq!(clips as usize, ROWS / 50, "every clip once");
}

#[tokio::test]
async fn a_birdnet_pi_database_given_as_birdnet_go_is_refused_and_nothing_is_written() {
    let hub = hub().await;
    hub.user("owner@example.org", false).await;
    let tmp = tempfile::tempdir().expect("tmp");
    let pi = tmp.path().join("birdnet.db");
    let conn = rusqlite::Connection::open(&pi).expect("db");
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS detections (Date DATE, Time TIME, Sci_Name VARCHAR(100) NOT NULL,
           Com_Name VARCHAR(100) NOT NULL, Confidence FLOAT, Lat FLOAT, Lon FLOAT, Cutoff FLOAT, Week INT, Sens FLOAT,
           Overlap FLOAT, File_Name VARCHAR(100) NOT NULL);
         INSERT INTO detections VALUES ('2024-05-01', '06:12:03', 'Turdus merula', 'Eurasian Blackbird', 0.87,
           40.7, -74.0, 0.7, 18, 1.25, 0.0, 'Eurasian_Blackbird-87-2024-05-01-birdnet-06:12:03.mp3');",
    )
    .expect("pi schema");
    drop(conn);
    let out = import(&hub, &pi, &["--name", "Wrong"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("this is a BirdNET-Pi database, not a BirdNET-Go one"), "{err}");
    let (imports, sats, dets): (i64, i64, i64) = hub.sql(|c| {
        c.query_row(
            "SELECT (SELECT COUNT(*) FROM imports), (SELECT COUNT(*) FROM satellites), (SELECT COUNT(*) FROM detections)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("counts")
    });
    assert_eq!((imports, sats, dets), (0, 0, 0));

    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(empty.join("logs")).expect("dir");
    let out = import(&hub, &empty, &[]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("found logs/"), "{}", text(&out.stderr));
}

/// `POST /api/imports` with `file` and the text fields.
async fn upload(hub: &TestHub, api: &Api, file: &Path, fields: &[(&str, &str)]) -> (StatusCode, Value) {
    let bytes = std::fs::read(file).expect("file");
    let name = file.file_name().expect("name").to_string_lossy().into_owned();
    let mut form = reqwest::multipart::Form::new();
    for (k, v) in fields {
        form = form.text(k.to_string(), v.to_string());
    }
    form = form.part("file", reqwest::multipart::Part::bytes(bytes).file_name(name));
    let resp = api.client.post(hub.api("/imports")).multipart(form).send().await.expect("upload");
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

fn uploads_left(hub: &TestHub) -> usize {
    std::fs::read_dir(hub.data_dir.join("imports/uploads")).map(|d| d.count()).unwrap_or(0)
}

#[tokio::test]
async fn a_team_admin_uploads_a_data_dir_tar_and_polls_the_job_to_its_report() {
    let hub = hub().await;
    let owner = hub.user("owner@example.org", false).await;
    hub.member_of("member@example.org", owner.tenant, Role::Member).await;
    hub.user("other@example.org", false).await;
    let api = hub.login("owner@example.org").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let data = tmp.path().join("data");
    peers_go::legacy_station(&data, "");
    let tar = tmp.path().join("birdnet-go-data.tar");
    peers_go::tar_dir(&data, &tar);
    let fields = [("kind", "birdnet-go"), ("name", "Uploaded Go"), ("time_zone", "America/New_York")];

    let member = hub.login("member@example.org").await;
    let (status, _) = upload(&hub, &member, &tar, &fields).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "members may not import");
    let (status, _) = member.get("/imports").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let resp = member.client.get(format!("{}/imports", hub.base_url)).send().await.expect("page");
    assert_eq!(resp.status(), StatusCode::FORBIDDEN, "the page is for admins too");
    assert!(!page(&hub, &member, "/satellites").await.contains("href=\"/imports\""), "no link for members");
    assert!(
        page(&hub, &api, "/satellites").await.contains("href=\"/imports\""),
        "admins find the page from Satellites"
    );

    let (status, job) = upload(&hub, &api, &tar, &fields).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{job}");
    let id = job["id"].as_str().expect("id").to_owned();
    assert_eq!(job["schema"], "birdnet-go-legacy");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let done = loop {
        let (status, job) = api.get(&format!("/imports/{id}")).await;
        assert_eq!(status, StatusCode::OK, "{job}");
        if job["status"] == "done" || job["status"] == "failed" {
            break job;
        }
        assert!(std::time::Instant::now() < deadline, "the job never ended: {job}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["rows_added"], 4);
    assert_eq!(done["rows_corrupt"], 1);
    assert_eq!(done["clips_copied"], 2);
    assert_eq!(done["clips_missing"], 1);
    assert_eq!(done["unmapped"][0]["name"], "Avis inventa");
    let sat = done["satellite_id"].as_str().expect("satellite").to_owned();
    assert_eq!(at(by_name(&detections(&api, &sat).await, "Turdus merula")), utc("2024-05-01T10:12:03Z"));
    let (_, list) = api.get("/imports").await;
    assert_eq!(list[0]["id"], id.as_str());
    // The upload and what was unpacked from it are gone with the job.
    let gone = std::time::Instant::now() + Duration::from_secs(10);
    while uploads_left(&hub) > 0 {
        assert!(std::time::Instant::now() < gone, "the upload stays behind");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let other = hub.login("other@example.org").await;
    let (status, body) = other.get(&format!("/imports/{id}")).await;
    common::assert_error(&(status, body), 404, "import_not_found");

    // A file that is no database at all, and a form that names no kind.
    let junk = tmp.path().join("birdnet.db");
    std::fs::write(&junk, vec![0x42u8; 4096]).expect("junk");
    let (status, body) = upload(&hub, &api, &junk, &fields).await;
    common::assert_error(&(status, body), 422, "source_unreadable");
    let (status, body) = upload(&hub, &api, &tar, &[("name", "x")]).await;
    common::assert_error(&(status, body), 422, "invalid_import");
    let (status, body) = upload(&hub, &api, &tar, &[("kind", "birdnet-go"), ("time_zone", "Mars/Olympus")]).await;
    common::assert_error(&(status, body), 422, "invalid_time_zone");
    assert_eq!(uploads_left(&hub), 0, "refused uploads are removed at once");
}

#[tokio::test]
async fn one_import_runs_per_team_at_a_time() {
    let hub = hub().await;
    hub.user("owner@example.org", false).await;
    let api = hub.login("owner@example.org").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let big = big_station(&tmp.path().join("big"), 12_000);
    let small = tmp.path().join("small");
    peers_go::legacy_station(&small, "");

    let (status, first) = upload(&hub, &api, &big, &[("kind", "birdnet-go"), ("name", "Big")]).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{first}");
    let (status, body) = upload(&hub, &api, &small.join("birdnet.db"), &[("kind", "birdnet-go")]).await;
    common::assert_error(&(status, body), 409, "import_running");
    let id = first["id"].as_str().expect("id");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let (_, job) = api.get(&format!("/imports/{id}")).await;
        if job["status"] == "done" {
            break;
        }
        assert_ne!(job["status"], "failed", "{job}");
        assert!(std::time::Instant::now() < deadline, "the first import never ended");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (status, body) = upload(&hub, &api, &small.join("birdnet.db"), &[("kind", "birdnet-go")]).await;
    assert_eq!(status, StatusCode::ACCEPTED, "the next one may start once the first has ended: {body}");
}

#[tokio::test]
async fn an_uploaded_import_the_hub_was_running_when_it_stopped_is_marked_failed_at_its_next_start() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let data = std::fs::canonicalize(&hub.data_dir).expect("data dir");
    let leftover = data.join("imports/uploads/0b7e/birdnet.db");
    std::fs::create_dir_all(leftover.parent().expect("dir")).expect("uploads");
    std::fs::write(&leftover, b"half an upload").expect("leftover");
    let (uploaded, cli) = (uuid::Uuid::new_v4().to_string(), uuid::Uuid::new_v4().to_string());
    hub.sql(|c| {
        for (id, source) in [(&uploaded, leftover.display().to_string()), (&cli, "/home/pi/BirdNET-Go/data".to_owned())]
        {
            c.execute(
                "INSERT INTO imports (id, tenant_id, kind, schema, source, database_path, time_zone, status, runner_pid,
                   created_at, updated_at)
                 VALUES (?1, ?2, 'birdnet-go', 'birdnet-go-legacy', ?3, ?3, 'UTC', 'running', 2147483000,
                   '2026-11-27T10:00:00.000Z', '2026-11-27T10:00:00.000Z')",
                rusqlite::params![id, owner.tenant.to_string(), source],
            )
            .expect("job row");
        }
    });
    let dir = hub.stop_keeping_data().await;
    let hub = common::spawn_hub_in(dir, |_| {}).await;
    let api = hub.login("owner@example.org").await;
    let (status, job) = api.get(&format!("/imports/{uploaded}")).await;
    assert_eq!(status, StatusCode::OK, "{job}");
    assert_eq!(job["status"], "failed");
    assert!(job["error"].as_str().is_some_and(|e| e.starts_with("interrupted")), "{job}");
    let (_, job) = api.get(&format!("/imports/{cli}")).await;
    assert_eq!(job["status"], "running", "a command-line job is left for `birdhub import` to resume");
    assert!(!leftover.exists(), "the half upload is removed");
}
