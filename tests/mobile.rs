//! Mobile app releases (SPEC 2.14, 4.11) and `GET /system/versions` (SPEC 2.21) over real HTTP:
//! APKs built here with a ZIP writer are uploaded as multipart forms, checked (digest, size, what
//! is an APK, versions), offered by SemVer, downloaded whole and by range, flagged and deleted;
//! oversize and cut-off uploads leave no file and no row.

mod common;

use std::{io::Write, path::PathBuf, time::Duration};

use common::{Api, TestHub, assert_error};
use reqwest::{
    StatusCode,
    multipart::{Form, Part},
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const APK_TYPE: &str = "application/vnd.android.package-archive";

/// A ZIP shaped like an APK: a manifest at the root and `payload` bytes of "code" (stored, so the
/// file is about as big as asked).
fn apk(payload: usize) -> Vec<u8> {
    zip_with(&["AndroidManifest.xml", "classes.dex"], payload)
}

fn zip_with(names: &[&str], payload: usize) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let mut seed = 0x2545_f491_u32;
    for name in names {
        w.start_file(*name, stored).expect("entry");
        let bytes: Vec<u8> = if name.ends_with(".xml") {
            b"<manifest package=\"org.birdhub.app\"/>".to_vec()
        } else {
            (0..payload)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    seed as u8
                })
                .collect()
        };
        w.write_all(&bytes).expect("write");
    }
    w.finish().expect("finish").into_inner()
}

fn hex_sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Posts a multipart form to `/mobile/upload` with the client's credentials.
async fn upload(api: &Api, form: Form) -> (StatusCode, Value) {
    let mut req = api.client.post(format!("{}/api/mobile/upload", api.base)).multipart(form);
    if let Some(b) = &api.bearer {
        req = req.bearer_auth(b);
    }
    let resp = req.send().await.expect("upload");
    let status = resp.status();
    let text = resp.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// The usual form, with the version sent after the file.
fn form(bytes: &[u8], version: &str, notes: &str, force: bool) -> Form {
    Form::new()
        .part("apk", Part::bytes(bytes.to_vec()).file_name("birdhub.apk").mime_str(APK_TYPE).expect("mime"))
        .text("notes", notes.to_owned())
        .text("forceUpdate", force.to_string())
        .text("version", version.to_owned())
}

async fn release(api: &Api, bytes: &[u8], version: &str) -> Value {
    let (status, body) = upload(api, form(bytes, version, &format!("notes of {version}"), false)).await;
    assert_eq!(status, 201, "{version}: {body}");
    body
}

fn apk_dir(hub: &TestHub) -> PathBuf {
    hub.data_dir.join("objects").join("apks")
}

fn files_in(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

fn rows(hub: &TestHub) -> i64 {
    hub.sql(|c| c.query_row("SELECT count(*) FROM mobile_releases", [], |r| r.get(0)).expect("count"))
}

/// Nothing half-written anywhere: no temp file, `apks` files exactly as many as rows.
#[track_caller]
fn assert_clean(hub: &TestHub, releases: i64) {
    assert_eq!(rows(hub), releases, "release rows");
    assert_eq!(files_in(&apk_dir(hub)) as i64, releases, "APK files on disk");
    assert_eq!(files_in(&hub.data_dir.join("objects").join(".tmp")), 0, "no temp files left");
}

async fn get_raw(hub: &TestHub, path: &str, range: Option<&str>) -> reqwest::Response {
    let mut req = reqwest::Client::new().get(hub.api(path));
    if let Some(r) = range {
        req = req.header("range", r);
    }
    req.send().await.expect("get")
}

#[tokio::test]
async fn an_uploaded_apk_is_offered_by_semver_downloaded_by_range_flagged_and_deleted() {
    let hub = common::spawn_hub().await;
    hub.user("root@example.org", true).await;
    let admin = hub.login("root@example.org").await;
    assert_eq!(admin.get("/mobile/releases").await.1["releases"], json!([]));
    let none = hub.anon().get("/mobile/latest?currentVersion=1.0.0").await;
    assert_eq!(none.0, 200, "no release yet is an answer, not an error: {}", none.1);
    assert_eq!(none.1["updateAvailable"], false);
    assert_eq!(none.1["version"], Value::Null);

    let old = apk(50_000);
    let big = apk(300_000);
    let hotfix = apk(20_000);
    let first = release(&admin, &old, "1.0.0").await;
    let created = release(&admin, &big, "1.2.0").await;
    // Uploaded last but lower: the latest stays 1.2.0.
    release(&admin, &hotfix, "1.1.5").await;
    assert_eq!(created["sha256"], hex_sha256(&big));
    assert_eq!(created["fileSize"], big.len());
    assert_eq!(created["version"], "1.2.0");
    assert_eq!(created["notes"], "notes of 1.2.0");
    assert_eq!(created["forceUpdate"], false);
    let id = created["id"].as_str().expect("id").to_owned();
    let on_disk = std::fs::read(apk_dir(&hub).join(format!("{id}.apk"))).expect("the APK is on disk");
    assert_eq!(on_disk, big);
    assert_clean(&hub, 3);

    for (current, available) in [
        ("", true),
        ("0.9.0", true),
        ("1.0.0", true),
        ("1.1.5", true),
        ("1.2.0-rc.1", true),
        ("1.2.0", false),
        ("1.2.0%2Bbuild.7", false),
        ("1.10.0", false),
    ] {
        let (status, latest) = hub.anon().get(&format!("/mobile/latest?currentVersion={current}")).await;
        assert_eq!(status, 200, "{current}: {latest}");
        assert_eq!(latest["updateAvailable"], available, "currentVersion {current:?}: {latest}");
        assert_eq!(latest["version"], "1.2.0", "the highest SemVer, not the newest upload");
        assert_eq!((latest["sha256"].clone(), latest["fileSize"].clone()), (json!(hex_sha256(&big)), json!(big.len())));
        assert_eq!(latest["notes"], "notes of 1.2.0");
        assert_eq!(latest["forceUpdate"], false);
        assert!(latest["downloadUrl"].as_str().expect("url").ends_with(&format!("/api/mobile/download/{id}")));
    }
    for bad in ["1.2", "v1.2.0", "latest"] {
        let got = hub.anon().get(&format!("/mobile/latest?currentVersion={bad}")).await;
        assert_error(&got, 422, "invalid_current_version");
    }

    // Download: whole, one range, and a range past the end.
    let path = format!("/mobile/download/{id}");
    let whole = get_raw(&hub, &path, None).await;
    assert_eq!(whole.status(), 200);
    assert_eq!(whole.headers()["content-type"], APK_TYPE);
    assert_eq!(whole.headers()["accept-ranges"], "bytes");
    assert_eq!(whole.headers()["content-disposition"], "attachment; filename=\"birdhub-1.2.0.apk\"");
    assert_eq!(whole.bytes().await.expect("bytes").to_vec(), big);
    let part = get_raw(&hub, &path, Some("bytes=1000-65535")).await;
    assert_eq!(part.status(), 206);
    assert_eq!(part.headers()["content-range"], format!("bytes 1000-65535/{}", big.len()));
    assert_eq!(part.bytes().await.expect("bytes").to_vec(), big[1000..65536]);
    let tail = get_raw(&hub, &path, Some("bytes=-100")).await;
    assert_eq!(tail.status(), 206);
    assert_eq!(tail.bytes().await.expect("bytes").to_vec(), big[big.len() - 100..]);
    let past = get_raw(&hub, &path, Some(&format!("bytes={}-", big.len() + 10))).await;
    assert_eq!(past.status(), 416);
    assert_eq!(past.headers()["content-range"], format!("bytes */{}", big.len()));
    assert_error(
        &hub.anon().get(&format!("/mobile/download/{}", uuid::Uuid::new_v4())).await,
        404,
        "release_not_found",
    );

    // Force update: no body toggles, a body sets; an app that skipped a forced release must update.
    let hotfix_id = admin.get("/mobile/releases").await.1["releases"][0]["id"].as_str().expect("id").to_owned();
    let resp = admin.client.put(hub.api(&format!("/mobile/releases/{hotfix_id}"))).send().await.expect("put");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.json::<Value>().await.expect("json")["forceUpdate"], true, "toggled on");
    let latest = hub.anon().get("/mobile/latest?currentVersion=1.0.0").await.1;
    assert_eq!((latest["version"].clone(), latest["forceUpdate"].clone()), (json!("1.2.0"), json!(true)));
    let latest = hub.anon().get("/mobile/latest?currentVersion=1.1.5").await.1;
    assert_eq!(latest["forceUpdate"], false, "the forced release is already installed");
    let (status, flagged) = admin.put(&format!("/mobile/releases/{hotfix_id}"), json!({"forceUpdate": true})).await;
    assert_eq!((status, flagged["forceUpdate"].clone()), (StatusCode::OK, json!(true)), "set, not toggled");
    let resp = admin.client.put(hub.api(&format!("/mobile/releases/{hotfix_id}"))).send().await.expect("put");
    assert_eq!(resp.json::<Value>().await.expect("json")["forceUpdate"], false, "toggled off");
    assert_error(
        &admin.put(&format!("/mobile/releases/{hotfix_id}"), json!({"forceUpdate": "yes"})).await,
        422,
        "invalid_body",
    );
    let missing = format!("/mobile/releases/{}", uuid::Uuid::new_v4());
    assert_error(&admin.put(&missing, json!({"forceUpdate": true})).await, 404, "release_not_found");

    // The list: newest upload first.
    let list = admin.get("/mobile/releases").await.1;
    let versions: Vec<&str> =
        list["releases"].as_array().expect("list").iter().map(|r| r["version"].as_str().expect("v")).collect();
    assert_eq!(versions, ["1.1.5", "1.2.0", "1.0.0"]);

    // Delete: the file goes with the row, and the latest falls back to the next highest.
    let (status, _) = admin.delete(&format!("/mobile/releases/{id}")).await;
    assert_eq!(status, 204);
    assert!(!apk_dir(&hub).join(format!("{id}.apk")).exists(), "the APK is gone from disk");
    assert_clean(&hub, 2);
    assert_eq!(hub.anon().get("/mobile/latest").await.1["version"], "1.1.5");
    assert_error(&admin.delete(&format!("/mobile/releases/{id}")).await, 404, "release_not_found");
    assert_eq!(get_raw(&hub, &path, None).await.status(), 404);
    assert_eq!(first["version"], "1.0.0");
}

#[tokio::test]
async fn refused_uploads_leave_no_file_and_no_row() {
    let hub = common::spawn_hub().await;
    hub.user("root@example.org", true).await;
    let owner = hub.user("owner@example.org", false).await;
    let admin = hub.login("root@example.org").await;
    let team_admin = hub.login(&owner.email).await;
    let bytes = apk(10_000);
    release(&admin, &bytes, "2.0.0").await;

    assert_error(&upload(&team_admin, form(&bytes, "2.1.0", "", false)).await, 403, "platform_admin_required");
    assert_error(&upload(&hub.anon(), form(&bytes, "2.1.0", "", false)).await, 401, "unauthenticated");
    for role_only in ["/mobile/releases", "/mobile/releases"] {
        assert_error(&team_admin.get(role_only).await, 403, "platform_admin_required");
    }
    let id = admin.get("/mobile/releases").await.1["releases"][0]["id"].as_str().expect("id").to_owned();
    assert_error(&team_admin.delete(&format!("/mobile/releases/{id}")).await, 403, "platform_admin_required");
    assert_error(&team_admin.put(&format!("/mobile/releases/{id}"), json!({})).await, 403, "platform_admin_required");

    assert_error(&upload(&admin, form(&bytes, "2.0.0", "", false)).await, 409, "version_taken");
    assert_error(&upload(&admin, form(&bytes, "2.0.0+rebuild", "", false)).await, 409, "version_taken");
    let no_manifest = zip_with(&["classes.dex", "res/AndroidManifest.xml"], 5_000);
    assert_error(&upload(&admin, form(&no_manifest, "2.1.0", "", false)).await, 422, "not_an_apk");
    assert_error(&upload(&admin, form(b"just some text, not a zip", "2.1.0", "", false)).await, 422, "not_an_apk");
    assert_error(&upload(&admin, form(&[], "2.1.0", "", false)).await, 422, "not_an_apk");
    assert_error(&upload(&admin, form(&bytes, "2.1", "", false)).await, 422, "invalid_version");
    assert_error(&upload(&admin, form(&bytes, "", "", false)).await, 422, "version_missing");
    let no_file = Form::new().text("version", "2.1.0");
    assert_error(&upload(&admin, no_file).await, 422, "apk_missing");
    let flag = form(&bytes, "2.1.0", "", false).text("forceUpdate", "maybe");
    assert_error(&upload(&admin, flag).await, 422, "duplicate_field");
    let odd = Form::new().text("forceUpdate", "maybe").text("version", "2.1.0").part("apk", Part::bytes(bytes.clone()));
    assert_error(&upload(&admin, odd).await, 422, "invalid_force_update");
    let extra = form(&bytes, "2.1.0", "", false).text("channel", "beta");
    assert_error(&upload(&admin, extra).await, 422, "unknown_field");
    let json_body = admin.post("/mobile/upload", json!({"version": "2.1.0"})).await;
    assert_error(&json_body, 400, "invalid_multipart");
    assert_clean(&hub, 1);

    // Fields in another order (version first, no notes) are fine.
    let reordered = Form::new().text("version", "2.1.0").part("apk", Part::bytes(bytes.clone()).file_name("a.apk"));
    let (status, body) = upload(&admin, reordered).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!((body["notes"].clone(), body["forceUpdate"].clone()), (Value::Null, json!(false)));
    assert_clean(&hub, 2);
}

#[tokio::test]
async fn an_upload_over_the_limit_is_413_and_leaves_nothing() {
    let hub = common::spawn_hub_with(|s| s.releases.max_apk_bytes = 64 * 1024).await;
    hub.user("root@example.org", true).await;
    let admin = hub.login("root@example.org").await;

    // Streamed past the limit: the form itself is under the route's body limit, the APK is not.
    let over = apk(80 * 1024);
    let got = upload(&admin, form(&over, "1.0.0", "", false)).await;
    assert_error(&got, 413, "payload_too_large");
    assert_clean(&hub, 0);

    // Declared too large: refused from the headers before the body is read (curl's 100-continue).
    let token = hub.token("root@example.org").await;
    let head = format!(
        "POST /api/mobile/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: multipart/form-data; boundary=B\r\nContent-Length: 50000000\r\nExpect: 100-continue\r\n\r\n"
    );
    let mut sock = tokio::net::TcpStream::connect(hub.http_addr).await.expect("connect");
    sock.write_all(head.as_bytes()).await.expect("write");
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut answer)).await.expect("answer").expect("read");
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("payload_too_large"), "{answer}");

    // Just under the limit goes through.
    let fits = apk(60 * 1024);
    assert!(fits.len() < 64 * 1024);
    release(&admin, &fits, "1.0.0").await;
    assert_clean(&hub, 1);
}

#[tokio::test]
async fn an_upload_cut_off_halfway_leaves_no_file_and_no_row() {
    let hub = common::spawn_hub().await;
    hub.user("root@example.org", true).await;
    let token = hub.token("root@example.org").await;
    let bytes = apk(400_000);
    let half = &bytes[..bytes.len() / 2];
    let prefix = "--B\r\nContent-Disposition: form-data; name=\"version\"\r\n\r\n1.0.0\r\n\
                  --B\r\nContent-Disposition: form-data; name=\"apk\"; filename=\"a.apk\"\r\n\
                  Content-Type: application/vnd.android.package-archive\r\n\r\n";
    let length = prefix.len() + bytes.len() + "\r\n--B--\r\n".len();
    let head = format!(
        "POST /api/mobile/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: multipart/form-data; boundary=B\r\nContent-Length: {length}\r\n\r\n"
    );
    let mut sock = tokio::net::TcpStream::connect(hub.http_addr).await.expect("connect");
    sock.write_all(head.as_bytes()).await.expect("head");
    sock.write_all(prefix.as_bytes()).await.expect("prefix");
    sock.write_all(half).await.expect("half the file");
    sock.flush().await.expect("flush");

    // The hub is writing the APK to a temp file ...
    let tmp = hub.data_dir.join("objects").join(".tmp");
    let mut started = false;
    for _ in 0..200 {
        if files_in(&tmp) > 0 {
            started = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(started, "the upload started streaming to disk");
    // ... when the client goes away.
    drop(sock);
    let mut cleaned = false;
    for _ in 0..400 {
        if files_in(&tmp) == 0 {
            cleaned = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(cleaned, "the temp file of the cut-off upload was removed");
    assert_clean(&hub, 0);

    // The hub is fine: a whole upload right after works.
    let admin = hub.login("root@example.org").await;
    release(&admin, &bytes, "1.0.0").await;
    assert_clean(&hub, 1);
}

async fn heartbeat(hub: &TestHub, api: &Api, name: &str, kind: &str, version: &str) {
    let r = common::sat::register(api, json!({"name": name, "kind": kind})).await;
    let c = common::sat::connect(hub, &r).await;
    let hb = json!({"satelliteId": r.id, "tenantId": r.tenant, "uptimeSeconds": 60, "state": "recording",
                    "noiseFloorRms": 0.01, "version": version, "stream": kind, "timestamp": "2026-05-15T06:30:00Z"});
    c.publish(&r.topic("heartbeat"), hb.to_string()).await;
    for _ in 0..200 {
        if api.get(&format!("/satellites/{}", r.id)).await.1["version"] == version {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the heartbeat of {name} was not stored");
}

#[tokio::test]
async fn system_versions_name_the_latest_of_each_stream() {
    let hub = common::spawn_hub_with(|s| s.releases.hub_version = "0.0.1".into()).await;
    hub.user("root@example.org", true).await;
    let owner = hub.user("owner@example.org", false).await;
    let other = hub.user("other@example.org", false).await;
    let viewer = hub.member_of("viewer@example.org", owner.tenant, birdhub::domain::Role::Viewer).await;
    let (owner_api, other_api, view) =
        (hub.login(&owner.email).await, hub.login(&other.email).await, hub.login(&viewer.email).await);

    assert_error(&hub.anon().get("/system/versions").await, 401, "unauthenticated");
    let (status, v) = view.get("/system/versions").await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        v,
        json!({"hub": env!("CARGO_PKG_VERSION"), "satellite": null, "mobile": null}),
        "a configured hub release older than this binary does not win"
    );

    heartbeat(&hub, &owner_api, "garden", "satellite", "1.9.0").await;
    heartbeat(&hub, &other_api, "meadow", "satellite", "1.10.0").await;
    heartbeat(&hub, &owner_api, "phone", "mobile", "7.0.0").await;
    let admin = hub.login("root@example.org").await;
    release(&admin, &apk(1_000), "3.1.0").await;
    release(&admin, &apk(1_000), "3.0.9").await;
    let v = view.get("/system/versions").await.1;
    assert_eq!(v["satellite"], "1.10.0", "SemVer order (1.10 > 1.9), from any team, satellites' stream only: {v}");
    assert_eq!(v["mobile"], "3.1.0", "the highest APK release: {v}");
    drop(hub);

    // Configured releases: a newer hub than this binary, and a satellite release beyond the fleet's.
    let hub = common::spawn_hub_with(|s| {
        s.releases.hub_version = "99.1.0".into();
        s.releases.satellite_version = "2.0.0".into();
    })
    .await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    heartbeat(&hub, &api, "garden", "satellite", "1.10.0").await;
    assert_eq!(api.get("/system/versions").await.1, json!({"hub": "99.1.0", "satellite": "2.0.0", "mobile": null}));
}
