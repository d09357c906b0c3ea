//! `birdhub satellite run`: capture -> schedule -> gate -> outbox -> MQTT, and the device's side
//! of the protocol (config, heartbeat, telemetry, ack, update, log-request, live audio).
//!
//! Five tasks share one [`Shared`]: capture (its own module), the [`pipeline`](super::pipeline)
//! that judges and stores chunks, the [`sender`](super::sender) that publishes the outbox, the
//! [`link`](super::link) that keeps the MQTT connection and dispatches what the hub sends, and
//! the [`status`](super::status) reporter (heartbeat and telemetry).

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Instant,
};

use anyhow::Context;
use chrono::{DateTime, Utc};
use tokio::sync::{Notify, mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::{
    capture::{self, CaptureOptions, CaptureProfile, CaptureStatus},
    clock_sync,
    gate::{FilterConfig, Gate},
    link, live, outbox, pipeline, remote, sender,
    settings::SatelliteSettings,
    status,
};
use crate::domain::{
    satellite_config::{ConfigPush, Overrides, resolve},
    settings::TenantSettings,
};

/// What every task of a running satellite shares.
pub struct Shared {
    pub settings: SatelliteSettings,
    /// The outbox (blocking: lock it inside `spawn_blocking`).
    pub outbox: Arc<Mutex<outbox::Outbox>>,
    /// The config in force: the last good push, or the defaults before the first one.
    pub config: watch::Sender<ConfigPush>,
    pub capture: watch::Receiver<CaptureStatus>,
    /// When the current MQTT connection came up (`None` while disconnected).
    pub connected: watch::Sender<Option<DateTime<Utc>>>,
    /// The MQTT client; publishes queue inside rumqttc until the connection is up.
    pub client: rumqttc::AsyncClient,
    /// Wakes the sender when a chunk was stored or an ack freed a slot.
    pub wake: Notify,
    /// The RMS of the last chunk captured (before the gate), for `noiseFloorRms`.
    pub noise_floor: Mutex<Option<f64>>,
    /// The installed version, read from `version_command` at start and after an update.
    pub version: Mutex<String>,
    /// Whether the schedule says record now (updated by the pipeline for every chunk).
    pub scheduled_on: Mutex<bool>,
    /// How the last update command ended, sent in every heartbeat (`update`) until the next
    /// update starts, so the hub can show a failure (SPEC 2.3 as extended in docs/satellites.md).
    pub last_update: Mutex<Option<serde_json::Value>>,
    pub live: live::Live,
    pub started: Instant,
    /// False until the system clock is synchronised ([`clock_sync`]): the pipeline drops what
    /// capture hands it meanwhile, so no chunk carries a boot-time stamp.
    pub clock_synced: AtomicBool,
}

impl Shared {
    /// `{root}/{tenant}/{satellite}/{channel}`.
    pub fn topic(&self, channel: crate::mqtt::topics::Channel) -> String {
        format!("{}{}", self.prefix(), channel.as_str())
    }

    pub fn prefix(&self) -> String {
        format!("{}/{}/{}/", self.settings.topic_root, self.settings.tenant_id, self.settings.satellite_id)
    }

    pub fn position(&self) -> Option<(f64, f64)> {
        self.settings.latitude.zip(self.settings.longitude)
    }

    /// Runs `f` on the outbox in a blocking thread.
    pub async fn with_outbox<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut outbox::Outbox) -> Result<T, outbox::OutboxError> + Send + 'static,
    ) -> anyhow::Result<T> {
        let ob = self.outbox.clone();
        let out = tokio::task::spawn_blocking(move || {
            let mut guard = ob.lock().map_err(|_| anyhow::anyhow!("outbox lock poisoned"))?;
            f(&mut guard).map_err(anyhow::Error::from)
        })
        .await??;
        Ok(out)
    }
}

/// The filter part of a config push.
pub fn filter_of(c: &ConfigPush) -> FilterConfig {
    FilterConfig {
        enabled: c.filter_enabled,
        min_rms: c.filter_min_rms,
        classifier_min_bird_prob: c.classifier_min_bird_prob,
        excluded: c.excluded_classifier_categories.clone(),
    }
}

/// The capture part of a config push.
pub fn profile_of(c: &ConfigPush) -> CaptureProfile {
    let p = &c.recording_profile;
    CaptureProfile { chunk_ms: p.chunk_duration_ms, overlap_ms: p.overlap_ms, gain: p.gain }
}

pub fn caps_of(c: &ConfigPush) -> outbox::Caps {
    outbox::Caps {
        soft_mb: c.outbox_soft_size_mb,
        hard_mb: c.outbox_hard_size_mb,
        max_age_hours: c.outbox_max_age_hours,
    }
}

/// The config before the hub's first push: the team defaults the hub would send.
fn default_config(s: &SatelliteSettings) -> ConfigPush {
    resolve(
        &s.satellite_id.to_string(),
        &s.tenant_id.to_string(),
        &TenantSettings::default(),
        &Overrides::default(),
        None,
    )
}

/// Runs the satellite until `shutdown` is cancelled (SIGTERM/SIGINT in the CLI).
pub async fn run(mut settings: SatelliteSettings, shutdown: CancellationToken) -> anyhow::Result<()> {
    // A hand-written config may name the hub's `NAME.local`, which not every network resolves.
    settings.mqtt_host =
        super::register::dialable_host(&settings.mqtt_host, settings.mqtt_port, &settings.hub_url).await;
    let source = settings.source().map_err(|e| anyhow::anyhow!("source {:?}: {e}", settings.source))?;
    std::fs::create_dir_all(&settings.data_dir)
        .with_context(|| format!("creating the data directory {}", settings.data_dir.display()))?;
    let mut config = default_config(&settings);
    let (dir, max_attempts) = (settings.data_dir.join("outbox"), settings.max_attempts);
    let caps = caps_of(&config);
    let mut ob = tokio::task::spawn_blocking(move || outbox::Outbox::open(&dir, caps, max_attempts))
        .await?
        .context("opening the outbox")?;
    if let Some(saved) = ob.last_config()? {
        match remote::parse_config(&saved, &settings) {
            Ok(c) => {
                tracing::info!("using the last config the hub pushed until it sends a new one");
                config = c;
                ob.set_caps(caps_of(&config));
            }
            Err(e) => tracing::warn!(error = %e, "ignoring the saved config"),
        }
    }
    let filter_stats = ob.filter_stats()?;

    let (profile_tx, profile_rx) = watch::channel(profile_of(&config));
    let (status_tx, status_rx) = watch::channel(CaptureStatus::Running);
    let (chunk_tx, chunk_rx) = mpsc::channel(4);
    let (client, eventloop) = link::client(&settings);
    let version = status::read_version(&settings.version_command).await;
    tracing::info!(satellite = %settings.satellite_id, name = %settings.name, %version, source = %settings.source,
                   "birdhub satellite starting");
    let shared = Arc::new(Shared {
        outbox: Arc::new(Mutex::new(ob)),
        config: watch::channel(config).0,
        capture: status_rx,
        connected: watch::channel(None).0,
        client,
        wake: Notify::new(),
        noise_floor: Mutex::new(None),
        version: Mutex::new(version),
        scheduled_on: Mutex::new(true),
        last_update: Mutex::new(None),
        live: live::Live::default(),
        started: Instant::now(),
        clock_synced: AtomicBool::new(!settings.require_clock_sync),
        settings,
    });

    let capture_task = capture::spawn(
        CaptureOptions {
            source,
            pace: shared.settings.pace,
            loop_dir: shared.settings.loop_dir,
            state_dir: shared.settings.data_dir.join("capture"),
        },
        profile_rx,
        chunk_tx,
        status_tx,
        shutdown.clone(),
    );
    // Config pushes reach capture through its profile channel.
    let mut config_rx = shared.config.subscribe();
    let profiles = tokio::spawn(async move {
        while config_rx.changed().await.is_ok() {
            let p = profile_of(&config_rx.borrow_and_update());
            profile_tx.send_replace(p);
        }
    });
    let model_dir = shared.settings.model_dir.clone();
    let gate = tokio::task::spawn_blocking(move || Gate::new(model_dir.as_deref())).await?;
    if gate.has_classifier() {
        tracing::info!("the classifier gate is on (the model is installed here)");
    }
    let tasks = vec![
        tokio::spawn(pipeline::run(shared.clone(), gate, filter_stats, chunk_rx, shutdown.clone())),
        tokio::spawn(sender::run(shared.clone(), shutdown.clone())),
        tokio::spawn(link::run(shared.clone(), eventloop, shutdown.clone())),
        tokio::spawn(status::run(shared.clone(), shutdown.clone())),
        tokio::spawn(live::refresh(shared.clone(), shutdown.clone())),
        tokio::spawn(await_clock_sync(shared.clone(), shutdown.clone())),
    ];
    shutdown.cancelled().await;
    // The link says goodbye to the hub and disconnects ([`link::run`]).
    tracing::info!("stopping: the outbox keeps every chunk that was not acknowledged");
    for t in tasks {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), t).await;
    }
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), capture_task).await;
    profiles.abort();
    Ok(())
}

/// Lets the pipeline record once the clock is synchronised (or the probe cannot tell).
async fn await_clock_sync(shared: Arc<Shared>, shutdown: CancellationToken) {
    if shared.clock_synced.load(Ordering::Relaxed) {
        return; // require_clock_sync = false
    }
    let command = clock_sync::command(&shared.settings.clock_sync_command);
    let probe = || clock_sync::run_command(&command);
    if clock_sync::wait_for_sync(probe, clock_sync::PROBE_EVERY, &shutdown).await != clock_sync::Waited::Stopped {
        shared.clock_synced.store(true, Ordering::Relaxed);
    }
}
