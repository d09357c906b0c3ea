//! Hostile old-station files (issue 48): a backup whose own config points its clips directory
//! out of it (at the hub's data directory, at `/etc`), a station directory whose clip is a link
//! out of it, and a station whose name and position are garbage. Checked by their effect: what
//! the hub serves, what it copied into its object store, what it stored for the satellite.

mod common;

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use common::{
    TestHub,
    api::Api,
    imports::{finished, upload},
    peers::{self, PiEra, PiRow},
    peers_go,
    process::BIN,
};
use reqwest::StatusCode;
use serde_json::Value;

async fn hub() -> TestHub {
    common::spawn_hub_with(common::with_model).await
}

fn model_dir() -> PathBuf {
    birdhub::inference::ModelDir::locate("").expect("model (run models/fetch.sh)").path
}

/// `tar -cf out -C dir .`: the directory's contents at the archive's top, as they are unpacked.
fn tar_contents(dir: &Path, out: &Path) {
    let status = Command::new("tar").arg("-cf").arg(out).arg("-C").arg(dir).arg(".").status().expect("tar");
    assert!(status.success());
}

async fn detections(api: &Api, sat: &str) -> Vec<Value> {
    let (status, body) = api.get(&format!("/detections?satelliteId={sat}&limit=100")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["detections"].as_array().expect("detections").clone()
}

/// The status and body of every detection's audio.
async fn audio_of(hub: &TestHub, api: &Api, list: &[Value]) -> Vec<(StatusCode, Vec<u8>)> {
    let mut out = Vec::new();
    for d in list {
        let Some(chunk) = d["audio_chunk_id"].as_str() else { continue };
        let resp = api.client.get(hub.api(&format!("/audio/{chunk}"))).send().await.expect("GET audio");
        let status = resp.status();
        out.push((status, resp.bytes().await.expect("bytes").to_vec()));
    }
    out
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() { out.extend(files_under(&p)) } else { out.push(p) }
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// A BirdNET-Go data directory whose rows name `clips` and whose `config.yaml` says the clips
/// are at `export` (and gives `name` and `place`).
fn go_station(dir: &Path, export: &str, clips: &[&'static str], name: &str, place: (&str, &str)) {
    std::fs::create_dir_all(dir).expect("dir");
    let conn = rusqlite::Connection::open(dir.join("birdnet.db")).expect("db");
    conn.execute_batch(&peers_go::legacy_schema("")).expect("schema");
    let notes: Vec<_> = clips
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let time: &'static str = format!("06:0{i}:00").leak();
            peers_go::note("2026-05-01", time, "Turdus merula", "Eurasian Blackbird", 0.9, c)
        })
        .collect();
    peers_go::insert_notes(&conn, &notes);
    let yaml = format!(
        "main:\n  name: \"{name}\"\nbirdnet:\n  latitude: {}\n  longitude: {}\nrealtime:\n  audio:\n    export:\n      enabled: true\n      path: {export}\n      type: wav\n",
        place.0, place.1
    );
    std::fs::write(dir.join("config.yaml"), yaml).expect("config.yaml");
}

#[tokio::test]
async fn a_backup_whose_config_points_its_clips_out_of_it_gets_no_file_of_the_hub() {
    let hub = hub().await;
    hub.user("owner@example.org", false).await;
    let api = hub.login("owner@example.org").await;
    let secrets_path = hub.data_dir.join("secrets.toml");
    if !secrets_path.exists() {
        std::fs::write(&secrets_path, "jwt_secret = \"a-secret-the-test-looks-for\"\n").expect("secrets");
    }
    let secrets = std::fs::read(&secrets_path).expect("secrets");
    let tmp = tempfile::tempdir().expect("tmp");
    // From the unpack directory `<data>/imports/scratch/unpack-X`, `../../..` is the data dir.
    for (n, (export, names)) in
        [("../../..", &["secrets.toml", "birdhub.db"][..]), ("/etc", &["passwd"][..])].into_iter().enumerate()
    {
        let station = tmp.path().join(format!("station{n}"));
        go_station(&station, export, names, &format!("Hostile {n}"), ("60.17", "24.94"));
        let tar = tmp.path().join(format!("hostile{n}.tar"));
        tar_contents(&station, &tar);
        let fields = [("kind", "birdnet-go"), ("time_zone", "Europe/Helsinki")];
        let (status, job) = upload(&hub, &api, &tar, &fields).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{job}");
        let done = finished(&api, job["id"].as_str().expect("id")).await;
        assert_eq!(done["status"], "done", "{done}");
        assert_eq!(done["rows_added"], names.len(), "{done}");
        assert_eq!(done["clips_copied"], 0, "nothing outside the backup is a clip: {done}");
        let list = detections(&api, done["satellite_id"].as_str().expect("satellite")).await;
        assert_eq!(list.len(), names.len());
        for (status, body) in audio_of(&hub, &api, &list).await {
            assert_eq!(status, StatusCode::GONE, "the row has no audio");
            assert!(!contains(&body, &secrets) && !contains(&body, b"root:") && !contains(&body, b"SQLite format 3"));
        }
    }
    for f in files_under(&hub.data_dir.join("objects")) {
        let bytes = std::fs::read(&f).expect("object");
        assert!(
            !contains(&bytes, &secrets) && !contains(&bytes, b"root:x:0") && !bytes.starts_with(b"SQLite format 3"),
            "{} holds a file of the hub or of the system",
            f.display()
        );
    }
}

fn import_pi(hub: &TestHub, path: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .args(["import", "birdnet-pi"])
        .arg(path)
        .arg("--data-dir")
        .arg(&hub.data_dir)
        .args(args)
        .env("BIRDHUB_INFERENCE__MODEL_DIR", model_dir())
        .env("BIRDHUB_LOG_LEVEL", "warn")
        .output()
        .expect("run birdhub import");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[tokio::test]
async fn a_clip_that_links_out_of_the_station_directory_is_not_copied() {
    let hub = hub().await;
    let owner = hub.user("pi@example.org", false).await;
    let api = hub.login("pi@example.org").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let station = tmp.path().join("station");
    let rows = vec![
        PiRow::new("2023-05-01", "06:12:03", "Turdus merula", "Eurasian Blackbird", 0.9, None),
        PiRow::new("2023-05-01", "07:12:03", "Parus major", "Great Tit", 0.8, None),
    ];
    peers::pi_clips(&station, &[&rows[0]]);
    // A file outside the station that looks like a clip, linked from where row 2's clip goes.
    let outside = tmp.path().join("elsewhere.mp3");
    std::fs::write(&outside, [peers::mp3_clip(), b"OUTSIDE-THE-STATION"].concat()).expect("outside");
    let link = station.join(rows[1].clip_path());
    std::fs::create_dir_all(link.parent().expect("parent")).expect("mkdir");
    std::os::unix::fs::symlink(&outside, &link).expect("link");
    peers::pi_database(&station.join("birds.db"), PiEra::Nachtzuster2024, &rows, (52.52, 13.405));

    let (ok, out, err) = import_pi(&hub, &station, &["--zone", "Europe/Berlin"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("added: 2") && out.contains("clips copied: 1") && out.contains("missing clips: 1"), "{out}");
    let sat: String = hub.sql(|c| {
        c.query_row("SELECT id FROM satellites WHERE tenant_id = ?1", [owner.tenant.to_string()], |r| r.get(0))
            .expect("satellite")
    });
    let list = detections(&api, &sat).await;
    let tit = list.iter().find(|d| d["scientific_name"] == "Parus major").expect("the tit");
    let got = audio_of(&hub, &api, std::slice::from_ref(tit)).await;
    assert_eq!(got[0].0, StatusCode::GONE, "the linked file is not the row's audio");
    for f in files_under(&hub.data_dir.join("objects")) {
        assert!(!contains(&std::fs::read(&f).expect("object"), b"OUTSIDE-THE-STATION"), "{} was copied", f.display());
    }
}

#[tokio::test]
async fn a_station_named_with_control_characters_and_placed_off_the_earth_gets_a_clean_name_and_no_place() {
    let hub = hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login("owner@example.org").await;
    let tmp = tempfile::tempdir().expect("tmp");
    // 11,900 characters with ESC and BEL in them.
    let raw = format!("Gar\u{1b}[31mden\u{7}{}", "x".repeat(11_890));
    let station = tmp.path().join("go");
    go_station(&station, "clips", &[""], &raw, ("1e300", "-999"));
    let tar = tmp.path().join("named.tar");
    tar_contents(&station, &tar);

    // The form's own name gets the API's check.
    let (status, body) = upload(&hub, &api, &tar, &[("kind", "birdnet-go"), ("name", "Bad\u{1b}[2Jname")]).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["code"], "invalid_name", "{body}");

    let (status, job) = upload(&hub, &api, &tar, &[("kind", "birdnet-go"), ("time_zone", "UTC")]).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{job}");
    let done = finished(&api, job["id"].as_str().expect("id")).await;
    assert_eq!(done["status"], "done", "{done}");

    // A BirdNET-Pi station whose birdnet.conf says the same, through the command line.
    let pi = tmp.path().join("pi");
    let rows = vec![PiRow::new("2023-05-01", "06:12:03", "Turdus merula", "Eurasian Blackbird", 0.9, None)];
    std::fs::create_dir_all(&pi).expect("dir");
    peers::pi_database(&pi.join("birds.db"), PiEra::Nachtzuster2024, &rows, (1e300, -999.0));
    std::fs::write(pi.join("birdnet.conf"), format!("SITE_NAME=\"{raw}\"\nLATITUDE=1e300\nLONGITUDE=-999\n"))
        .expect("conf");
    let (ok, out, err) = import_pi(&hub, &pi, &["--zone", "UTC", "--name", "Bad\u{7}name"]);
    assert!(!ok && err.contains("name"), "the command line's --name is checked: {out}\n{err}");
    let (ok, out, err) = import_pi(&hub, &pi, &["--zone", "UTC"]);
    assert!(ok, "{out}\n{err}");

    let sats: Vec<(String, Option<f64>, Option<f64>)> = hub.sql(|c| {
        let mut stmt = c
            .prepare("SELECT name, latitude, longitude FROM satellites WHERE tenant_id = ?1 ORDER BY pk")
            .expect("prepare");
        stmt.query_map([owner.tenant.to_string()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    });
    assert_eq!(sats.len(), 2, "{sats:?}");
    for (name, _, _) in &sats {
        assert!(!name.chars().any(char::is_control), "{name:?}");
        assert!(name.chars().count() <= 100 && name.starts_with("Gar[31mden"), "{name:?}");
    }
    // No position off the Earth. The BirdNET-Go station's rows say where it stood (New York), so
    // it takes that (issue 51, defect 13); the BirdNET-Pi one's rows are off the Earth too.
    assert_eq!((sats[0].1, sats[0].2), (Some(40.7128), Some(-74.006)), "the Go station's rows' place");
    assert_eq!((sats[1].1, sats[1].2), (None, None), "no position off the Earth");
    // The detections' chunks keep no such position either.
    let placed: i64 = hub.sql(|c| {
        c.query_row("SELECT count(*) FROM audio_chunks WHERE latitude > 90 OR longitude < -180", [], |r| r.get(0))
            .expect("count")
    });
    assert_eq!(placed, 0);
}
