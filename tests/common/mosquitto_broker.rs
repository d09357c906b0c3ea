//! A throwaway mosquitto 2 with the dynamic-security plugin, for the hub's `mqtt.external`: its own
//! port and temp dir, an admin login made by `mosquitto_ctrl dynsec init`, killed on drop.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use super::process::free_port;

/// The dynamic-security admin the hub logs in as.
pub const ADMIN: &str = "birdhub-admin";
pub const ADMIN_PASSWORD: &str = "admin-secret";

/// A running mosquitto with dynamic security.
pub struct Mosquitto {
    child: Child,
    pub port: u16,
    /// Where its config, plugin state and log live.
    pub dir: tempfile::TempDir,
}

impl Drop for Mosquitto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The first of `candidates` that exists; panics with the fix when none does.
fn find(what: &str, candidates: &[&str]) -> PathBuf {
    candidates.iter().map(PathBuf::from).find(|p| p.exists()).unwrap_or_else(|| {
        panic!("{what} is missing (looked in {candidates:?}): `apt-get install mosquitto` (.ci/run does this)")
    })
}

fn broker_binary() -> PathBuf {
    find("the mosquitto broker", &["/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto", "/usr/bin/mosquitto"])
}

fn plugin() -> PathBuf {
    let arch = std::env::consts::ARCH;
    let multiarch = format!("/usr/lib/{arch}-linux-gnu/mosquitto_dynamic_security.so");
    find(
        "mosquitto's dynamic-security plugin",
        &[&multiarch, "/usr/lib/mosquitto_dynamic_security.so", "/usr/local/lib/mosquitto_dynamic_security.so"],
    )
}

/// Runs mosquitto with `conf` and returns once it accepts connections on `port`.
async fn spawn(conf: &Path, port: u16) -> Child {
    let mut child = Command::new(broker_binary())
        .arg("-c")
        .arg(conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("mosquitto");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return child;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("mosquitto did not start on port {port}");
}

impl Mosquitto {
    /// Starts mosquitto with dynamic security on a free port and returns once it accepts connections.
    pub async fn start() -> Mosquitto {
        let dir = tempfile::tempdir().expect("tempdir");
        // Started as root, mosquitto runs as the user `mosquitto`: it must be able to save its state.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let state = dir.path().join("dynamic-security.json");
        let init = Command::new("mosquitto_ctrl")
            .args(["dynsec", "init"])
            .arg(&state)
            .args([ADMIN, ADMIN_PASSWORD])
            .output()
            .expect("mosquitto_ctrl (apt-get install mosquitto-clients)");
        assert!(init.status.success(), "dynsec init: {}", String::from_utf8_lossy(&init.stderr));
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        let port = free_port();
        let conf = dir.path().join("mosquitto.conf");
        let text = format!(
            "per_listener_settings false\nlistener {port} 127.0.0.1\nallow_anonymous false\npersistence false\n\
             plugin {}\nplugin_opt_config_file {}\nlog_dest file {}\nlog_type error\nlog_type warning\n\
             log_type notice\nlog_type information\n",
            plugin().display(),
            state.display(),
            dir.path().join("mosquitto.log").display(),
        );
        std::fs::write(&conf, text).expect("conf");
        let child = spawn(&conf, port).await;
        Mosquitto { child, port, dir }
    }

    /// Stops mosquitto and starts it again on the same port with the same (saved) logins.
    pub async fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = spawn(&self.dir.path().join("mosquitto.conf"), self.port).await;
    }

    /// `127.0.0.1:<port>`, for `mqtt.external`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Points a hub's settings at this broker with the admin login.
    pub fn configure(&self, s: &mut birdhub::config::Settings) {
        s.mqtt.external = self.address();
        s.mqtt.external_username = ADMIN.into();
        s.mqtt.external_password = birdhub::config::Secret::new(ADMIN_PASSWORD);
    }

    /// Runs `mosquitto_ctrl ... dynsec ARGS` as the admin; returns (success, stdout).
    pub fn ctrl(&self, args: &[&str]) -> (bool, String) {
        let port = self.port.to_string();
        let out = Command::new("mosquitto_ctrl")
            .args(["-h", "127.0.0.1", "-p", &port, "-u", ADMIN, "-P", ADMIN_PASSWORD, "dynsec"])
            .args(args)
            .output()
            .expect("mosquitto_ctrl");
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The usernames the plugin knows.
    pub fn clients(&self) -> Vec<String> {
        let (ok, out) = self.ctrl(&["listClients"]);
        assert!(ok, "listClients: {out}");
        out.lines().map(|l| l.trim().to_owned()).filter(|l| !l.is_empty()).collect()
    }

    /// The broker's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("mosquitto.log")).unwrap_or_default()
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}
