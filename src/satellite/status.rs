//! `heartbeat` every `heartbeatIntervalSec` (SPEC 2.3) and `telemetry` every
//! [`TELEMETRY_EVERY`] (SPEC 2.2).
//!
//! The heartbeat `state` is `error` while capture fails, `scheduled_off` outside the schedule's
//! windows (sun times from the satellite's position), else `recording`. A clean stop sends one
//! last heartbeat, `stopped` ([`goodbye`]), so the hub shows the satellite offline at once
//! instead of after its offline threshold (docs/mqtt.md). Telemetry reports the
//! CPU temperature from `/sys/class/thermal` (null where there is none), the free bytes of the
//! data directory's filesystem and the machine's uptime.

use std::{sync::Arc, time::Duration};

use rumqttc::QoS;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{capture::CaptureStatus, link, run::Shared};
use crate::mqtt::{protocol, topics::Channel};

pub const TELEMETRY_EVERY: Duration = Duration::from_secs(60);

pub async fn run(shared: Arc<Shared>, shutdown: CancellationToken) {
    let mut connected = shared.connected.subscribe();
    let mut config = shared.config.subscribe();
    let mut last_telemetry: Option<tokio::time::Instant> = None;
    loop {
        if connected.borrow_and_update().is_some() {
            heartbeat(&shared).await;
            if last_telemetry.is_none_or(|t| t.elapsed() >= TELEMETRY_EVERY) {
                telemetry(&shared).await;
                last_telemetry = Some(tokio::time::Instant::now());
            }
        }
        let every = Duration::from_secs(u64::from(config.borrow_and_update().heartbeat_interval_sec.max(1)));
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(every) => {}
            // A fresh connection says hello at once; a new interval starts now.
            r = connected.changed() => if r.is_err() { return },
            r = config.changed() => if r.is_err() { return },
        }
    }
}

/// The heartbeat `state` now.
pub fn state(shared: &Shared) -> &'static str {
    if matches!(*shared.capture.borrow(), CaptureStatus::Error(_)) {
        "error"
    } else if !shared.scheduled_on.lock().map(|s| *s).unwrap_or(true) {
        "scheduled_off"
    } else {
        "recording"
    }
}

/// Publishes one heartbeat.
pub async fn heartbeat(shared: &Shared) {
    send_heartbeat(shared, state(shared)).await;
}

/// The last heartbeat of a clean stop: `state` is `stopped`.
pub async fn goodbye(shared: &Shared) {
    send_heartbeat(shared, protocol::STOPPED).await;
}

async fn send_heartbeat(shared: &Shared, state: &str) {
    let (filter, outbox) = match shared.with_outbox(|o| Ok((o.filter_stats()?, o.stats()?))).await {
        Ok(s) => s,
        Err(e) => return tracing::error!(error = %e, "reading outbox stats"),
    };
    let body = json!({
        "satelliteId": shared.settings.satellite_id,
        "tenantId": shared.settings.tenant_id,
        "uptimeSeconds": shared.started.elapsed().as_secs(),
        "state": state,
        "noiseFloorRms": shared.noise_floor.lock().ok().and_then(|n| *n),
        "version": shared.version.lock().map(|v| v.clone()).unwrap_or_default(),
        "stream": "satellite",
        "timestamp": crate::time::now(),
        "filterStats": filter,
        "outboxStats": outbox,
        "update": shared.last_update.lock().ok().and_then(|u| u.clone()),
    });
    link::publish(shared, Channel::Heartbeat, QoS::AtLeastOnce, body.to_string().into_bytes()).await;
}

async fn telemetry(shared: &Shared) {
    let body = json!({
        "satelliteId": shared.settings.satellite_id,
        "tenantId": shared.settings.tenant_id,
        "timestamp": crate::time::now(),
        "batteryLevel": null,
        "storageFreeBytes": free_bytes(&shared.settings.data_dir),
        "cpuTemp": cpu_temp().await,
        "networkLatencyMs": null,
        "packetLossPct": null,
        "uptimeSeconds": machine_uptime().await.unwrap_or_else(|| shared.started.elapsed().as_secs()),
    });
    link::publish(shared, Channel::Telemetry, QoS::AtLeastOnce, body.to_string().into_bytes()).await;
}

fn free_bytes(dir: &std::path::Path) -> Option<u64> {
    let s = rustix::fs::statvfs(dir).ok()?;
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

async fn cpu_temp() -> Option<f64> {
    let milli = tokio::fs::read_to_string("/sys/class/thermal/thermal_zone0/temp").await.ok()?;
    milli.trim().parse::<f64>().ok().map(|m| (m / 100.0).round() / 10.0)
}

async fn machine_uptime() -> Option<u64> {
    let text = tokio::fs::read_to_string("/proc/uptime").await.ok()?;
    text.split_whitespace().next()?.parse::<f64>().ok().map(|s| s as u64)
}

/// The installed version: the last word of what `version_command` prints (`birdhub 0.4.0`
/// gives `0.4.0`), or this binary's own version when the command fails.
pub async fn read_version(command: &str) -> String {
    let out = tokio::process::Command::new("sh").arg("-c").arg(command).kill_on_drop(true).output();
    match tokio::time::timeout(Duration::from_secs(10), out).await {
        Ok(Ok(o)) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            if let Some(v) = text.split_whitespace().last() {
                return v.to_owned();
            }
        }
        Ok(Ok(o)) => tracing::warn!(status = %o.status, "the version command failed"),
        Ok(Err(e)) => tracing::warn!(error = %e, "could not run the version command"),
        Err(_) => tracing::warn!("the version command took longer than 10 s"),
    }
    env!("CARGO_PKG_VERSION").to_owned()
}
