//! Hostile imports (issue 48): a tar whose directories or entries would cost more than its size
//! says, a hub killed mid-import, a WAL database uploaded alone, several teams importing at once,
//! hub paths in what team admins read, and a `--team` name two teams share. Each through the
//! real hub (in-process or the binary) and the real files it leaves.

mod common;

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use common::{TestHub, api::Api, peers_go, process};
use reqwest::StatusCode;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn hub() -> TestHub {
    common::spawn_hub_with(common::with_model).await
}

fn model_dir() -> PathBuf {
    birdhub::inference::ModelDir::locate("").expect("model (run models/fetch.sh)").path
}

/// `POST /api/imports` with `file` and the text fields.
async fn upload(base: &str, api: &Api, file: &Path, fields: &[(&str, &str)]) -> (StatusCode, Value) {
    let bytes = std::fs::read(file).expect("file");
    let name = file.file_name().expect("name").to_string_lossy().into_owned();
    let mut form = reqwest::multipart::Form::new();
    for (k, v) in fields {
        form = form.text(k.to_string(), v.to_string());
    }
    form = form.part("file", reqwest::multipart::Part::bytes(bytes).file_name(name));
    let resp = api.client.post(format!("{base}/api/imports")).multipart(form).send().await.expect("upload");
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// The names in a directory (none when it does not exist).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// Adds a file entry of `data` at `path` (any depth) to a tar being built.
fn add(b: &mut tar::Builder<std::fs::File>, path: &str, data: &[u8]) {
    let mut h = tar::Header::new_gnu();
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    h.set_entry_type(tar::EntryType::Regular);
    // Long paths go in a GNU long-name entry, as GNU tar writes them.
    b.append_data(&mut h, path, data).expect("entry");
}

/// A BirdNET-Go data directory tar (a real station that imports) with `extra` entries added.
fn station_tar(dir: &Path, name: &str, extra: impl FnOnce(&mut tar::Builder<std::fs::File>)) -> PathBuf {
    let station = dir.join(format!("{name}-station"));
    peers_go::legacy_station(&station, "");
    let out = dir.join(name);
    let mut b = tar::Builder::new(std::fs::File::create(&out).expect("tar"));
    b.append_dir_all("data", &station).expect("station");
    extra(&mut b);
    b.finish().expect("finish");
    out
}

async fn wait_job(api: &Api, id: &str, secs: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let (status, job) = api.get(&format!("/imports/{id}")).await;
        assert_eq!(status, StatusCode::OK, "{job}");
        if job["status"] == "done" || job["status"] == "failed" {
            return job;
        }
        assert!(Instant::now() < deadline, "the job never ended: {job}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_tar_too_deep_or_too_crowded_is_refused_and_leaves_no_scratch() {
    let hub = hub().await;
    hub.user("owner@example.org", false).await;
    let api = hub.login("owner@example.org").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let fields = [("kind", "birdnet-go"), ("name", "Deep")];
    let scratch = hub.data_dir.join("imports/scratch");

    // One 1 KiB entry 300 directories down: 300 directories of 4 KiB each, and a real station
    // beside it that would otherwise import.
    let deep_path = format!("{}/x.bin", (0..300).map(|i| format!("d{i}")).collect::<Vec<_>>().join("/"));
    let deep = station_tar(tmp.path(), "deep.tar", |b| add(b, &deep_path, &[7u8; 1024]));
    let (status, body) = upload(&hub.base_url, &api, &deep, &fields).await;
    common::assert_error(&(status, body.clone()), 422, "archive_refused");
    assert!(body["message"].as_str().is_some_and(|m| m.contains("deep")), "{body}");
    assert_eq!(names(&scratch), Vec::<String>::new(), "nothing was unpacked");
    assert_eq!(names(&hub.data_dir.join("imports/uploads")), Vec::<String>::new(), "the upload is removed");

    // More entries than a station's backup has (empty files: 512 bytes of header each).
    let crowded = station_tar(tmp.path(), "crowded.tar", |b| {
        for i in 0..=birdhub::usecases::imports::unpack::MAX_ENTRIES {
            add(b, &format!("junk/{}/{i}", i % 1000), b"");
        }
    });
    let (status, body) = upload(&hub.base_url, &api, &crowded, &fields).await;
    common::assert_error(&(status, body.clone()), 422, "archive_refused");
    assert!(body["message"].as_str().is_some_and(|m| m.contains("entries")), "{body}");
    assert_eq!(names(&scratch), Vec::<String>::new(), "nothing was unpacked");
    let satellites: i64 = hub.sql(|c| c.query_row("SELECT COUNT(*) FROM satellites", [], |r| r.get(0)).expect("n"));
    assert_eq!(satellites, 0, "no import ran");
}

/// Logs in on a hub process at `base` (a user made with [`process::create_user`]).
async fn login(base: &str, email: &str) -> Api {
    let api = Api::new(base);
    let (status, body) =
        api.post("/auth/login", serde_json::json!({"email": email, "password": common::PASSWORD})).await;
    assert_eq!(status, 200, "{body}");
    api
}

#[tokio::test]
async fn a_hub_killed_mid_import_leaves_no_scratch_and_no_upload_after_its_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (http, mqtt) = (process::free_port(), process::free_port());
    let mut hub = process::serve(dir.path(), http, mqtt);
    let base = format!("http://127.0.0.1:{http}");
    common::wait_healthy(&format!("{base}/api/health")).await;
    process::create_user(dir.path(), "ops@example.org");
    let api = login(&base, "ops@example.org").await;
    let station = dir.path().join("station/data");
    peers_go::many_notes(&station, 60_000, false);
    let tar = dir.path().join("station.tar");
    peers_go::tar_dir(&station, &tar);

    let (status, job) = upload(&base, &api, &tar, &[("kind", "birdnet-go"), ("name", "Killed")]).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{job}");
    let id = job["id"].as_str().expect("id").to_owned();
    let data = dir.path().join("data");
    let scratch = data.join("imports/scratch");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, job) = api.get(&format!("/imports/{id}")).await;
        assert_ne!(job["status"], "done", "the import ended before it could be killed");
        if job["status"] == "running" && job["rows_read"].as_u64().unwrap_or(0) > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the import never started: {job}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    process::signal(&mut hub, "KILL");
    assert_eq!(names(&scratch).len(), 1, "the killed import's unpacked backup is there: {:?}", names(&scratch));
    assert_eq!(names(&data.join("imports/uploads")).len(), 1, "and its upload");
    // A scratch directory an older hub left (no process in its name), and one a running
    // `birdhub import` is using (this test process stands in for it: it is alive).
    let stale = scratch.join(format!("unpack-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(stale.join("data")).expect("stale");
    std::fs::write(stale.join("data/birdnet.db"), vec![0u8; 4096]).expect("stale file");
    let live = scratch.join(format!("unpack-{}-{}", std::process::id(), uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&live).expect("live");

    let (http, mqtt) = (process::free_port(), process::free_port());
    let mut hub = process::serve(dir.path(), http, mqtt);
    let base = format!("http://127.0.0.1:{http}");
    common::wait_healthy(&format!("{base}/api/health")).await;
    let left = names(&scratch);
    process::signal(&mut hub, "TERM");
    assert_eq!(left, vec![live.file_name().expect("name").to_string_lossy().into_owned()], "only the live one stays");
    assert_eq!(names(&data.join("imports/uploads")), Vec::<String>::new(), "no upload is left");
}

#[tokio::test]
async fn a_wal_database_uploaded_alone_is_copied_under_the_data_dir_never_the_temp_dir() {
    let dir = tempfile::tempdir().expect("tempdir");
    let watched = dir.path().join("tmp");
    std::fs::create_dir_all(&watched).expect("tmp");
    let (http, mqtt) = (process::free_port(), process::free_port());
    let tmpdir = watched.display().to_string();
    let mut hub = process::serve_with_env(dir.path(), http, mqtt, &[("TMPDIR", &tmpdir)]);
    let base = format!("http://127.0.0.1:{http}");
    common::wait_healthy(&format!("{base}/api/health")).await;
    process::create_user(dir.path(), "ops@example.org");
    let api = login(&base, "ops@example.org").await;
    let db = peers_go::many_notes(&dir.path().join("station"), 40_000, true);
    let header = std::fs::read(&db).expect("db");
    assert_eq!((header[18], header[19]), (2, 2), "the database is in WAL mode");

    let (status, job) = upload(&base, &api, &db, &[("kind", "birdnet-go"), ("name", "Wal")]).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{job}");
    let id = job["id"].as_str().expect("id").to_owned();
    let scratch = dir.path().join("data/imports/scratch");
    let (mut in_tmp, mut in_scratch) = (Vec::new(), false);
    let deadline = Instant::now() + Duration::from_secs(120);
    let done = loop {
        in_tmp.extend(names(&watched).into_iter().filter(|n| n.starts_with("birdnet-go")));
        in_scratch |= names(&scratch).iter().any(|n| n.starts_with("birdnet-go-"));
        let (_, job) = api.get(&format!("/imports/{id}")).await;
        if job["status"] == "done" || job["status"] == "failed" {
            break job;
        }
        assert!(Instant::now() < deadline, "the import never ended: {job}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    process::signal(&mut hub, "TERM");
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["rows_added"], 40_000);
    assert_eq!(in_tmp, Vec::<String>::new(), "nothing of the import went to TMPDIR");
    assert!(in_scratch, "the copy was made under the data dir");
    assert_eq!(names(&scratch), Vec::<String>::new(), "and removed at the end");
}

/// Starts `POST /api/imports` over a raw connection declaring `length` bytes and sends only the
/// form's start and a little of the file, then holds: an upload in progress.
async fn held_upload(hub: &TestHub, token: &str, length: u64) -> tokio::net::TcpStream {
    let mut s = tokio::net::TcpStream::connect(hub.http_addr).await.expect("connect");
    let head = format!(
        "POST /api/imports HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: {length}\r\n\r\n\
         --XyZ\r\nContent-Disposition: form-data; name=\"kind\"\r\n\r\nbirdnet-go\r\n\
         --XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.db\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n",
        hub.http_addr
    );
    s.write_all(head.as_bytes()).await.expect("head");
    s.write_all(&[0u8; 64 * 1024]).await.expect("some of the file");
    s.flush().await.expect("flush");
    s
}

/// The status line and body of the answer on a raw connection.
async fn answer(s: &mut tokio::net::TcpStream) -> (u16, String) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut chunk)).await.expect("answer").unwrap_or(0);
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf);
        if n == 0 || text.contains("\r\n\r\n{") && text.trim_end().ends_with('}') {
            let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
            return (status, text.into_owned());
        }
    }
}

async fn wait_uploads(hub: &TestHub, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while names(&hub.data_dir.join("imports/uploads")).len() != n {
        assert!(Instant::now() < deadline, "uploads in progress never became {n}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn imports_of_several_teams_are_limited_on_the_hub_and_share_one_disk_budget() {
    let hub = common::spawn_hub_with(|s| {
        common::with_model(s);
        s.imports.max_upload_bytes = 1 << 40;
    })
    .await;
    for who in ["a", "b", "c"] {
        hub.user(&format!("{who}@example.org"), false).await;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let small = peers_go::legacy_station(&tmp.path().join("small"), "");
    let token_a = hub.token("a@example.org").await;
    let (b, c) = (hub.login("b@example.org").await, hub.login("c@example.org").await);

    // Team a's upload is under way: the hub's one slot (imports.max_concurrent = 1) is taken.
    let held = held_upload(&hub, &token_a, 1 << 30).await;
    wait_uploads(&hub, 1).await;
    for api in [&b, &c] {
        let (status, body) = upload(&hub.base_url, api, &small, &[("kind", "birdnet-go")]).await;
        common::assert_error(&(status, body), 503, "imports_busy");
    }
    assert_eq!(names(&hub.data_dir.join("imports/uploads")).len(), 1, "the refused uploads wrote nothing");
    drop(held);
    wait_uploads(&hub, 0).await;
    let (status, job) = upload(&hub.base_url, &b, &small, &[("kind", "birdnet-go")]).await;
    assert_eq!(status, StatusCode::ACCEPTED, "a freed slot takes the next: {job}");
    let job = wait_job(&b, job["id"].as_str().expect("id"), 60).await;
    assert_eq!(job["status"], "done", "{job}");
    drop(hub);

    // Two at a time: each upload reserves its length, and the second that would not fit beside
    // the first is refused before a byte of it is written.
    let hub = common::spawn_hub_with(|s| {
        common::with_model(s);
        s.imports.max_upload_bytes = 1 << 40;
        s.imports.max_concurrent = 2;
    })
    .await;
    hub.user("a@example.org", false).await;
    hub.user("b@example.org", false).await;
    let free = birdhub::usecases::imports::space::free(&hub.data_dir).expect("statvfs").bytes;
    let share = free / 10 * 6;
    let held = held_upload(&hub, &hub.token("a@example.org").await, share).await;
    wait_uploads(&hub, 1).await;
    let mut second = held_upload(&hub, &hub.token("b@example.org").await, share).await;
    let (status, body) = answer(&mut second).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("insufficient_storage"), "{body}");
    assert_eq!(names(&hub.data_dir.join("imports/uploads")).len(), 1, "the second wrote nothing");
    drop(held);
    wait_uploads(&hub, 0).await;
    let (status, job) =
        upload(&hub.base_url, &hub.login("b@example.org").await, &small, &[("kind", "birdnet-go")]).await;
    assert_eq!(status, StatusCode::ACCEPTED, "with the first gone it fits: {job}");
}

/// Every string in a JSON value.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

#[tokio::test]
async fn what_team_admins_read_names_the_uploaded_file_never_a_hub_path() {
    let hub = hub().await;
    hub.user("owner@example.org", false).await;
    let api = hub.login("owner@example.org").await;
    let tmp = tempfile::tempdir().expect("tmp");
    let data = std::fs::canonicalize(&hub.data_dir).expect("data").display().to_string();
    let leaks = |text: &str| {
        text.contains(&data)
            || text.contains(&hub.data_dir.display().to_string())
            || text.contains("/imports/")
            || text.contains("unpack-")
    };
    let fields = [("kind", "birdnet-go"), ("name", "Shown")];

    // A database in the archive that is no database; an archive with no database; a damaged one.
    let broken = tmp.path().join("broken.tar");
    {
        let mut b = tar::Builder::new(std::fs::File::create(&broken).expect("tar"));
        add(&mut b, "data/birdnet.db", &[0x42u8; 4096]);
        b.finish().expect("finish");
    }
    let empty = tmp.path().join("nothing.tar");
    {
        let mut b = tar::Builder::new(std::fs::File::create(&empty).expect("tar"));
        add(&mut b, "data/notes.txt", b"hello");
        b.finish().expect("finish");
    }
    let damaged = tmp.path().join("damaged.tar");
    {
        let whole = std::fs::read(&broken).expect("tar");
        let mut cut = whole[..512 + 1000].to_vec();
        cut.extend_from_slice(&[0xffu8; 300]);
        std::fs::File::create(&damaged).and_then(|mut f| f.write_all(&cut)).expect("damaged");
    }
    for (file, code, named) in [
        (&broken, "source_unreadable", "broken.tar: data/birdnet.db"),
        (&empty, "source_not_found", "nothing.tar"),
        (&damaged, "source_unreadable", "damaged.tar"),
    ] {
        let (status, body) = upload(&hub.base_url, &api, file, &fields).await;
        assert_eq!(status.as_u16(), 422, "{body}");
        assert_eq!(body["code"], code, "{body}");
        let message = body["message"].as_str().expect("message");
        assert!(!leaks(message), "{message}");
        assert!(message.contains(named), "{message}");
    }

    // A job that ran: its source is the file's name, and nothing it reports is a hub path.
    let station = tmp.path().join("station/data");
    peers_go::legacy_station(&station, "");
    let tar = tmp.path().join("my station.tar");
    peers_go::tar_dir(&station, &tar);
    let (status, job) = upload(&hub.base_url, &api, &tar, &fields).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{job}");
    assert_eq!(job["source"], "my station.tar");
    let done = wait_job(&api, job["id"].as_str().expect("id"), 60).await;
    assert_eq!(done["status"], "done", "{done}");
    let (_, list) = api.get("/imports").await;
    let mut all = Vec::new();
    strings(&list, &mut all);
    assert!(!all.is_empty());
    for s in &all {
        assert!(!leaks(s), "a hub path in GET /imports: {s}");
    }
}

#[tokio::test]
async fn a_team_name_two_teams_share_in_another_case_is_refused_with_both_ids() {
    let hub = hub().await;
    let garden = hub.user("garden@example.org", false).await;
    let shouting = hub.user("shouting@example.org", false).await;
    hub.sql(|c| {
        c.execute("UPDATE tenants SET name = 'Garden' WHERE id = ?1", [garden.tenant.to_string()]).expect("name");
        c.execute("UPDATE tenants SET name = 'GARDEN' WHERE id = ?1", [shouting.tenant.to_string()]).expect("name");
    });
    let tmp = tempfile::tempdir().expect("tmp");
    let station = tmp.path().join("data");
    peers_go::legacy_station(&station, "");
    let import = |team: &str| {
        Command::new(process::BIN)
            .arg("--data-dir")
            .arg(&hub.data_dir)
            .args(["import", "birdnet-go"])
            .arg(&station)
            .args(["--team", team])
            .env("BIRDHUB_INFERENCE__MODEL_DIR", model_dir())
            .env("BIRDHUB_LOG_LEVEL", "warn")
            .output()
            .expect("birdhub import")
    };

    let out = import("Garden");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{err}");
    assert!(err.contains(&garden.tenant.to_string()) && err.contains(&shouting.tenant.to_string()), "{err}");
    let jobs: i64 = hub.sql(|c| c.query_row("SELECT COUNT(*) FROM imports", [], |r| r.get(0)).expect("n"));
    assert_eq!(jobs, 0, "nothing was imported");

    let out = import(&garden.tenant.to_string());
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains(&format!("team: Garden (id {})", garden.tenant)), "{said}");
    let team: String = hub.sql(|c| c.query_row("SELECT tenant_id FROM imports", [], |r| r.get(0)).expect("job"));
    assert_eq!(team, garden.tenant.to_string());
}
