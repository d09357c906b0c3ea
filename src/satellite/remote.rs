//! What the hub sends a satellite (SPEC 2.5-2.8): `ack`, `config`, `update`, `log-request`,
//! `live-start` and `live-stop`. A malformed message is logged and ignored; a malformed `config`
//! leaves the last good one in force.

use std::{process::Stdio, time::Duration};

use chrono::Utc;
use rumqttc::QoS;
use serde_json::{Value, json};

use super::{
    link,
    run::{Shared, caps_of},
    settings::SatelliteSettings,
    status,
};
use crate::{
    domain::satellite_config::ConfigPush,
    mqtt::{
        protocol::{Ack, LiveControl, LogRequest, Update},
        topics::Channel,
    },
};

/// The most log text a satellite sends back (the hub keeps at most 1 MiB too).
pub const MAX_LOG_BYTES: usize = 1 << 20;
/// The most lines a satellite sends back.
pub const MAX_LOG_LINES: u32 = 5000;
/// How long an update command may run before it is abandoned.
const UPDATE_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// The most lines of the update command's output logged and reported to the hub.
const UPDATE_TAIL_LINES: usize = 10;

pub async fn on_ack(shared: &Shared, payload: &[u8]) {
    let ack = match serde_json::from_slice::<Ack>(payload) {
        Ok(a) => a,
        Err(e) => return tracing::warn!(error = %e, "ignoring a malformed ack"),
    };
    let Ok(id) = uuid::Uuid::parse_str(&ack.chunk_id) else {
        return tracing::warn!(chunk = %ack.chunk_id, "ignoring an ack for a chunk id that is not a uuid");
    };
    let stored = ack.status == "stored";
    if !stored {
        tracing::warn!(chunk = %id, error = ack.error.as_deref().unwrap_or(""), "the hub refused a chunk");
    }
    let error = ack.error.clone();
    match shared.with_outbox(move |o| o.ack(id, stored, error.as_deref(), Utc::now())).await {
        Ok(super::outbox::AckOutcome::Failed) => {
            tracing::error!(chunk = %id, "the hub refused a chunk too often; it is counted as failed and not sent again")
        }
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, "recording an ack"),
    }
}

pub async fn on_message(shared: &Shared, channel: Channel, payload: Vec<u8>) {
    match channel {
        Channel::Config => on_config(shared, &payload).await,
        Channel::Update => match serde_json::from_slice::<Update>(&payload) {
            Ok(u) => on_update(shared, u).await,
            Err(e) => tracing::warn!(error = %e, "ignoring a malformed update"),
        },
        Channel::LogRequest => match serde_json::from_slice::<LogRequest>(&payload) {
            Ok(r) => on_log_request(shared, r).await,
            Err(e) => tracing::warn!(error = %e, "ignoring a malformed log-request"),
        },
        Channel::LiveStart => match live_control(&payload) {
            Some(id) => shared.live.start(id),
            None => tracing::warn!("ignoring a live-start without a sessionId"),
        },
        Channel::LiveStop => shared.live.stop(live_control(&payload).as_deref()),
        other => tracing::debug!(channel = other.as_str(), "ignoring a message on a channel the hub does not send"),
    }
}

fn live_control(payload: &[u8]) -> Option<String> {
    if payload.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    serde_json::from_slice::<LiveControl>(payload).ok()?.session_id
}

/// Parses and checks a `config` push meant for this satellite.
pub fn parse_config(text: &str, settings: &SatelliteSettings) -> Result<ConfigPush, String> {
    let c: ConfigPush = serde_json::from_str(text).map_err(|e| format!("not a config push: {e}"))?;
    if c.satellite_id != settings.satellite_id.to_string() {
        return Err(format!("meant for satellite {}", c.satellite_id));
    }
    c.recording_profile.validate().map_err(|e| format!("recordingProfile: {e}"))?;
    if c.recording_profile.sample_rate != super::chunk::CHUNK_RATE {
        tracing::warn!(rate = c.recording_profile.sample_rate, "this satellite always records at 48 kHz (SPEC 2.1)");
    }
    if !(0.0..=1.0).contains(&c.filter_min_rms) || !(0.0..=1.0).contains(&c.classifier_min_bird_prob) {
        return Err("filterMinRms and classifierMinBirdProb must be within 0 to 1".into());
    }
    if c.heartbeat_interval_sec == 0 || c.outbox_hard_size_mb == 0 {
        return Err("heartbeatIntervalSec and outboxHardSizeMb must be positive".into());
    }
    Ok(c)
}

async fn on_config(shared: &Shared, payload: &[u8]) {
    let text = String::from_utf8_lossy(payload).into_owned();
    let config = match parse_config(&text, &shared.settings) {
        Ok(c) => c,
        Err(e) => return tracing::warn!(error = %e, "ignoring a bad config push; keeping the last good one"),
    };
    let caps = caps_of(&config);
    let saved = shared
        .with_outbox(move |o| {
            o.set_caps(caps);
            o.save_config(&text)?;
            o.evict(Utc::now())
        })
        .await;
    if let Err(e) = saved {
        tracing::error!(error = %e, "saving the config");
    }
    tracing::info!(
        min_rms = config.filter_min_rms,
        heartbeat_sec = config.heartbeat_interval_sec,
        schedule = config.recording_profile.schedule.len(),
        "applied a config push"
    );
    shared.config.send_replace(config);
}

async fn on_update(shared: &Shared, u: Update) {
    if u.satellite_id != shared.settings.satellite_id.to_string() {
        return tracing::warn!(to = %u.satellite_id, "ignoring an update meant for another satellite");
    }
    // The report of an earlier update no longer applies once a new one starts.
    if let Ok(mut last) = shared.last_update.lock() {
        *last = None;
    }
    tracing::info!(target = %u.target_version, command = %shared.settings.update_command, "updating");
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(&shared.settings.update_command)
        .env("BIRDHUB_TARGET_VERSION", &u.target_version)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let outcome = match tokio::time::timeout(UPDATE_TIMEOUT, cmd.output()).await {
        Ok(Ok(out)) => {
            let tail = output_tail(&out.stdout, &out.stderr, UPDATE_TAIL_LINES);
            // The command's last lines go to this satellite's log, which the hub's logs view reads.
            for line in &tail {
                tracing::info!("update command: {line}");
            }
            if out.status.success() {
                tracing::info!("the update command finished");
                UpdateOutcome { failed: false, exit_code: out.status.code(), message: String::new() }
            } else {
                tracing::error!(status = %out.status, "the update command failed");
                let mut message = format!("the update command failed ({})", out.status);
                for line in &tail {
                    message.push('\n');
                    message.push_str(line);
                }
                UpdateOutcome { failed: true, exit_code: out.status.code(), message }
            }
        }
        Ok(Err(e)) => {
            tracing::error!(error = %e, "could not run the update command");
            UpdateOutcome { failed: true, exit_code: None, message: format!("could not run the update command: {e}") }
        }
        Err(_) => {
            tracing::error!("the update command took longer than 15 minutes; abandoned");
            let message = "the update command took longer than 15 minutes and was stopped".to_owned();
            UpdateOutcome { failed: true, exit_code: None, message }
        }
    };
    let report = json!({
        "targetVersion": u.target_version,
        "status": if outcome.failed { "failed" } else { "succeeded" },
        "exitCode": outcome.exit_code,
        "message": outcome.message,
        "finishedAt": crate::time::now(),
    });
    if let Ok(mut last) = shared.last_update.lock() {
        *last = Some(report);
    }
    let version = status::read_version(&shared.settings.version_command).await;
    if let Ok(mut v) = shared.version.lock() {
        *v = version;
    }
    // The hub clears the update when a heartbeat reports the target, and shows a failure: say it now.
    status::heartbeat(shared).await;
}

/// How an update command ended.
struct UpdateOutcome {
    failed: bool,
    exit_code: Option<i32>,
    /// Empty on success; else what went wrong and the command's last lines.
    message: String,
}

/// The last `n` non-empty lines the command wrote (its output, then its errors), each cut to
/// 300 characters.
pub fn output_tail(stdout: &[u8], stderr: &[u8], n: usize) -> Vec<String> {
    let (out, err) = (String::from_utf8_lossy(stdout), String::from_utf8_lossy(stderr));
    let lines: Vec<String> = out
        .lines()
        .chain(err.lines())
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.chars().take(300).collect())
        .collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

async fn on_log_request(shared: &Shared, r: LogRequest) {
    let tail = r.tail.clamp(1, MAX_LOG_LINES);
    let (text, truncated) = match super::logs::tail(&shared.settings, tail).await {
        Ok(t) => t,
        Err(e) => (format!("birdhub satellite: could not read the log: {e}"), false),
    };
    let body: Value = json!({
        "requestId": r.request_id,
        "satelliteId": shared.settings.satellite_id,
        "tenantId": shared.settings.tenant_id,
        "text": text,
        "truncated": truncated,
    });
    link::publish(shared, Channel::LogResponse, QoS::AtLeastOnce, body.to_string().into_bytes()).await;
}
