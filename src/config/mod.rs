//! Configuration: one `Settings` struct, layered as
//! built-in defaults < config file < `BIRDHUB_*` environment < command-line flags.
//!
//! The config file is `/etc/birdhub/birdhub.toml` when it exists, or the file named by `--config`.
//! Environment variables use `__` for nesting (`BIRDHUB_HTTP__BIND`), and the SPEC's own names
//! (`MFA_ENCRYPTION_KEY`, `HUB_INTERNAL_API_KEY`, `SMTP_HOST`, `LIVE_AUDIO_TIMEOUT_MS`) are honoured
//! as given. Nothing outside this module reads configuration.

mod birdweather;
mod defaults;
mod layers;
mod mqtt;
mod secret;
mod secrets_file;
mod workers;

use std::{net::SocketAddr, path::PathBuf};

use serde::{Deserialize, Serialize};

pub use birdweather::BirdweatherSettings;
pub use layers::{CliOverrides, ConfigError, Sources};
pub use secret::Secret;
pub use secrets_file::ensure_secrets;
pub use workers::WorkerCount;

/// The documented example config, as shipped in the .deb conffile and printed by `default-config`.
pub const EXAMPLE_CONFIG: &str = include_str!("../../debian/birdhub.toml");

/// The config file read when `--config` is not given (and only if it exists).
pub const SYSTEM_CONFIG_PATH: &str = "/etc/birdhub/birdhub.toml";
/// The installed hub's data dir: the unit's `StateDirectory`, and the default wherever
/// [`SYSTEM_CONFIG_PATH`] is the config in use.
pub const SYSTEM_DATA_DIR: &str = "/var/lib/birdhub";

/// Which parts of the hub this process runs (ARCHITECTURE.md, "Modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Broker, ingest, inference, HTTP and everything else: what a Pi runs.
    Full,
    /// Broker, ingest, inference and the detection publisher.
    Dispatcher,
    /// The HTTP side and the config pusher, reaching a dispatcher's broker as a client.
    Api,
}

/// Every setting of the hub. Field docs double as the configuration reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Where the database, objects and generated secrets live.
    pub data_dir: PathBuf,
    /// `full`, `dispatcher` or `api`.
    pub mode: Mode,
    /// A tracing filter: `info`, `debug`, `birdhub=debug,tower_http=info`, ...
    pub log_level: String,
    pub http: HttpSettings,
    pub mqtt: MqttSettings,
    pub security: SecuritySettings,
    pub smtp: SmtpSettings,
    pub live_audio: LiveAudioSettings,
    pub inference: InferenceSettings,
    pub cache: CacheSettings,
    pub species_images: SpeciesImageSettings,
    pub weather: WeatherSettings,
    pub retention: RetentionSettings,
    pub releases: ReleaseSettings,
    pub imports: ImportSettings,
    pub backup: BackupSettings,
    pub metrics: MetricsSettings,
    pub integrations: IntegrationsSettings,
    /// BirdWeather uploads (`config::birdweather`).
    pub birdweather: BirdweatherSettings,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSettings {
    /// Address of the HTTP API, WebSocket and dashboard.
    pub bind: SocketAddr,
    /// Largest request body accepted, in bytes (413 beyond it).
    pub max_body_bytes: usize,
    /// Take the client IP from `X-Forwarded-For` (only behind a trusted reverse proxy).
    pub trust_proxy: bool,
    /// The URL people use to reach the hub, the base of every link it hands out; empty means
    /// `http://<hostname>.local:<bound port>` ([`crate::links`]), never a request's `Host`.
    pub public_url: String,
    /// Advertise the hub on the LAN as `_birdhub._tcp` (mDNS/DNS-SD, [`crate::mdns`]) so the app
    /// and satellites find it without an IP address; `BIRDHUB_HTTP__MDNS=false` turns it off.
    pub mdns: bool,
    /// Requests per minute one client address may make to teams' public pages (`/public/...`
    /// and `/api/public/...`); beyond it they answer 429. 0 turns the limit off.
    pub public_page_per_minute: u32,
    /// A slippy-map tile server for the station maps (`https://tile.example.org/{z}/{x}/{y}.png`);
    /// empty: the maps are drawn without tiles and nothing is fetched.
    pub map_tiles: String,
    /// The credit the tile server requires, shown on the map ("© OpenStreetMap contributors").
    pub map_attribution: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MqttSettings {
    /// MQTT over TCP for satellites.
    pub bind: SocketAddr,
    /// MQTT over WebSocket (the Android app and browsers).
    pub ws_bind: SocketAddr,
    /// First topic segment: `{topic_root}/{tenant_id}/{satellite_id}/{channel}`.
    pub topic_root: String,
    /// The broker URL handed to satellites at registration; empty means
    /// `mqtt://<hostname>.local:<bound port>` ([`crate::links`]), never a request's `Host`.
    pub public_url: String,
    /// PEM certificate and key: with both set, the TCP listener speaks TLS (MQTTS) and the
    /// WebSocket listener WSS.
    pub tls_cert: String,
    pub tls_key: String,
    /// Mode `api`: the dispatcher's broker (`host:port`), reached as the MQTT user `hub` with the
    /// internal API key.
    pub upstream: String,
    /// An existing mosquitto 2 (`host:port`) used instead of the embedded broker, its logins kept
    /// through its dynamic-security plugin (docs/mqtt.md); empty: the embedded broker.
    pub external: String,
    /// The hub's login there, a dynamic-security admin (`mosquitto_ctrl dynsec init`), and its password.
    pub external_username: String,
    pub external_password: Secret,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecuritySettings {
    /// `MFA_ENCRYPTION_KEY`: 64 hex chars (32 bytes); encrypts MFA and webhook secrets at rest.
    /// Empty means generated on first start and kept in `<data_dir>/secrets.toml`.
    pub mfa_encryption_key: Secret,
    /// `HUB_INTERNAL_API_KEY`: bearer key of trusted internal callers. Empty means generated.
    pub internal_api_key: Secret,
    /// Signing key of session JWTs. Empty means generated.
    pub jwt_secret: Secret,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmtpSettings {
    /// `SMTP_HOST`: empty disables mail (messages are recorded and dropped).
    pub host: String,
    pub port: u16,
    pub username: String,
    pub password: Secret,
    /// Sender address of the hub's mail.
    pub from: String,
    /// `starttls`, `tls` or `none`.
    pub security: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveAudioSettings {
    /// `LIVE_AUDIO_TIMEOUT_MS`: a live session with no keepalive for this long goes idle.
    pub timeout_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InferenceSettings {
    /// Directory holding the model, labels and `libonnxruntime.so` (made by `models/fetch.sh`).
    /// Empty means `models/birdnet-v2.4` beside the binary's checkout, then `/usr/share/birdhub/models`.
    pub model_dir: String,
    /// Inference threads that run the model in this process: `"auto"` (one per CPU core) or a
    /// number. 0 makes the hub a pure coordinator that runs no model: its chunks wait for remote
    /// workers (`birdhub worker`, docs/scaling.md).
    pub workers: WorkerCount,
    /// How long a batch offered to the remote workers may go unanswered before its jobs go back
    /// to the queue, in seconds.
    pub lease_seconds: u64,
    /// Minimum confidence for a detection.
    pub threshold: f32,
    /// Which copy of the network runs: `fp32`, `fp16` or `int8` (docs/classifier.md has their
    /// agreement with FP32 and their speed). A copy the model directory lacks falls back to FP32.
    pub precision: crate::inference::Precision,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSettings {
    /// Prefix of the service registry keys: `{prefix}:registry:{service}:{instanceId}`.
    pub registry_prefix: String,
    /// Upper bound on cached entries.
    pub max_entries: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpeciesImageSettings {
    /// Where species pictures come from: a URL template with `{scientific_name}` (and optionally
    /// `{code}`), both URL-encoded when filled in. Empty (the default) means no pictures are
    /// fetched, as on a LAN without internet. The answer is an image or a JSON document (docs/species.md).
    pub source_url: String,
    /// Largest image kept, in bytes; a bigger download is stopped and counts as failed.
    pub max_bytes: u64,
    /// The deadline of one download (connecting and reading together), in seconds.
    pub timeout_secs: u64,
    /// Failed downloads are retried with backoff (1 min, doubling, at most 24 h) this many times
    /// in all; then the species stays `failed` until a platform admin asks for a retry.
    pub max_attempts: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeatherSettings {
    /// Base URL of a weather service with the Open-Meteo archive API's shape
    /// (`https://archive-api.open-meteo.com/v1/archive`); empty turns `/stats/weather-correlation`
    /// off (it answers `available: false`). The hub adds the query itself.
    pub provider_url: String,
    /// The deadline of one request to the provider, connecting and reading included.
    pub timeout_secs: u64,
}

/// Audio retention ([`crate::usecases::audio_retention`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionSettings {
    /// Audio of plain chunks (nothing verified, rare or annotated) older than this is deleted.
    pub keep_audio_days: u32,
    /// Below this much free disk, audio is deleted oldest first and, when that is not enough,
    /// ingest refuses chunks with `disk_full`.
    pub min_free_disk_mb: u64,
    /// Audit log entries older than this are deleted by the hourly housekeeping.
    pub keep_audit_days: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportSettings {
    /// Largest file `POST /api/imports` takes (a station's backup tar or database), in bytes
    /// (413 beyond it); this one route's body limit is this plus [`UPLOAD_ENVELOPE_BYTES`].
    pub max_upload_bytes: u64,
    /// Imports the hub runs at once, all teams together (its uploads and jobs, and `birdhub
    /// import` processes); one more upload is refused with 503 `imports_busy` before it is read.
    pub max_concurrent: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseSettings {
    /// Largest APK `POST /mobile/upload` takes, in bytes (413 beyond it); this one route's body
    /// limit is this plus [`UPLOAD_ENVELOPE_BYTES`], whatever `http.max_body_bytes` says.
    pub max_apk_bytes: u64,
    /// The newest hub release, for `GET /system/versions` when a newer one than this binary is out;
    /// empty: this binary's own version. SemVer.
    pub hub_version: String,
    /// The newest satellite release; empty: the highest version satellites report in heartbeats
    /// (the higher of the two when both are known). SemVer.
    pub satellite_version: String,
    /// Minutes a satellite has to come back with the target version after
    /// `POST /satellites/{id}/update`; a heartbeat with another version after that marks the
    /// update `failed` (before it, the update stays `updating`).
    pub update_timeout_minutes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackupSettings {
    /// The local time of the daily backup, `HH:MM`; empty (the default) turns it off.
    pub daily_at: String,
    /// Where the daily backups go; empty means `<data_dir>/backups`.
    pub dir: String,
    /// How many daily backups are kept; older ones (only files named
    /// `birdhub-backup-YYYYMMDD-HHMMSS.tar.zst`) are deleted after each new one.
    pub keep: usize,
}

impl BackupSettings {
    /// The folder of the daily backups, `dir` or `<data_dir>/backups`.
    pub fn dir_in(&self, data_dir: &std::path::Path) -> PathBuf {
        if self.dir.trim().is_empty() { data_dir.join("backups") } else { PathBuf::from(self.dir.trim()) }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSettings {
    /// Serve Prometheus metrics at `GET /metrics`; off by default (404).
    pub enabled: bool,
    /// Client addresses (`192.168.1.20`) or networks (`10.0.0.0/8`) that may scrape without a key;
    /// everyone else needs the internal API key. Empty: the key only.
    pub allow: Vec<String>,
}

impl MetricsSettings {
    /// The allow-list as networks; entries that do not parse are left out (validation refuses them).
    fn networks(&self) -> impl Iterator<Item = ipnet::IpNet> + '_ {
        self.allow.iter().filter_map(|a| parse_network(a))
    }

    /// Whether `ip` may scrape without the key (an IPv4 client seen as `::ffff:a.b.c.d` counts as IPv4).
    pub fn allows(&self, ip: std::net::IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.networks().any(|n| n.contains(&ip))
    }
}

/// `a.b.c.d`, `a.b.c.d/len` or the IPv6 forms; a bare address is a network of one.
fn parse_network(s: &str) -> Option<ipnet::IpNet> {
    let s = s.trim();
    s.parse::<ipnet::IpNet>()
        .ok()
        .or_else(|| s.parse::<std::net::IpAddr>().ok().map(ipnet::IpNet::from))
        .map(|n| n.trunc())
}

/// Home Assistant discovery, the MQTT feed for other tools, and the bridge to another broker
/// (docs/home-assistant.md, docs/mqtt-feed.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntegrationsSettings {
    /// The team whose satellites, detections and alerts are published: best its id, or its name (any
    /// case; two teams sharing it stop the start). Empty: the hub's only team. Resolved once at
    /// start and kept by id. No other team's data is ever published.
    pub team: String,
    /// Password of the read-only broker login `homeassistant`. Empty: generated on first start
    /// and kept in `<data_dir>/secrets.toml`; `birdhub integrations` prints it.
    pub readonly_password: Secret,
    pub home_assistant: HomeAssistantSettings,
    pub feed: FeedSettings,
    pub bridge: BridgeSettings,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HomeAssistantSettings {
    /// Publish Home Assistant MQTT discovery configs and states; off by default.
    pub enabled: bool,
    /// Home Assistant's discovery prefix.
    pub discovery_prefix: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedSettings {
    /// Publish the feed (detections, alerts, states) for Node-RED and scripts. Home Assistant
    /// turns it on too: its states live there.
    pub enabled: bool,
    /// The feed's first topic level; never the satellites' `mqtt.topic_root`.
    pub root: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BridgeSettings {
    /// Another broker (Home Assistant's mosquitto) that also gets the discovery configs and the
    /// feed, the hub being its client. Empty: no bridge.
    pub host: String,
    pub port: u16,
    pub username: String,
    pub password: Secret,
    /// Connect with TLS; the server is checked against `ca_file`, or the system's roots.
    pub tls: bool,
    pub ca_file: String,
    /// The hub's client id there.
    pub client_id: String,
}

impl IntegrationsSettings {
    /// Whether anything is published (and the read-only login is open).
    pub fn active(&self) -> bool {
        self.home_assistant.enabled || self.feed.enabled
    }
}

/// Room for the multipart envelope and the text fields of an APK upload, on top of the APK.
pub const UPLOAD_ENVELOPE_BYTES: u64 = 1024 * 1024;

impl Settings {
    /// Builds the settings from all layers; see [`Sources`].
    pub fn load(sources: &Sources) -> Result<Self, ConfigError> {
        layers::load(sources)
    }

    /// Checks that go beyond types, each naming the key at fault.
    fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| Err(ConfigError::Invalid { key: key.into(), message: why.into() });
        if self.data_dir.as_os_str().is_empty() {
            return bad("data_dir", "must not be empty");
        }
        if !(0.0..=1.0).contains(&self.inference.threshold) {
            return bad("inference.threshold", "must be between 0 and 1");
        }
        if self.http.max_body_bytes < 1024 {
            return bad("http.max_body_bytes", "must be at least 1024");
        }
        self.validate_mqtt()?;
        if !["starttls", "tls", "none"].contains(&self.smtp.security.as_str()) {
            return bad("smtp.security", "must be starttls, tls or none");
        }
        if tracing_subscriber::EnvFilter::try_new(&self.log_level).is_err() {
            return bad("log_level", "is not a valid filter (try info, debug or birdhub=debug)");
        }
        self.validate_species_images()?;
        let tiles = self.http.map_tiles.trim();
        if !tiles.is_empty() {
            if url::Url::parse(&tiles.replace(['{', '}'], "")).map_or(true, |u| !matches!(u.scheme(), "http" | "https"))
            {
                return bad("http.map_tiles", "must be empty or an http(s) URL template");
            }
            if !["{z}", "{x}", "{y}"].iter().all(|p| tiles.contains(p)) {
                return bad("http.map_tiles", "must contain {z}, {x} and {y}");
            }
            if self.http.map_attribution.trim().is_empty() {
                return bad("http.map_attribution", "must name the tile provider when http.map_tiles is set");
            }
        }
        let weather = self.weather.provider_url.trim();
        if !weather.is_empty()
            && url::Url::parse(weather).map_or(true, |u| !matches!(u.scheme(), "http" | "https") || !u.has_host())
        {
            return bad(
                "weather.provider_url",
                "must be empty or an http(s) URL such as https://archive-api.open-meteo.com/v1/archive",
            );
        }
        if !(1..=120).contains(&self.weather.timeout_secs) {
            return bad("weather.timeout_secs", "must be 1 to 120 seconds");
        }
        self.validate_releases()?;
        if !(1024 * 1024..=1024 * 1024 * 1024 * 1024).contains(&self.imports.max_upload_bytes) {
            return Err(ConfigError::Invalid {
                key: "imports.max_upload_bytes".into(),
                message: "must be between 1048576 and 1099511627776".into(),
            });
        }
        if !(1..=8).contains(&self.imports.max_concurrent) {
            return bad("imports.max_concurrent", "must be 1 to 8");
        }
        if !(1..=36_500).contains(&self.retention.keep_audio_days) {
            return bad("retention.keep_audio_days", "must be 1 to 36500 days");
        }
        if !(1..=36_500).contains(&self.retention.keep_audit_days) {
            return bad("retention.keep_audit_days", "must be 1 to 36500 days");
        }
        let daily_at = self.backup.daily_at.trim();
        if !daily_at.is_empty() && crate::usecases::backup::schedule::parse_daily_at(daily_at).is_none() {
            return bad("backup.daily_at", "must be empty (off) or a local time HH:MM such as 03:30");
        }
        if !(1..=1000).contains(&self.backup.keep) {
            return bad("backup.keep", "must be 1 to 1000");
        }
        if let Some(bad_entry) = self.metrics.allow.iter().find(|a| parse_network(a).is_none()) {
            return Err(ConfigError::Invalid {
                key: "metrics.allow".into(),
                message: format!("{bad_entry:?} is not an IP address or a network such as 192.168.1.0/24"),
            });
        }
        self.validate_integrations()?;
        self.birdweather.validate()?;
        let key = self.security.mfa_encryption_key.expose();
        if !key.is_empty() && (key.len() != 64 || hex::decode(key).is_err()) {
            return bad("security.mfa_encryption_key", "must be 64 hex characters (32 bytes)");
        }
        Ok(())
    }

    fn validate_integrations(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| Err(ConfigError::Invalid { key: key.into(), message: why.into() });
        let i = &self.integrations;
        let level = |s: &str| !s.is_empty() && !s.contains(['/', '+', '#']) && !s.starts_with('$');
        if !level(&i.home_assistant.discovery_prefix) {
            return bad(
                "integrations.home_assistant.discovery_prefix",
                "must be one topic level without '/', '+' or '#'",
            );
        }
        if !level(&i.feed.root) {
            return bad("integrations.feed.root", "must be one topic level without '/', '+' or '#'");
        }
        let root = &self.mqtt.topic_root;
        if [&i.feed.root, &i.home_assistant.discovery_prefix].contains(&root) {
            return bad(
                "integrations.feed.root",
                "must differ from mqtt.topic_root: the satellites' tree stays closed",
            );
        }
        if i.feed.root == i.home_assistant.discovery_prefix {
            return bad("integrations.feed.root", "must differ from integrations.home_assistant.discovery_prefix");
        }
        let b = &i.bridge;
        if !b.host.trim().is_empty() {
            if b.host.contains([':', '/', ' ']) && b.host.parse::<std::net::Ipv6Addr>().is_err() {
                return bad("integrations.bridge.host", "must be a host name or address, without a scheme or port");
            }
            if b.port == 0 {
                return bad("integrations.bridge.port", "must be 1 to 65535");
            }
            if b.client_id.trim().is_empty() {
                return bad("integrations.bridge.client_id", "must not be empty");
            }
            if !b.ca_file.is_empty() && !b.tls {
                return bad("integrations.bridge.ca_file", "is only used with integrations.bridge.tls = true");
            }
        }
        Ok(())
    }

    fn validate_releases(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| Err(ConfigError::Invalid { key: key.into(), message: why.into() });
        if !(1024..=4 * 1024 * 1024 * 1024).contains(&self.releases.max_apk_bytes) {
            return bad("releases.max_apk_bytes", "must be between 1024 and 4294967296");
        }
        if !(1..=7 * 24 * 60).contains(&self.releases.update_timeout_minutes) {
            return bad("releases.update_timeout_minutes", "must be between 1 and 10080");
        }
        for (key, value) in [
            ("releases.hub_version", &self.releases.hub_version),
            ("releases.satellite_version", &self.releases.satellite_version),
        ] {
            if !value.trim().is_empty() && crate::domain::versions::parse(value).is_err() {
                return bad(key, "must be empty or a SemVer version such as 1.4.0");
            }
        }
        Ok(())
    }

    fn validate_species_images(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| Err(ConfigError::Invalid { key: key.into(), message: why.into() });
        let images = &self.species_images;
        let url = images.source_url.trim();
        if !url.is_empty() {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return bad("species_images.source_url", "must start with http:// or https://");
            }
            if !url.contains("{scientific_name}") {
                return bad("species_images.source_url", "must contain {scientific_name}");
            }
        }
        if !(1024..=64 * 1024 * 1024).contains(&images.max_bytes) {
            return bad("species_images.max_bytes", "must be between 1024 and 67108864");
        }
        if !(1..=300).contains(&images.timeout_secs) {
            return bad("species_images.timeout_secs", "must be between 1 and 300");
        }
        if images.max_attempts == 0 {
            return bad("species_images.max_attempts", "must be at least 1");
        }
        Ok(())
    }

    /// The HTTP address a local client should dial (a wildcard bind becomes loopback).
    pub fn local_http_addr(&self) -> SocketAddr {
        let mut addr = self.http.bind;
        if addr.ip().is_unspecified() {
            addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        addr
    }
}

#[cfg(test)]
mod tests;
