//! Publishes the outbox (SPEC 2.1, 2.6): unacked rows, oldest first, as `audio` with QoS 1, at
//! most `resend_per_sec` a second, only while connected.
//!
//! A row is due when it was never sent, was sent on an earlier connection (so after a reconnect
//! the whole backlog goes again, oldest first), or was sent [`ACK_WAIT`] ago with no `ack`. The
//! hub stores a chunk id once, so a resend never makes a duplicate.

use std::{sync::Arc, time::Duration};

use base64::Engine;
use chrono::Utc;
use rumqttc::QoS;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{link, outbox::Pending, run::Shared};
use crate::mqtt::topics::Channel;

/// How long a sent chunk waits for its `ack` before it is sent again on the same connection.
pub const ACK_WAIT: Duration = Duration::from_secs(30);

pub async fn run(shared: Arc<Shared>, shutdown: CancellationToken) {
    let mut connected = shared.connected.subscribe();
    let per_sec = shared.settings.resend_per_sec.max(1);
    let gap = Duration::from_secs(1) / per_sec;
    loop {
        let since = *connected.borrow_and_update();
        let Some(since) = since else {
            tokio::select! {
                () = shutdown.cancelled() => return,
                r = connected.changed() => if r.is_err() { return },
            }
            continue;
        };
        let ack_wait = chrono::Duration::from_std(ACK_WAIT).unwrap_or_default();
        let resend_before = since.max(Utc::now() - ack_wait);
        let batch = per_sec as usize;
        let due = match shared.with_outbox(move |o| o.due(batch, resend_before)).await {
            Ok(d) => d,
            Err(e) => {
                tracing::error!(error = %e, "reading the outbox");
                Vec::new()
            }
        };
        if due.is_empty() {
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = shared.wake.notified() => {}
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
                r = connected.changed() => if r.is_err() { return },
            }
            continue;
        }
        for p in due {
            if shutdown.is_cancelled() || connected.borrow().is_none() {
                break;
            }
            let id = p.chunk_id;
            if link::publish(&shared, Channel::Audio, QoS::AtLeastOnce, message(&shared, &p)).await
                && let Err(e) = shared.with_outbox(move |o| o.mark_sent(id, Utc::now())).await
            {
                tracing::error!(error = %e, "marking a chunk sent");
            }
            tokio::time::sleep(gap).await;
        }
    }
}

/// The `audio` message of SPEC 2.1.
fn message(shared: &Shared, p: &Pending) -> Vec<u8> {
    json!({
        "chunkId": p.chunk_id,
        "satelliteId": shared.settings.satellite_id,
        "tenantId": shared.settings.tenant_id,
        "recordedAt": crate::time::format(p.recorded_at),
        "durationMs": p.duration_ms,
        "sampleRate": super::chunk::CHUNK_RATE,
        "latitude": shared.settings.latitude,
        "longitude": shared.settings.longitude,
        "audio": base64::engine::general_purpose::STANDARD.encode(&p.wav),
    })
    .to_string()
    .into_bytes()
}
