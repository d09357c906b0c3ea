//! Setting up and updating a satellite without the dashboard's guesswork (issue 36, defects 19,
//! 23 and 24), with the real `birdhub` binary:
//! - `birdhub satellite register` without a terminal names `--password` and `BIRDHUB_PASSWORD`,
//!   and `--help` shows both;
//! - a hand-written `satellite.toml` with only what the hub's registration answer holds (no
//!   `device_id`) runs `birdhub satellite run`, which connects and reports;
//! - the hub refuses to "update" a satellite to the version it runs (409 `already_up_to_date`);
//! - a failing update command is reported in the heartbeat: the hub shows `failed` with the
//!   command's exit status and last lines, and those lines are in the device's logs.

mod common;

use std::{
    path::Path,
    process::{Command, Stdio},
    time::Duration,
};

use common::{assert_error, process::BIN, sat};
use serde_json::{Value, json};

/// Polls the satellite until `ok` holds (at most `secs` seconds).
async fn wait_satellite(api: &common::Api, id: &str, secs: u64, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let until = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let (_, v) = api.get(&format!("/satellites/{id}")).await;
        if ok(&v) {
            return v;
        }
        assert!(tokio::time::Instant::now() < until, "{what} never happened: {v}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[test]
fn register_without_a_terminal_names_the_flag_and_the_variable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(BIN)
        .args(["satellite", "register", "--hub", "http://127.0.0.1:9", "--email", "ada@example.org", "--config"])
        .arg(dir.path().join("satellite.toml"))
        .env_remove("BIRDHUB_PASSWORD")
        .env_remove("BIRDHUB_API_KEY")
        .stdin(Stdio::null())
        .output()
        .expect("run register");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "no password, no terminal: {err}");
    assert!(err.contains("--password") && err.contains("BIRDHUB_PASSWORD"), "names both ways to give it: {err}");
    assert!(!err.contains("Password:is"), "{err}");

    let help = Command::new(BIN).args(["satellite", "register", "--help"]).output().expect("help");
    let text = String::from_utf8_lossy(&help.stdout);
    for shown in ["--password", "BIRDHUB_PASSWORD", "--totp", "BIRDHUB_TOTP", "--email", "--api-key"] {
        assert!(text.contains(shown), "--help shows {shown}: {text}");
    }
}

/// The smallest config a person writes by hand from the registration answer: no `device_id`,
/// no data dir, unit or commands (their defaults), a folder as the microphone.
fn minimal_config(hub: &common::TestHub, reg: &Value, recordings: &Path, extra: &str) -> String {
    let q = |v: &Value| serde_json::to_string(v).expect("string");
    format!(
        "hub_url = {hub_url}\nmqtt_host = \"127.0.0.1\"\nmqtt_port = {port}\nsatellite_id = {id}\ntenant_id = {tenant}\n\
         name = {name}\nmqtt_password = {password}\napi_key = {key}\ntopic_root = \"{root}\"\nsource = \"dir:{dir}\"\n{extra}",
        hub_url = q(&json!(hub.base_url)),
        port = hub.mqtt_port,
        id = q(&reg["id"]),
        tenant = q(&reg["tenantId"]),
        name = q(&reg["name"]),
        password = q(&reg["mqtt"]["password"]),
        key = q(&reg["apiKey"]),
        root = reg["mqtt"]["topicPrefix"].as_str().and_then(|p| p.split('/').next()).expect("prefix"),
        dir = recordings.display(),
    )
}

#[tokio::test]
async fn a_hand_written_config_runs_and_a_failed_update_is_reported_with_its_output() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let (status, reg) = api.post("/satellites", json!({"name": "Hedge Pi"})).await;
    assert_eq!(status, 201, "{reg}");
    let id = reg["id"].as_str().expect("id").to_owned();

    let dir = tempfile::tempdir().expect("tempdir");
    let recordings = dir.path().join("recordings");
    std::fs::create_dir_all(&recordings).expect("recordings");
    let version_file = dir.path().join("installed-version");
    std::fs::write(&version_file, "birdhub 0.1.0\n").expect("version");
    let log = dir.path().join("satellite.log");
    let extra = format!(
        "version_command = \"cat {v}\"\nupdate_command = \"echo 'Reading package lists'; echo 'E: Unable to locate package birdhub' >&2; exit 100\"\n\
         log_file = \"{log}\"\n",
        v = version_file.display(),
        log = log.display(),
    );
    let config = dir.path().join("satellite.toml");
    std::fs::write(&config, minimal_config(&hub, &reg, &recordings, &extra)).expect("config");
    let log_out = std::fs::OpenOptions::new().create(true).append(true).open(&log).expect("log");
    let mut child = Command::new(BIN)
        .args(["satellite", "run", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .env("RUST_LOG", "info,rumqttc=warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log_out))
        .spawn()
        .expect("spawn satellite");
    let guard = scopeguard(&mut child);

    // It loads without device_id, connects and reports its version in a heartbeat.
    let v = wait_satellite(&api, &id, 30, "the first heartbeat", |v| v["version"] == "0.1.0").await;
    assert_eq!((v["is_online"].clone(), v["heartbeat_state"].clone()), (json!(true), json!("recording")), "{v}");

    // The version it runs is no update: refused, whether named or as the default.
    let path = format!("/satellites/{id}/update");
    assert_error(&api.post(&path, json!({"targetVersion": "0.1.0"})).await, 409, "already_up_to_date");
    assert_error(&api.post(&path, json!({})).await, 409, "already_up_to_date");
    let (_, after) = api.get(&format!("/satellites/{id}")).await;
    assert_eq!(after["update_status"], Value::Null, "nothing was asked of the device: {after}");

    // A newer version whose update command fails: the heartbeat says so, with the command's lines.
    let (status, body) = api.post(&path, json!({"targetVersion": "0.2.0"})).await;
    assert_eq!(status, 202, "{body}");
    let failed = wait_satellite(&api, &id, 30, "the failed update's report", |v| v["update_status"] == "failed").await;
    let why = failed["update_error"].as_str().unwrap_or_default();
    assert!(why.contains("100") && why.contains("Unable to locate package birdhub"), "{failed}");
    assert_eq!((failed["target_version"].clone(), failed["version"].clone()), (json!("0.2.0"), json!("0.1.0")));

    // The command's last lines are in the device's logs, as the logs view reads them.
    let (status, logs) = api.post(&format!("/satellites/{id}/logs/request?wait=10"), json!({"tail": 200})).await;
    assert_eq!(status, 200, "{logs}");
    let text = logs["lines"].as_array().map(|l| l.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n"));
    let text = text.unwrap_or_default();
    assert!(text.contains("Unable to locate package birdhub") && text.contains("update command failed"), "{text}");

    // A new request starts clean: the old reason is gone until the device reports again.
    assert_eq!(api.post(&path, json!({"targetVersion": "0.2.1"})).await.0, 202);
    let (_, again) = api.get(&format!("/satellites/{id}")).await;
    assert_eq!((again["update_status"].clone(), again["update_error"].clone()), (json!("updating"), Value::Null));
    drop(guard);
}

#[tokio::test]
async fn a_failed_update_report_in_a_heartbeat_marks_only_the_pending_target() {
    let hub = common::spawn_hub().await;
    let owner = hub.user("owner@example.org", false).await;
    let api = hub.login(&owner.email).await;
    let r = sat::register(&api, json!({"name": "Pond Pi"})).await;
    let c = sat::connect(&hub, &r).await;
    let detail = format!("/satellites/{}", r.id);
    let beat = |update: Value| {
        json!({"satelliteId": r.id, "tenantId": r.tenant, "state": "recording", "version": "1.0.0", "update": update})
            .to_string()
    };
    c.publish(&r.topic("heartbeat"), beat(Value::Null)).await;
    wait_satellite(&api, &r.id, 10, "the heartbeat", |v| v["version"] == "1.0.0").await;
    assert_eq!(api.post(&format!("{detail}/update"), json!({"targetVersion": "1.1.0"})).await.0, 202);

    // A stale report about another version, and a malformed one, change nothing.
    let stale = json!({"targetVersion": "0.9.0", "status": "failed", "exitCode": 1, "message": "old"});
    c.publish(&r.topic("heartbeat"), beat(stale)).await;
    c.publish(&r.topic("heartbeat"), beat(json!({"status": 7}))).await;
    c.publish(&r.topic("heartbeat"), json!({"satelliteId": r.id, "tenantId": r.tenant, "state": "paused"}).to_string())
        .await;
    let v = wait_satellite(&api, &r.id, 10, "the last heartbeat", |v| v["heartbeat_state"] == "paused").await;
    assert_eq!((v["update_status"].clone(), v["update_error"].clone()), (json!("updating"), Value::Null), "{v}");

    // The report for the pending target: failed, with the exit status when there is no message.
    c.publish(&r.topic("heartbeat"), beat(json!({"targetVersion": "1.1.0", "status": "failed", "exitCode": 3}))).await;
    let v = wait_satellite(&api, &r.id, 10, "the failure", |v| v["update_status"] == "failed").await;
    assert_eq!(v["update_error"], "the update command failed (exit status 3)", "{v}");

    // Running the target clears it all.
    let done = json!({"satelliteId": r.id, "tenantId": r.tenant, "state": "recording", "version": "1.1.0"});
    c.publish(&r.topic("heartbeat"), done.to_string()).await;
    let v = wait_satellite(&api, &r.id, 10, "the new version", |v| v["version"] == "1.1.0").await;
    assert_eq!((v["update_status"].clone(), v["update_error"].clone()), (Value::Null, Value::Null), "{v}");
}

/// Kills the satellite process when the test ends, pass or fail.
struct Reaper<'a>(&'a mut std::process::Child);

impl Drop for Reaper<'_> {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn scopeguard(child: &mut std::process::Child) -> Reaper<'_> {
    Reaper(child)
}
