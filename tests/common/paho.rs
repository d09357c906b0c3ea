//! Python's paho-mqtt (2.x), the client library of real satellites, driven by
//! `tests/fixtures/paho_client.py`. `.ci/run` installs it into a venv under
//! `${BIRDHUB_CACHE:-$HOME/.cache/birdhub}/venv-paho`; `BIRDHUB_PAHO_PYTHON` names another
//! interpreter. A missing paho fails the test: it is never skipped.

use std::{path::PathBuf, process::Stdio, time::Duration};

use serde_json::{Value, json};

use super::{TestHub, sat::Registered};

/// The Python interpreter that has paho-mqtt; panics with the fix when there is none.
pub fn python() -> PathBuf {
    let python = match std::env::var_os("BIRDHUB_PAHO_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => {
            let cache = std::env::var_os("BIRDHUB_CACHE")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/birdhub"));
            cache.join("venv-paho/bin/python")
        }
    };
    let works = std::process::Command::new(&python)
        .args(["-c", "import paho.mqtt.client, paho.mqtt.enums"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        works,
        "paho-mqtt 2.x is missing at {} : run .ci/run (it creates that venv: python3 -m venv ... && pip install \
         'paho-mqtt>=2,<3'), or set BIRDHUB_PAHO_PYTHON to a python that has it",
        python.display()
    );
    python
}

/// The protocol a paho client speaks.
#[derive(Debug, Clone, Copy)]
pub enum Protocol {
    V311,
    V5,
}

/// What one run of the scripted client printed.
#[derive(Debug)]
pub struct Run {
    /// Every event line, in order.
    pub events: Vec<Value>,
    pub stderr: String,
}

impl Run {
    /// The final `done` event.
    pub fn done(&self) -> &Value {
        self.events.iter().rev().find(|e| e["event"] == "done").unwrap_or_else(|| panic!("paho never finished: {self}"))
    }

    /// Whether every step passed.
    pub fn ok(&self) -> bool {
        self.done()["ok"] == true
    }

    /// How many times the client connected (1 = it never had to reconnect).
    pub fn connects(&self) -> i64 {
        self.done()["connects"].as_i64().unwrap_or(-1)
    }

    /// The events named `name`.
    pub fn all(&self, name: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["event"] == name).collect()
    }

    /// The bodies of the messages received on `topic`.
    pub fn messages_on(&self, topic: &str) -> Vec<&Value> {
        self.all("message").into_iter().filter(|e| e["topic"] == topic).map(|e| &e["body"]).collect()
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for e in &self.events {
            writeln!(f, "{e}")?;
        }
        write!(f, "stderr: {}", self.stderr)
    }
}

/// Runs the scripted client as satellite `r` (client id `satellite-{id}`) through `steps`
/// (see `tests/fixtures/paho_client.py`), and returns what it saw.
pub async fn run(hub: &TestHub, r: &Registered, protocol: Protocol, steps: Vec<Value>) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    let plan = json!({
        "host": "127.0.0.1",
        "port": hub.mqtt_port,
        "clientId": r.client_id,
        "username": r.id,
        "password": r.password,
        "protocol": match protocol { Protocol::V311 => "3.1.1", Protocol::V5 => "5" },
        "steps": steps,
    });
    let plan_path = dir.path().join("plan.json");
    std::fs::write(&plan_path, plan.to_string()).expect("plan");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/paho_client.py");
    let child = tokio::process::Command::new(python())
        .arg(script)
        .arg(&plan_path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start paho");
    // Each step has its own timeout inside the script; this only guards against a hung interpreter.
    let out = tokio::time::timeout(Duration::from_secs(180), child.wait_with_output())
        .await
        .expect("paho client hung")
        .expect("paho output");
    let events = String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    Run { events, stderr: String::from_utf8_lossy(&out.stderr).into_owned() }
}

/// A file in `dir` holding `payload`, for a `payloadFile` step.
pub fn payload_file(dir: &std::path::Path, name: &str, payload: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, payload).expect("payload file");
    path.display().to_string()
}
