//! The satellite's own config file (`/etc/birdhub/satellite.toml`, or `satellite-NAME.toml` for
//! `--instance NAME`), written by `birdhub satellite register` with mode 0600: where the hub is,
//! the MQTT credentials and the satellite API key, and how to capture.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::capture::{Pace, Source};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SatelliteSettings {
    /// The hub's HTTP base URL, e.g. `http://192.168.1.20:8080`.
    pub hub_url: String,
    pub mqtt_host: String,
    pub mqtt_port: u16,
    pub satellite_id: uuid::Uuid,
    pub tenant_id: uuid::Uuid,
    pub name: String,
    pub device_id: String,
    /// The MQTT password and the satellite-scoped API key (secrets: the file is 0600).
    pub mqtt_password: String,
    pub api_key: String,
    /// `dir:PATH`, `alsa:DEVICE` or `rtsp:URL`.
    pub source: String,
    #[serde(default)]
    pub pace: Pace,
    #[serde(default)]
    pub loop_dir: bool,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    /// Where the outbox and capture state live.
    pub data_dir: PathBuf,
    /// The classifier gate's model directory ("" = look in the usual places; none = RMS only).
    #[serde(default)]
    pub model_dir: Option<String>,
    /// Run on `update` (SPEC 2.8), with `BIRDHUB_TARGET_VERSION` set.
    pub update_command: String,
    /// Prints the installed version (reported in heartbeats after an update).
    pub version_command: String,
    /// Answers `log-request` when set; otherwise `journalctl -u <unit>`.
    #[serde(default)]
    pub log_file: Option<PathBuf>,
    /// The systemd unit whose journal answers `log-request`.
    pub unit: String,
    /// Re-sends per second after a reconnect.
    pub resend_per_sec: u32,
    /// `error` acks before a row counts as failed.
    pub max_attempts: u32,
    /// The hub's `mqtt.topic_root` (the first topic level).
    #[serde(default = "default_topic_root")]
    pub topic_root: String,
}

fn default_topic_root() -> String {
    "birdhub".into()
}

impl SatelliteSettings {
    /// The config file of an instance (`None`: the default one).
    pub fn default_path(_instance: Option<&str>) -> PathBuf {
        todo!("satellite helper")
    }

    pub fn load(_path: &Path) -> anyhow::Result<Self> {
        todo!("satellite helper")
    }

    /// Writes the file atomically with mode 0600.
    pub fn save(&self, _path: &Path) -> anyhow::Result<()> {
        todo!("satellite helper")
    }

    pub fn source(&self) -> Result<Source, String> {
        self.source.parse()
    }
}
