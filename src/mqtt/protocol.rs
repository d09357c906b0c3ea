//! The JSON messages of SPEC 2.1-2.8, as satellites and the hub exchange them.
//!
//! Status messages (heartbeat, telemetry) are read leniently: devices in the field send `12.7`
//! where an integer is specified, or a state this hub does not know yet, and refusing the whole
//! message would show a live device as offline. Integers accept any number (rounded down); enum
//! fields are kept as the device sent them.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `audio` (satellite to hub, SPEC 2.1), borrowed from the message: the base64 audio is most
/// of it, and copying it before decoding it was a third of ingest's cost. A string with JSON
/// escapes in it (`\/` from some encoders) is unescaped into an owned copy.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Audio<'a> {
    #[serde(borrow)]
    pub chunk_id: Cow<'a, str>,
    #[serde(borrow)]
    pub satellite_id: Cow<'a, str>,
    #[serde(borrow)]
    pub tenant_id: Cow<'a, str>,
    #[serde(borrow)]
    pub recorded_at: Cow<'a, str>,
    pub duration_ms: i64,
    pub sample_rate: i64,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    /// Base64 of a mono WAV.
    #[serde(borrow)]
    pub audio: Cow<'a, str>,
}

/// `telemetry` (SPEC 2.2).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Telemetry {
    pub satellite_id: String,
    pub tenant_id: String,
    pub timestamp: String,
    pub battery_level: Option<f64>,
    #[serde(default, deserialize_with = "lenient_int")]
    pub storage_free_bytes: Option<i64>,
    pub cpu_temp: Option<f64>,
    pub network_latency_ms: Option<f64>,
    pub packet_loss_pct: Option<f64>,
    #[serde(default, deserialize_with = "lenient_int")]
    pub uptime_seconds: Option<i64>,
}

/// `heartbeat` (SPEC 2.3).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Heartbeat {
    pub satellite_id: String,
    pub tenant_id: String,
    #[serde(default, deserialize_with = "lenient_int")]
    pub uptime_seconds: Option<i64>,
    /// One of [`HEARTBEAT_STATES`], or whatever a newer device sends (stored as given).
    pub state: String,
    pub noise_floor_rms: Option<f64>,
    pub version: Option<String>,
    /// `satellite` or `mobile`, or whatever a newer device sends (stored as given).
    pub stream: Option<String>,
    pub timestamp: Option<String>,
    pub filter_stats: Option<Value>,
    pub outbox_stats: Option<Value>,
    /// How the satellite's last update command ended (an extension of SPEC 2.3, see
    /// docs/satellites.md): kept as a value so that a malformed report never costs the heartbeat.
    #[serde(default)]
    pub update: Option<Value>,
}

/// A heartbeat's `update`: the outcome of the last `update` the satellite ran.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateReport {
    pub target_version: String,
    /// `succeeded` or `failed`.
    pub status: String,
    #[serde(default)]
    pub exit_code: Option<i64>,
    /// What went wrong and the command's last lines (empty on success).
    #[serde(default)]
    pub message: Option<String>,
}

impl Heartbeat {
    /// The update report, when there is a well-formed one.
    pub fn update_report(&self) -> Option<UpdateReport> {
        self.update.clone().and_then(|v| serde_json::from_value(v).ok())
    }
}

/// The heartbeat states SPEC 2.3 defines, and [`STOPPED`].
pub const HEARTBEAT_STATES: &[&str] = &["recording", "paused", "scheduled_off", "error", STOPPED];

/// The state of a satellite's last heartbeat before a clean stop (an extension of SPEC 2.3,
/// docs/mqtt.md): the hub shows it offline at once instead of after the offline threshold.
pub const STOPPED: &str = "stopped";

/// An optional integer that accepts any JSON number: `12.7` reads as 12, `-0.5` as -1, and numbers
/// beyond `i64` saturate. Anything that is not a number or null is still an error.
fn lenient_int<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else { return Ok(None) };
    Ok(Some(match (n.as_i64(), n.as_u64()) {
        (Some(i), _) => i,
        (None, Some(_)) => i64::MAX,
        // `as` saturates (and JSON has no NaN), which is what a rounded-down reading wants.
        (None, None) => n.as_f64().map_or(0, |f| f.floor() as i64),
    }))
}

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

/// `update` (hub to satellite, SPEC 2.8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Update {
    pub satellite_id: String,
    pub tenant_id: String,
    pub target_version: String,
}

/// `log-request` (hub to satellite, SPEC 2.8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogRequest {
    pub request_id: String,
    pub tail: u32,
}

/// `log-response` (satellite to hub). The SPEC leaves the layout open; this hub's is the
/// request's id and the newline-separated journal text, `truncated` when the satellite cut it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogResponse {
    pub request_id: String,
    pub satellite_id: String,
    pub tenant_id: String,
    pub text: String,
    #[serde(default)]
    pub truncated: bool,
}

/// `live-start` / `live-stop` (hub to satellite). The hub repeats `live-start` every
/// [`LIVE_REFRESH_SECS`] while a session is active; a satellite that hears none for
/// [`LIVE_SATELLITE_TIMEOUT_SECS`] stops streaming by itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveControl {
    #[serde(default)]
    pub session_id: Option<String>,
}

pub const LIVE_REFRESH_SECS: u64 = 20;
pub const LIVE_SATELLITE_TIMEOUT_SECS: u64 = 60;

/// `live-audio` (satellite to hub, QoS 0). The SPEC leaves the layout open; this hub's is the
/// session, a per-session sequence number, when the chunk was recorded and a base64 WAV.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveAudio {
    pub session_id: String,
    pub satellite_id: String,
    pub tenant_id: String,
    pub seq: u64,
    pub recorded_at: String,
    /// Base64 of a mono WAV.
    pub audio: String,
}

/// Just enough of any message to check which satellite and tenant it claims to be from.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    pub satellite_id: Option<String>,
    pub tenant_id: Option<String>,
    pub chunk_id: Option<Value>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn audio_is_borrowed_from_the_message_unless_it_has_escapes() {
        let plain = br#"{"chunkId": "c", "satelliteId": "s", "tenantId": "t", "recordedAt": "r",
                         "durationMs": 3000, "sampleRate": 48000, "audio": "UklGRg=="}"#;
        let msg: Audio<'_> = serde_json::from_slice(plain).expect("plain");
        assert!(matches!(msg.audio, Cow::Borrowed("UklGRg==")));
        let escaped = br#"{"chunkId": "c", "satelliteId": "s", "tenantId": "t", "recordedAt": "r",
                           "durationMs": 3000, "sampleRate": 48000, "audio": "ab\/cd=="}"#;
        let msg: Audio<'_> = serde_json::from_slice(escaped).expect("escaped");
        assert_eq!(msg.audio, "ab/cd==");
        assert!(matches!(msg.audio, Cow::Owned(_)));
    }

    #[test]
    fn status_numbers_are_read_leniently() {
        let hb = |uptime: Value| {
            serde_json::from_value::<Heartbeat>(json!({"satelliteId": "s", "tenantId": "t", "state": "dreaming",
                                                        "stream": "watch", "uptimeSeconds": uptime}))
        };
        let cases = [
            (json!(12), Some(12)),
            (json!(12.7), Some(12)),
            (json!(-0.5), Some(-1)),
            (json!(1e30), Some(i64::MAX)),
            (json!(u64::MAX), Some(i64::MAX)),
            (Value::Null, None),
        ];
        for (given, want) in cases {
            let parsed = hb(given.clone()).unwrap_or_else(|e| panic!("{given}: {e}"));
            assert_eq!(parsed.uptime_seconds, want, "{given}");
            assert_eq!((parsed.state.as_str(), parsed.stream.as_deref()), ("dreaming", Some("watch")));
        }
        assert!(hb(json!("12")).is_err(), "a string is not a number");
        let missing: Heartbeat =
            serde_json::from_value(json!({"satelliteId": "s", "tenantId": "t", "state": "recording"})).expect("hb");
        assert_eq!(missing.uptime_seconds, None);

        let tel: Telemetry = serde_json::from_value(json!({"satelliteId": "s", "tenantId": "t", "timestamp": "x",
            "storageFreeBytes": 1.5e9, "uptimeSeconds": 180.9}))
        .expect("telemetry");
        assert_eq!((tel.storage_free_bytes, tel.uptime_seconds), (Some(1_500_000_000), Some(180)));
    }
}
