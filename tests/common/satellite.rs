//! `birdhub satellite` as real child processes: registered through the real CLI against a hub,
//! recording from a directory of WAV files, logging to a file the log requests read.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use serde_json::Value;

use super::{Api, PASSWORD, process::BIN};

/// The recording fixture (10 s of birdsong, 48 kHz mono).
pub fn fixture() -> PathBuf {
    let model = birdhub::inference::ModelDir::locate("").expect("model (run models/fetch.sh)");
    model.path.join("fixtures/birds_10s.wav")
}

/// One satellite instance on this machine: its config, data, recordings and log.
pub struct Station {
    pub instance: String,
    pub root: PathBuf,
    pub id: String,
    child: Option<Child>,
    /// The clock sync probe the satellite runs (`BIRDHUB_CLOCK_SYNC_COMMAND`): synchronised
    /// unless a test says otherwise, whatever the machine's own NTP state.
    pub clock_sync_command: String,
}

impl Station {
    pub fn config(&self) -> PathBuf {
        self.root.join("satellite.toml")
    }
    pub fn recordings(&self) -> PathBuf {
        self.root.join("recordings")
    }
    pub fn data(&self) -> PathBuf {
        self.root.join("data")
    }
    pub fn log(&self) -> PathBuf {
        self.root.join("satellite.log")
    }
    pub fn version_file(&self) -> PathBuf {
        self.root.join("installed-version")
    }

    /// Copies the fixture into the recordings folder as `name`.
    pub fn drop_recording(&self, name: &str) {
        let tmp = self.root.join(format!(".{name}.part"));
        std::fs::copy(fixture(), &tmp).expect("copy fixture");
        std::fs::rename(&tmp, self.recordings().join(name)).expect("place recording");
    }

    /// `birdhub satellite register` with the test user's password; returns what it printed.
    pub fn register(&self, hub_url: &str, email: &str, extra: &[&str]) -> String {
        let out = Command::new(BIN)
            .args(["satellite", "register", "--hub", hub_url, "--instance", &self.instance, "--name", &self.instance])
            .arg("--config")
            .arg(self.config())
            .arg("--data-dir")
            .arg(self.data())
            .arg("--source")
            .arg(format!("dir:{}", self.recordings().display()))
            .args(["--email", email])
            .env("BIRDHUB_PASSWORD", PASSWORD)
            .arg("--version-command")
            .arg(format!("cat {}", self.version_file().display()))
            .arg("--update-command")
            .arg(format!("echo \"birdhub $BIRDHUB_TARGET_VERSION\" > {}", self.version_file().display()))
            .arg("--log-file")
            .arg(self.log())
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .expect("run register");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "register {} failed: {text}", self.instance);
        text
    }

    /// Starts `birdhub satellite run`, its log going to [`Self::log`].
    pub fn start(&mut self) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.log()).expect("log file");
        let child = Command::new(BIN)
            .args(["satellite", "run", "--instance", &self.instance, "--config"])
            .arg(self.config())
            .env("RUST_LOG", "info,rumqttc=warn")
            .env("BIRDHUB_CLOCK_SYNC_COMMAND", &self.clock_sync_command)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn satellite");
        self.child = Some(child);
    }

    /// Sends `signal` (`KILL`, `TERM`) and reaps the process.
    pub fn signal(&mut self, signal: &str) {
        if let Some(mut c) = self.child.take() {
            Command::new("kill").args([&format!("-{signal}"), &c.id().to_string()]).status().expect("kill");
            c.wait().expect("reap");
        }
    }

    /// `birdhub satellite status` (reads the outbox on disk).
    pub fn status(&self) -> Value {
        let out = Command::new(BIN)
            .args(["satellite", "status", "--instance", &self.instance, "--config"])
            .arg(self.config())
            .output()
            .expect("status");
        assert!(out.status.success(), "status: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("status json")
    }
}

impl Drop for Station {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A new station under `parent/instance` with `files` copies of the fixture to record.
pub fn station(parent: &Path, instance: &str, files: usize) -> Station {
    let root = parent.join(instance);
    std::fs::create_dir_all(root.join("recordings")).expect("dirs");
    std::fs::write(root.join("installed-version"), "birdhub 0.1.0\n").expect("version file");
    let s = Station {
        instance: instance.into(),
        root,
        id: String::new(),
        child: None,
        clock_sync_command: "echo yes".into(),
    };
    for i in 0..files {
        s.drop_recording(&format!("{instance}-{i}.wav"));
    }
    s
}

/// Reads the satellite id the register step saved.
pub fn saved_id(config: &Path) -> String {
    let text = std::fs::read_to_string(config).expect("config");
    let v: toml::Value = toml::from_str(&text).expect("toml");
    v["satellite_id"].as_str().expect("satellite_id").to_owned()
}

/// Polls `GET /satellites/{id}` until `ok` holds; panics after `secs`.
pub async fn wait_satellite(api: &Api, id: &str, secs: u64, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let path = format!("/satellites/{id}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let (status, body) = api.get(&path).await;
        if status == 200 && ok(&body) {
            return body;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("satellite {id}: {what} never happened; last seen {body}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

pub fn stat(v: &Value, group: &str, field: &str) -> i64 {
    v[group][field].as_i64().unwrap_or(-1)
}
