//! The test harness: the real hub, in-process, on `127.0.0.1:0` ports with a temp data dir.
#![allow(dead_code)] // each test binary uses a different part of the harness

pub mod api;
pub mod browser;
pub mod chunks;
pub mod hostile;
pub mod images;
pub mod imports;
pub mod mosq;
pub mod mosquitto_broker;
pub mod paho;
pub mod peers;
pub mod peers_go;
pub mod process;
pub mod receiver;
pub mod sat;
pub mod satellite;
pub mod seed;
pub mod smtp;
pub mod weather;
pub mod workers;

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use birdhub::{
    app::Hub,
    config::Settings,
    ids::{TenantId, UserId},
    state::AppState,
    store,
};

#[allow(unused_imports)]
pub use api::{Api, assert_error};

/// The password every test user gets.
pub const PASSWORD: &str = "correct horse battery";

/// A user made directly in the store (test setup), with their own team.
#[derive(Debug, Clone)]
pub struct TestUser {
    pub id: UserId,
    pub tenant: TenantId,
    pub email: String,
}

/// A running hub; dropping it stops the hub and deletes its data dir.
pub struct TestHub {
    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub base_url: String,
    pub http_addr: SocketAddr,
    /// The embedded broker's MQTT/TCP port.
    pub mqtt_port: u16,
    /// The broker's MQTT-over-WebSocket port.
    pub mqtt_ws_port: u16,
    pub data_dir: PathBuf,
    hub: Option<Hub>,
    _dir: tempfile::TempDir,
}

impl TestHub {
    /// `base_url` + `/api` + `path`.
    pub fn api(&self, path: &str) -> String {
        format!("{}/api{path}", self.base_url)
    }

    pub fn hub(&self) -> &Hub {
        self.hub.as_ref().expect("hub is running")
    }

    pub fn state(&self) -> &AppState {
        &self.hub().state
    }

    /// A fresh client with an empty cookie jar.
    pub fn anon(&self) -> Api {
        Api::new(&self.base_url)
    }

    /// Creates a user with a team of their own (admin and owner of it).
    pub async fn user(&self, email: &str, platform_admin: bool) -> TestUser {
        let hash = birdhub::auth::password::hash(PASSWORD).expect("hash");
        let new = store::users::NewUser {
            email: email.into(),
            name: email.split('@').next().unwrap_or("user").into(),
            password_hash: hash,
            is_platform_admin: platform_admin,
        };
        let created = self
            .state()
            .store
            .call(move |c| store::users::create_with_team(c, &new, "team"))
            .await
            .expect("create user");
        TestUser { id: created.user_id, tenant: created.tenant_id, email: email.into() }
    }

    /// Creates a user who is only a member of `tenant` with `role` (no team of their own).
    pub async fn member_of(&self, email: &str, tenant: TenantId, role: birdhub::domain::Role) -> TestUser {
        let hash = birdhub::auth::password::hash(PASSWORD).expect("hash");
        let new = store::users::NewUser {
            email: email.into(),
            name: email.split('@').next().unwrap_or("user").into(),
            password_hash: hash,
            is_platform_admin: false,
        };
        let id = self
            .state()
            .store
            .call(move |c| store::users::create_in_tenant(c, &new, tenant, role))
            .await
            .expect("create");
        TestUser { id, tenant, email: email.into() }
    }

    /// Logs in over HTTP and returns a client holding the session cookie.
    pub async fn login(&self, email: &str) -> Api {
        let api = self.anon();
        let (status, body) = api.post("/auth/login", serde_json::json!({"email": email, "password": PASSWORD})).await;
        assert_eq!(status, 200, "login of {email}: {body}");
        api
    }

    /// Logs in and returns the session JWT from the body.
    pub async fn token(&self, email: &str) -> String {
        let (status, body) =
            self.anon().post("/auth/login", serde_json::json!({"email": email, "password": PASSWORD})).await;
        assert_eq!(status, 200, "login of {email}: {body}");
        body["token"].as_str().expect("token").to_owned()
    }

    /// Runs SQL against the hub's real database file.
    pub fn sql<T>(&self, f: impl FnOnce(&rusqlite::Connection) -> T) -> T {
        let conn = rusqlite::Connection::open(self.data_dir.join("birdhub.db")).expect("open db");
        f(&conn)
    }

    /// Turns the hub's `allow_tenant_creation` on (off by default): any signed-in account may then
    /// make teams of its own, as tests of several teams made by ordinary accounts need.
    pub async fn allow_team_creation(&self) {
        self.state()
            .store
            .call(move |c| {
                let mut p: birdhub::domain::settings::PlatformSettings =
                    store::settings::load(c, store::settings::PLATFORM)?;
                p.allow_tenant_creation = true;
                store::settings::save(c, store::settings::PLATFORM, &p, birdhub::time::Timestamp(chrono::Utc::now()))
            })
            .await
            .expect("allow team creation");
    }

    /// Stops the hub and hands back its data dir, to start another hub on it.
    pub async fn stop_keeping_data(mut self) -> tempfile::TempDir {
        if let Some(hub) = self.hub.take() {
            hub.stop().await.expect("the hub stops");
        }
        std::mem::replace(&mut self._dir, tempfile::tempdir().expect("tempdir"))
    }

    /// Stops the hub and waits for it to finish.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        match self.hub.take() {
            Some(hub) => hub.stop().await,
            None => Ok(()),
        }
    }
}

impl Drop for TestHub {
    fn drop(&mut self) {
        if let Some(hub) = self.hub.take() {
            hub.request_stop();
        }
    }
}

/// Settings for a throwaway hub: free ports, temp data dir.
pub fn test_settings(data_dir: &std::path::Path) -> Settings {
    let mut s = Settings { data_dir: data_dir.to_owned(), ..Settings::default() };
    s.http.bind = "127.0.0.1:0".parse().expect("addr");
    s.mqtt.bind = "127.0.0.1:0".parse().expect("addr");
    s.mqtt.ws_bind = "127.0.0.1:0".parse().expect("addr");
    s.log_level = "warn".into();
    // No mDNS daemon per test hub; tests/mdns.rs turns it on where it is the subject.
    s.http.mdns = false;
    // A full development disk must not refuse test chunks, and fixed old recording dates must
    // not lose their audio on a restart; tests/retention.rs sets its own.
    s.retention.min_free_disk_mb = 0;
    s.retention.keep_audio_days = 36_500;
    // No classifier unless a test asks for one (`with_model`): most tests do not need it.
    s.inference.model_dir = data_dir.join("no-model").display().to_string();
    s
}

/// A hub whose mail goes to a local SMTP sink.
pub async fn spawn_hub_with_mail() -> (TestHub, smtp::Sink) {
    let sink = smtp::Sink::start().await;
    let port = sink.port;
    let hub = spawn_hub_with(move |s| {
        s.smtp.host = "127.0.0.1".into();
        s.smtp.port = port;
        s.smtp.security = "none".into();
        s.smtp.from = "hub@birdhub.test".into();
    })
    .await;
    (hub, sink)
}

/// Settings adjustment that gives the hub the real classifier.
pub fn with_model(s: &mut Settings) {
    s.inference.model_dir =
        birdhub::inference::ModelDir::locate("").expect("model (run models/fetch.sh)").path.display().to_string();
}

/// Starts a hub with default test settings and waits until `/api/health` answers.
pub async fn spawn_hub() -> TestHub {
    spawn_hub_with(|_| {}).await
}

/// Like [`spawn_hub`], after letting the caller adjust the settings.
pub async fn spawn_hub_with(adjust: impl FnOnce(&mut Settings)) -> TestHub {
    spawn_hub_in(tempfile::tempdir().expect("tempdir"), adjust).await
}

/// A hub on a given data dir (split-mode tests run two hubs on one).
pub async fn spawn_hub_in(dir: tempfile::TempDir, adjust: impl FnOnce(&mut Settings)) -> TestHub {
    let mut settings = test_settings(dir.path());
    adjust(&mut settings);
    let hub = birdhub::app::start(settings).await.expect("hub starts");
    let http_addr = hub.http_addr;
    let test_hub = TestHub {
        base_url: format!("http://{http_addr}"),
        http_addr,
        mqtt_port: hub.mqtt_addr.map_or(0, |a| a.port()),
        mqtt_ws_port: hub.mqtt_ws_addr.map_or(0, |a| a.port()),
        data_dir: dir.path().to_owned(),
        hub: Some(hub),
        _dir: dir,
    };
    wait_healthy(&test_hub.api("/health")).await;
    test_hub
}

/// Polls the health URL until it answers 200 (at most 10 s).
pub async fn wait_healthy(url: &str) {
    birdhub::install_tls_provider();
    let client = reqwest::Client::new();
    for _ in 0..200 {
        if client.get(url).send().await.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("hub at {url} never became healthy");
}

/// Turns on two-factor sign-in for `api`'s user over the API (a code from `oathtool`) and
/// returns the authenticator's key. A sign-in in the same 30 s step would reuse the code: move
/// the hub's clock on first.
pub async fn turn_on_totp(hub: &TestHub, api: &Api) -> String {
    let (status, setup) = api.post("/auth/mfa/totp/begin", serde_json::json!({})).await;
    assert_eq!(status, 200, "{setup}");
    let key = setup["manualKey"].as_str().expect("manualKey").to_owned();
    let code = oathtool(&key, hub.state().clock.now());
    let (status, body) = api.post("/auth/mfa/totp/confirm", serde_json::json!({ "code": code })).await;
    assert_eq!(status, 200, "{body}");
    key
}

/// The TOTP code `oathtool` computes for `key` (base32) at `at`.
pub fn oathtool(key: &str, at: chrono::DateTime<chrono::Utc>) -> String {
    let now = at.format("%Y-%m-%d %H:%M:%S UTC").to_string();
    let out = std::process::Command::new("oathtool")
        .args(["--totp", "-b", key, "--now", &now])
        .output()
        .expect("oathtool runs (apt-get install oathtool; .ci/run installs it)");
    assert!(out.status.success(), "oathtool: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}
