//! The JSON messages of SPEC 2.1-2.8, as satellites and the hub exchange them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `audio` (satellite to hub, SPEC 2.1).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Audio {
    pub chunk_id: String,
    pub satellite_id: String,
    pub tenant_id: String,
    pub recorded_at: String,
    pub duration_ms: i64,
    pub sample_rate: i64,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    /// Base64 of a mono WAV.
    pub audio: String,
}

/// `telemetry` (SPEC 2.2).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Telemetry {
    pub satellite_id: String,
    pub tenant_id: String,
    pub timestamp: String,
    pub battery_level: Option<f64>,
    pub storage_free_bytes: Option<i64>,
    pub cpu_temp: Option<f64>,
    pub network_latency_ms: Option<f64>,
    pub packet_loss_pct: Option<f64>,
    pub uptime_seconds: Option<i64>,
}

/// `heartbeat` (SPEC 2.3).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Heartbeat {
    pub satellite_id: String,
    pub tenant_id: String,
    pub uptime_seconds: Option<i64>,
    pub state: String,
    pub noise_floor_rms: Option<f64>,
    pub version: Option<String>,
    pub stream: Option<String>,
    pub timestamp: Option<String>,
    pub filter_stats: Option<Value>,
    pub outbox_stats: Option<Value>,
}

pub const HEARTBEAT_STATES: &[&str] = &["recording", "paused", "scheduled_off", "error"];

/// `config-request` (SPEC 2.4).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigRequest {
    pub satellite_id: String,
    pub tenant_id: String,
    #[serde(default)]
    pub overrides: Value,
}

/// `ack` (hub to satellite, SPEC 2.6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ack {
    pub chunk_id: String,
    /// `stored` or `error`.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Ack {
    pub fn stored(chunk_id: &str) -> Self {
        Self { chunk_id: chunk_id.into(), status: "stored".into(), error: None }
    }

    pub fn error(chunk_id: &str, error: impl Into<String>) -> Self {
        Self { chunk_id: chunk_id.into(), status: "error".into(), error: Some(error.into()) }
    }
}

/// Just enough of any message to check which satellite and tenant it claims to be from.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    pub satellite_id: Option<String>,
    pub tenant_id: Option<String>,
    pub chunk_id: Option<Value>,
}
