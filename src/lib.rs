//! birdhub: the hub of a bird-sound network.
//!
//! Satellites stream 3 s audio chunks over MQTT; the hub stores them, names the birds in-process
//! and serves people over HTTP, WebSocket and a dashboard. The map is `ARCHITECTURE.md`.
//!
//! - [`app`]: starts and supervises everything a mode needs; the entry point of `birdhub serve`.
//! - [`cli`]: the command line (`serve`, `migrate`, `admin`, `classify`, `bench`, `model`, ...).
//! - [`clock`]: the movable clock every time rule reads.
//! - [`config`]: the one `Settings` struct and its layers (defaults, file, env, flags).
//! - [`domain`]: rules with no I/O (roles, settings and their defaults).
//! - [`state`]: `AppState`, the cloneable handle every handler and task receives.
//! - [`usecases`]: one function per thing a person or device does; owns its transaction, typed errors.
//! - [`store`]: SQLite: the pool, the migrations and every SQL statement.
//! - [`mail`]: SMTP (lettre), or recorded and dropped when no server is configured.
//! - [`notify`]: alert notifications: webhook body, payload templates, chat shapes, mail text, signature, the POST.
//! - [`mqtt`]: the embedded broker, satellite logins and ACL, ingest, and what the hub publishes.
//! - [`objects`]: the filesystem object store (WAV, APKs, images) with atomic writes.
//! - [`satellite`]: `birdhub satellite`, the reference recording satellite (capture, gate, outbox, MQTT).
//! - [`cache`]: the in-memory TTL cache, counters and service registry (stands in for Redis).
//! - [`events`]: the typed in-process event bus.
//! - [`auth`]: passwords and, later, tokens, keys, MFA and the role checks.
//! - [`api`]: the axum router under `/api`, `ApiError` and the extractors.
//! - [`media`]: pictures made from audio (the spectrogram PNG).
//! - [`inference`]: the classifier (ONNX Runtime), audio decoding, labels and the range filter.
//! - [`integrations`]: Home Assistant discovery, the MQTT feed and the bridge to another broker.
//! - [`jobs`]: background tasks (service registry refresh, monitors, retention, the species image fetcher).
//! - [`net`]: the HTTP listener's connections with TCP_NODELAY (WebSocket frames go out at once).
//! - [`mdns`]: the hub's mDNS/DNS-SD advertisement (`_birdhub._tcp`) and the client's discovery.
//! - [`metrics`]: Prometheus metrics of this process and `GET /metrics`.
//! - [`links`]: the hub's own public addresses for links in mail and API responses.
//! - [`ids`]: typed identifiers so a tenant id is never passed where a satellite id belongs.
//! - [`time`]: the timestamp format of the SPEC.
//! - [`birdweather`]: the BirdWeather client (station token, uploads, the read-only token test) and FLAC.
//! - [`logging`]: where the log goes (journald's native protocol under systemd, else stderr).
//! - [`process_memory`]: the process's memory: the allocator tuned before anything runs.
//! - [`systemd`]: `sd_notify`: ready, stopping and the watchdog pings while the database answers.
//! - [`web`]: the LAN dashboard: server-rendered pages, embedded assets, the first-run setup code.

pub mod api;
pub mod app;
pub mod auth;
pub mod birdweather;
pub mod cache;
pub mod cli;
pub mod clock;
pub mod config;
pub mod domain;
pub mod events;
pub mod ids;
pub mod inference;
pub mod integrations;
pub mod jobs;
pub mod links;
pub mod logging;
pub mod mail;
pub mod mdns;
pub mod media;
pub mod metrics;
pub mod mqtt;
pub mod net;
pub mod notify;
pub mod objects;
pub mod process_memory;
pub mod satellite;
pub mod state;
pub mod store;
pub mod systemd;
pub mod time;
pub mod usecases;
pub mod web;

/// Installs the process-wide TLS crypto provider (ring) that reqwest and rumqttc build on. Call
/// it before creating an HTTP or MQTT client; later calls are harmless.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
