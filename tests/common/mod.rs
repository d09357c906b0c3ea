//! The test harness: the real hub, in-process, on `127.0.0.1:0` ports with a temp data dir.
#![allow(dead_code)] // each test binary uses a different part of the harness

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use birdhub::{app::Hub, config::Settings};

/// A running hub; dropping it stops the hub and deletes its data dir.
pub struct TestHub {
    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub base_url: String,
    pub http_addr: SocketAddr,
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
    s
}

/// Starts a hub with default test settings and waits until `/api/health` answers.
pub async fn spawn_hub() -> TestHub {
    spawn_hub_with(|_| {}).await
}

/// Like [`spawn_hub`], after letting the caller adjust the settings.
pub async fn spawn_hub_with(adjust: impl FnOnce(&mut Settings)) -> TestHub {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = test_settings(dir.path());
    adjust(&mut settings);
    let hub = birdhub::app::start(settings).await.expect("hub starts");
    let http_addr = hub.http_addr;
    let test_hub = TestHub {
        base_url: format!("http://{http_addr}"),
        http_addr,
        data_dir: dir.path().to_owned(),
        hub: Some(hub),
        _dir: dir,
    };
    wait_healthy(&test_hub.api("/health")).await;
    test_hub
}

/// Polls the health URL until it answers 200 (at most 10 s).
pub async fn wait_healthy(url: &str) {
    let client = reqwest::Client::new();
    for _ in 0..200 {
        if client.get(url).send().await.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("hub at {url} never became healthy");
}
