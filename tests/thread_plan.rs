//! Threads that fit the machine (issue 50): the real `birdhub serve`, pinned to one core with
//! `taskset -c 0`, plans for that core and not the machine's: one worker, one ONNX Runtime
//! session of one thread, one front-end thread, said once in its log; `GET /api/workers` lists
//! one worker.

mod common;

use std::{
    process::{Command, Stdio},
    time::Duration,
};

use common::process;
use serde_json::json;

#[tokio::test]
async fn a_hub_pinned_to_one_core_runs_one_worker_on_one_thread() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (http, mqtt) = (process::free_port(), process::free_port());
    let model = birdhub::inference::ModelDir::locate("").expect("model (run models/fetch.sh)");
    std::fs::write(dir.path().join("empty.toml"), "").expect("config");
    let log_path = dir.path().join("hub.log");
    let mut hub = Command::new("taskset")
        .args(["-c", "0", process::BIN, "serve", "--config"])
        .arg(dir.path().join("empty.toml"))
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(["--http-bind", &format!("127.0.0.1:{http}"), "--mqtt-bind", &format!("127.0.0.1:{mqtt}")])
        .env("BIRDHUB_MQTT__WS_BIND", "127.0.0.1:0")
        .env("BIRDHUB_INFERENCE__MODEL_DIR", &model.path)
        .env("BIRDHUB_LOG_LEVEL", "info")
        .env_remove("RUST_LOG")
        .env_remove("JOURNAL_STREAM")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path).expect("log file"))
        .spawn()
        .expect("taskset (util-linux) and the hub");
    common::wait_healthy(&format!("http://127.0.0.1:{http}/api/health")).await;
    process::create_user(dir.path(), "ops@example.org");
    let api = common::Api::new(&format!("http://127.0.0.1:{http}"));
    assert_eq!(api.post("/auth/login", json!({"email": "ops@example.org", "password": common::PASSWORD})).await.0, 200);

    // The workers appear once the model is loaded.
    let mut listed = json!(null);
    for _ in 0..300 {
        let (status, body) = api.get("/workers").await;
        assert_eq!(status, 200, "{body}");
        listed = body;
        if listed["workers"].as_array().is_some_and(|w| !w.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    process::signal(&mut hub, "TERM");

    let workers = listed["workers"].as_array().cloned().unwrap_or_default();
    assert_eq!(workers.len(), 1, "one worker on one core: {listed}\n{log}");
    let plans: Vec<&str> = log.lines().filter(|l| l.contains("inference threads:")).collect();
    assert_eq!(plans.len(), 1, "the plan is logged once: {log}");
    assert!(
        plans[0].contains("1 worker x 1 front-end thread, ONNX Runtime 1 session x 1 intra-op thread, batch 8"),
        "{}",
        plans[0]
    );
    assert!(plans[0].contains("INFO"), "one worker on one core is no warning: {}", plans[0]);
    let machine = std::thread::available_parallelism().map_or(1, |n| n.get());
    if machine > 1 {
        assert!(plans[0].contains("affinity allows CPUs 0"), "the reason names the pinning: {}", plans[0]);
    }
}
