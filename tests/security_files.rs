//! `docs/security.md` lists, under "Untrusted files", every file, archive and message body a person,
//! device or outside server hands the hub, with its bounds. This test reads that table and feeds
//! each input its hostile samples through the real path (an HTTP upload to a real hub, an MQTT
//! publish as a real satellite, a picture source the hub downloads from, the real binary's
//! `admin restore`), and fails when:
//! - the table names an input that has no samples here, or samples feed an input it does not name;
//! - a sample is not refused as its row says (a clear 4xx `{code, message}`, an error ack, a
//!   failed download, a refused restore), or something of it is kept;
//! - anything is written outside the data dir (every sample's root is watched);
//! - the hub stops answering, or its peak memory grows by [`MAX_GROWTH_MB`] or more.
//!
//! To add an input: a row in the table, and one `fn` here registered in [`inputs`]; samples that
//! take more than a few lines to make go in `tests/common/hostile.rs`.

mod common;
#[path = "security_files/imports.rs"]
mod imports;

use std::{collections::BTreeSet, path::Path, time::Duration};

use common::{TestHub, hostile::*, sat};
use futures_util::{FutureExt, future::BoxFuture};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const DOC: &str = include_str!("../docs/security.md");

type Feed = fn() -> BoxFuture<'static, ()>;

/// Every input of the table and the function that feeds it its hostile samples.
fn inputs() -> Vec<(&'static str, Feed)> {
    vec![
        ("app-release", (|| app_release().boxed()) as Feed),
        ("satellite-audio", (|| satellite_audio().boxed()) as Feed),
        ("species-image", (|| species_image().boxed()) as Feed),
        ("backup-restore", (|| backup_restore().boxed()) as Feed),
        ("import-archive", (|| imports::import_archive().boxed()) as Feed),
        ("import-database", (|| imports::import_database().boxed()) as Feed),
        ("import-config", (|| imports::import_config().boxed()) as Feed),
        ("import-clip", (|| imports::import_clip().boxed()) as Feed),
    ]
}

/// The `Input` column of the "Untrusted files" section.
fn documented() -> BTreeSet<String> {
    let section = DOC.split("\n## Untrusted files").nth(1).expect("docs/security.md has an Untrusted files section");
    let section = section.split("\n## ").next().unwrap_or_default();
    let mut names = BTreeSet::new();
    for line in section.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').map(str::trim).collect();
        let first = cells[0];
        if first.starts_with('`') && first.ends_with('`') && first.len() > 2 {
            assert_eq!(
                cells.len(),
                7,
                "a row has Input, Who hands it, Size, Count and depth, Memory, Time, Paths: {line}"
            );
            assert!(cells.iter().all(|c| !c.is_empty()), "every bound is filled in: {line}");
            assert!(names.insert(first.trim_matches('`').to_owned()), "{first} is listed twice");
        }
    }
    names
}

#[test]
fn every_documented_input_has_samples_and_every_sample_is_documented() {
    let documented = documented();
    let fed: BTreeSet<String> = inputs().into_iter().map(|(name, _)| name.to_owned()).collect();
    assert_eq!(fed.len(), inputs().len(), "an input is registered twice");
    let no_samples: Vec<_> = documented.difference(&fed).collect();
    let undocumented: Vec<_> = fed.difference(&documented).collect();
    assert!(no_samples.is_empty(), "documented inputs with no hostile samples: {no_samples:?}");
    assert!(undocumented.is_empty(), "samples for inputs docs/security.md does not list: {undocumented:?}");
}

/// One test, so that one hub's memory is measured at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_input_refuses_its_hostile_samples() {
    for (name, feed) in inputs() {
        eprintln!("input {name}");
        feed().await;
    }
}

// ---------------------------------------------------------------------------------------------
// What every sample is checked for.

async fn assert_serving(hub: &TestHub, what: &str) {
    let got = reqwest::get(hub.api("/health")).await.map(|r| r.status().as_u16());
    assert_eq!(got.ok(), Some(200), "{what}: the hub stopped answering");
}

#[track_caller]
fn assert_clear_4xx(what: &str, status: u16, body: &Value) {
    assert!((400..500).contains(&status), "{what}: answered {status} {body}");
    assert!(body["code"].is_string() && body["message"].is_string(), "{what}: not a {{code, message}} error: {body}");
}

// ---------------------------------------------------------------------------------------------
// `app-release`: a platform admin's APK upload (multipart, streamed from disk).

const APK_LIMIT: u64 = 64 << 20;

/// Posts the file at `apk` as the form's `apk` field, streamed from disk over a raw connection.
async fn upload_apk(hub: &TestHub, token: &str, apk: &Path, version: &str) -> (u16, Value) {
    let prefix = format!(
        "--B\r\nContent-Disposition: form-data; name=\"version\"\r\n\r\n{version}\r\n\
         --B\r\nContent-Disposition: form-data; name=\"apk\"; filename=\"a.apk\"\r\n\
         Content-Type: application/vnd.android.package-archive\r\n\r\n"
    );
    let suffix = "\r\n--B--\r\n";
    let length = prefix.len() as u64 + std::fs::metadata(apk).expect("sample").len() + suffix.len() as u64;
    let head = format!(
        "POST /api/mobile/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\
         Content-Type: multipart/form-data; boundary=B\r\nContent-Length: {length}\r\n\r\n{prefix}"
    );
    let sock = tokio::net::TcpStream::connect(hub.http_addr).await.expect("connect");
    let (mut read, mut write) = sock.into_split();
    let file = apk.to_owned();
    // The hub may answer (413) before the body ends; the sender then just stops. Otherwise it
    // hands back its half, still open: a client that half-closes gets no answer from hyper.
    let sender = tokio::spawn(async move {
        write.write_all(head.as_bytes()).await?;
        let mut body = tokio::fs::File::open(file).await?;
        tokio::io::copy(&mut body, &mut write).await?;
        write.write_all(suffix.as_bytes()).await?;
        Ok::<_, std::io::Error>(write)
    });
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), read.read_to_end(&mut answer))
        .await
        .expect("an answer within 60 s")
        .expect("read the answer");
    sender.abort();
    let text = String::from_utf8_lossy(&answer);
    let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or_default();
    (status, serde_json::from_str(body).unwrap_or(Value::String(body.to_owned())))
}

async fn app_release() {
    let (root, data) = nested_data_dir();
    let hub = common::spawn_hub_in(data, |s| s.releases.max_apk_bytes = APK_LIMIT).await;
    hub.user("root@example.org", true).await;
    let token = hub.token("root@example.org").await;
    let work = tempfile::tempdir().expect("tempdir");
    let at = |name: &str| work.path().join(name);

    std::fs::write(at("text"), b"just some text, and not a ZIP archive at all").expect("write");
    zip_file(&at("good"), &["AndroidManifest.xml", "classes.dex"]);
    let good = std::fs::read(at("good")).expect("read");
    std::fs::write(at("truncated"), &good[..good.len() - 9]).expect("write");
    let mut lying = good.clone();
    let n = lying.len();
    lying[n - 12..n - 10].copy_from_slice(&65_534u16.to_le_bytes());
    lying[n - 14..n - 12].copy_from_slice(&65_534u16.to_le_bytes());
    std::fs::write(at("lying-count"), lying).expect("write");
    zip_file(&at("no-manifest"), &["classes.dex", "assets/AndroidManifest.xml"]);
    zip64_directory(&at("zip64-million-entries"), 1_000_000);
    std::fs::File::create(at("oversize")).and_then(|f| f.set_len(APK_LIMIT + 1)).expect("sparse file");
    let outside = absolute_target("apk");
    let escape = format!("../../../{}", outside.file_name().and_then(|n| n.to_str()).unwrap_or_default());
    zip_file(&at("paths-out"), &["AndroidManifest.xml", escape.as_str(), outside.to_str().expect("utf-8")]);

    let refused = ["text", "truncated", "lying-count", "no-manifest", "zip64-million-entries", "oversize"];
    for (i, sample) in refused.iter().enumerate() {
        let watch = Watch::start(&format!("app-release {sample}"), root.path(), &hub.data_dir);
        let (status, body) = upload_apk(&hub, &token, &at(sample), &format!("1.0.{i}")).await;
        assert_clear_4xx(sample, status, &body);
        assert_serving(&hub, sample).await;
        watch.finish(&[]);
    }
    let releases: i64 =
        hub.sql(|c| c.query_row("SELECT count(*) FROM mobile_releases", [], |r| r.get(0)).expect("count"));
    assert_eq!(releases, 0, "no refused upload is kept");

    // Paths inside an APK never matter: it is kept whole, as one file, never unpacked.
    let watch = Watch::start("app-release paths-out", root.path(), &hub.data_dir);
    let (status, body) = upload_apk(&hub, &token, &at("paths-out"), "2.0.0").await;
    assert_eq!(status, 201, "{body}");
    let kept = std::fs::read_dir(hub.data_dir.join("objects/apks")).map(Iterator::count).unwrap_or(0);
    assert_eq!(kept, 1, "one APK file, nothing unpacked");
    watch.finish(&[outside]);
    assert_eq!(std::fs::read_dir(hub.data_dir.join("objects/.tmp")).map(Iterator::count).unwrap_or(0), 0);
}

// ---------------------------------------------------------------------------------------------
// `satellite-audio`: a satellite's `audio` message over MQTT (base64 WAV in JSON).

async fn satellite_audio() {
    let (root, data) = nested_data_dir();
    let hub = common::spawn_hub_in(data, |_| {}).await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let r = sat::register(&api, json!({"name": "garden"})).await;
    let mut c = sat::connect(&hub, &r).await;
    assert!(c.subscribe(&r.topic("ack")).await);

    let id = || uuid::Uuid::new_v4().to_string();
    let message = |wav: &[u8], ms: i64| sat::audio_message(&r, &id(), wav, 48_000, ms);
    let with_audio = |audio: Value| {
        let mut m: Value = serde_json::from_slice(&message(b"", 3000)).expect("json");
        m["audio"] = audio;
        m.to_string().into_bytes()
    };
    let good = sat::tone_wav(48_000, 3.0);
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let samples: Vec<(&str, Vec<u8>)> = vec![
        ("broken base64", with_audio(json!("UklGRg==%%%not base64%%%"))),
        ("wrong magic", message(b"ID3\x04 an MP3 is not a WAV chunk, and neither is this", 3000)),
        ("truncated", message(&good[..good.len() / 2], 3000)),
        ("header only", message(&good[..44], 3000)),
        ("data chunk claims 4 GiB", message(&wav_claiming(48_000, 16, u32::MAX, 288_000), 3000)),
        ("fmt chunk claims 4 GiB", message(&wav_claiming(48_000, u32::MAX, 288_000, 288_000), 3000)),
        ("a minute at 8 kHz", message(&sat::tone_wav(8_000, 60.0), 60_000)),
        ("oversize message", message(&vec![0u8; 3 << 20], 3000)),
        ("deep JSON", format!("{{\"chunkId\": {deep}}}").into_bytes()),
    ];
    for (name, payload) in samples {
        let watch = Watch::start(&format!("satellite-audio {name}"), root.path(), &hub.data_dir);
        c.publish(&r.topic("audio"), payload).await;
        let ack = c.message_on(&r.topic("ack"), 15).await.unwrap_or_else(|| panic!("{name}: an ack"));
        assert_eq!(ack["status"], "error", "{name}: {ack}");
        assert!(ack["error"].as_str().is_some_and(|e| !e.is_empty()), "{name}: a reason: {ack}");
        assert_serving(&hub, name).await;
        watch.finish(&[]);
    }
    let kept: i64 = hub.sql(|c| c.query_row("SELECT count(*) FROM audio_chunks", [], |r| r.get(0)).expect("count"));
    assert_eq!(kept, 0, "no refused chunk is kept");
}

// ---------------------------------------------------------------------------------------------
// `species-image`: what the configured picture source answers.

/// The source's answer for each species of `common::images::SPECIES`, by scientific name.
async fn hostile_source(axum::extract::Path(name): axum::extract::Path<String>) -> axum::response::Response {
    use axum::{
        body::{Body, Bytes},
        http::{StatusCode, header},
        response::IntoResponse,
    };
    let png = [(header::CONTENT_TYPE, "image/png")];
    match name.as_str() {
        "Turdus migratorius" => (png, png_claiming(100_000, 100_000)).into_response(),
        "Cardinalis cardinalis" => {
            ([(header::CONTENT_TYPE, "image/jpeg")], jpeg_claiming(65_535, 65_535)).into_response()
        }
        "Cyanocitta cristata" => (png, png_claiming(64, 64)[..20].to_vec()).into_response(),
        "Sitta carolinensis" => (png, b"<svg onload=alert(1)></svg>".to_vec()).into_response(),
        "Poecile atricapillus" => {
            let endless =
                futures_util::stream::repeat_with(|| Ok::<_, std::io::Error>(Bytes::from(vec![0u8; 64 << 10])));
            (png, Body::from_stream(endless)).into_response()
        }
        "Melospiza melodia" => (StatusCode::FOUND, [(header::LOCATION, "/birds/Melospiza%20melodia")]).into_response(),
        "Dryobates pubescens" => axum::Json(json!({"imageUrl": "file:///etc/passwd"})).into_response(),
        "Zenaida macroura" => {
            let deep = format!("{{\"imageUrl\": {}{}}}", "[".repeat(100_000), "]".repeat(100_000));
            ([(header::CONTENT_TYPE, "application/json")], deep).into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn species_image() {
    let app = axum::Router::new().route("/birds/{name}", axum::routing::get(hostile_source));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let source = format!("http://{}/birds/{{scientific_name}}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let labels = common::images::label_dir();
    let model_dir = labels.path().display().to_string();
    let (root, data) = nested_data_dir();
    let hub = common::spawn_hub_in(data, move |s| {
        s.inference.model_dir = model_dir;
        s.species_images.source_url = source;
        s.species_images.max_bytes = 1 << 20;
        s.species_images.timeout_secs = 3;
        s.species_images.max_attempts = 1;
    })
    .await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;

    let codes: Vec<&str> = common::images::SPECIES.iter().map(|(_, code, _)| *code).collect();
    let watch = Watch::start("species-image", root.path(), &hub.data_dir);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let answer = loop {
        let (status, body) = api.post("/species/images", json!({ "codes": codes })).await;
        assert_eq!(status, 200, "{body}");
        let settled =
            |c: &str| ["failed", "none", "cached"].contains(&body["images"][c]["status"].as_str().unwrap_or(""));
        if codes.iter().all(|c| settled(c)) {
            break body;
        }
        assert!(tokio::time::Instant::now() < deadline, "every download ends within 30 s: {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for (scientific, code, _) in common::images::SPECIES {
        let status = answer["images"][code]["status"].as_str().unwrap_or_default();
        assert!(["failed", "none"].contains(&status), "{scientific}: a hostile answer was kept ({status})");
        let (got, body) = api.get(&format!("/species/image/proxy?code={code}")).await;
        assert!(got.is_client_error(), "{scientific}: the proxy serves nothing: {got} {body}");
    }
    let kept = std::fs::read_dir(hub.data_dir.join("objects/species-images")).map(Iterator::count).unwrap_or(0);
    assert_eq!(kept, 0, "no picture file is kept");
    assert_serving(&hub, "species-image").await;
    watch.finish(&[]);
}

// ---------------------------------------------------------------------------------------------
// `backup-restore`: the file given to `birdhub admin restore`.

/// Runs `birdhub admin restore FILE` into `data`, watching its peak memory; returns whether it
/// succeeded, its output and its peak memory in MB.
fn restore(config_dir: &Path, data: &Path, file: &Path) -> (bool, String, u64) {
    let config = config_dir.join("empty.toml");
    std::fs::write(&config, "").expect("config");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_birdhub"));
    cmd.args(["admin", "restore"]).arg(file).arg("--config").arg(&config).arg("--data-dir").arg(data);
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("BIRDHUB_") || k == "RUST_LOG") {
        cmd.env_remove(k);
    }
    let mut child =
        cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().expect("run birdhub");
    let status_file = format!("/proc/{}/status", child.id());
    let (mut peak_kb, started) = (0u64, std::time::Instant::now());
    while child.try_wait().expect("wait").is_none() {
        let hwm = std::fs::read_to_string(&status_file).ok().and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        });
        peak_kb = peak_kb.max(hwm.unwrap_or(0));
        assert!(started.elapsed() < Duration::from_secs(60), "the restore of {} ends within 60 s", file.display());
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().expect("output");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text, peak_kb / 1024)
}

async fn backup_restore() {
    let (root, data) = nested_data_dir();
    let data_dir = data.path().to_owned();
    let work = tempfile::tempdir().expect("tempdir");
    let at = |name: &str| work.path().join(format!("{name}.tar.zst"));
    let outside = absolute_target("restore");
    let outside_name = outside.to_str().expect("utf-8").to_owned();
    let out_of_data = root.path().join("escaped");

    std::fs::write(at("wrong-magic"), b"PK\x03\x04 a ZIP is not a backup").expect("write");
    write_backup(&at("good"), [file("birdhub.db", b"SQLite format 3\0"), file("manifest.json", b"{}")]);
    let good = std::fs::read(at("good")).expect("read");
    std::fs::write(at("truncated"), &good[..good.len() / 2]).expect("write");
    write_backup(&at("dot-dot"), [file("objects/../../../escaped", b"out")]);
    write_backup(&at("absolute"), [file(&outside_name, b"out")]);
    write_backup(
        &at("symlink-out"),
        [link("objects", tar::EntryType::Symlink, "../../.."), file("objects/escaped", b"out")],
    );
    write_backup(&at("hardlink-out"), [link("objects/x", tar::EntryType::Link, &outside_name)]);
    write_backup(&at("device"), [Entry { kind: tar::EntryType::Char, ..file("objects/tty", b"") }]);
    let deep = format!("{}f", "d/".repeat(1_500));
    write_backup(&at("deep-nesting"), [file(&deep, b"deep")]);
    write_backup(&at("many-entries"), (0..2_000).map(|i| file(&format!("objects/many/{i}"), b"")));
    write_backup(&at("twice"), [file("objects/a", b"1"), file("objects/a", b"2")]);
    // A declared size far past the data there (1 TiB of a file that is not in the archive).
    let mut huge = tar::Header::new_gnu();
    huge.set_path("objects/huge").expect("path");
    huge.set_size(1 << 40);
    huge.set_entry_type(tar::EntryType::Regular);
    huge.set_cksum();
    let mut raw = huge.as_bytes().to_vec();
    raw.extend_from_slice(&[0u8; 4096]);
    std::fs::write(at("claims-1-TiB"), zstd::encode_all(raw.as_slice(), 3).expect("zstd")).expect("write");

    let samples = [
        "wrong-magic",
        "truncated",
        "dot-dot",
        "absolute",
        "symlink-out",
        "hardlink-out",
        "device",
        "deep-nesting",
        "many-entries",
        "twice",
        "claims-1-TiB",
    ];
    for sample in samples {
        let watch = Watch::start(&format!("backup-restore {sample}"), root.path(), &data_dir);
        let (ok, text, peak_mb) = restore(work.path(), &data_dir, &at(sample));
        assert!(!ok, "{sample}: refused: {text}");
        assert!(!text.contains("panicked"), "{sample}: a clear refusal, not a panic: {text}");
        eprintln!("  backup-restore {sample}: restore peak {peak_mb} MB: {}", text.lines().last().unwrap_or_default());
        assert!(peak_mb < MAX_GROWTH_MB, "{sample}: the restore's peak memory was {peak_mb} MB");
        let left = std::fs::read_dir(&data_dir).map(Iterator::count).unwrap_or(0);
        assert_eq!(left, 0, "{sample}: the data dir is untouched");
        watch.finish(&[outside.clone(), out_of_data.clone()]);
    }
    if let Ok(deep_made) = std::fs::read_dir(root.path().join("a")).map(|d| d.count()) {
        assert_eq!(deep_made, 1, "only the data dir is left beside it (no staging folder)");
    }
}
