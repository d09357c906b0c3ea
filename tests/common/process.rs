//! The real `birdhub` binary as a child process, for tests that SIGKILL and restart it.

use std::{
    net::TcpListener,
    path::Path,
    process::{Child, Command, Stdio},
};

pub const BIN: &str = env!("CARGO_BIN_EXE_birdhub");

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// `birdhub serve` on `dir/data` with the real model, HTTP and MQTT on the given ports.
pub fn serve(dir: &Path, http: u16, mqtt: u16) -> Child {
    serve_with_env(dir, http, mqtt, &[])
}

/// [`serve`] with more environment variables.
pub fn serve_with_env(dir: &Path, http: u16, mqtt: u16, env: &[(&str, &str)]) -> Child {
    let model = birdhub::inference::ModelDir::locate("").expect("model (run models/fetch.sh)");
    std::fs::write(dir.join("empty.toml"), "").expect("config");
    Command::new(BIN)
        .args(["serve", "--config"])
        .arg(dir.join("empty.toml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(["--http-bind", &format!("127.0.0.1:{http}"), "--mqtt-bind", &format!("127.0.0.1:{mqtt}")])
        .env("BIRDHUB_MQTT__WS_BIND", "127.0.0.1:0")
        .env("BIRDHUB_INFERENCE__MODEL_DIR", &model.path)
        .env("BIRDHUB_LOG_LEVEL", "warn")
        // Audio retention is not what these tests are about (tests/retention.rs sets its own):
        // their fixed recording dates are months old.
        .env("BIRDHUB_RETENTION__MIN_FREE_DISK_MB", "0")
        .env("BIRDHUB_RETENTION__KEEP_AUDIO_DAYS", "36500")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn hub")
}

/// `birdhub admin create-user` for `email` (password [`super::PASSWORD`]) on the hub's data.
pub fn create_user(dir: &Path, email: &str) {
    let status = Command::new(BIN)
        .args(["admin", "create-user", "--email", email, "--name", "Ops", "--password", super::PASSWORD, "--config"])
        .arg(dir.join("empty.toml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .status()
        .expect("create user");
    assert!(status.success(), "create-user {email}");
}

/// Sends `signal` (`KILL`, `TERM`) to the hub and reaps it.
pub fn signal(hub: &mut Child, signal: &str) {
    Command::new("kill").args([&format!("-{signal}"), &hub.id().to_string()]).status().expect("kill");
    hub.wait().expect("reap");
}
