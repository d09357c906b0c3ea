//! The satellite's side of a live-audio session (SPEC 2.8): between `live-start` and `live-stop`
//! every captured chunk is also published as `live-audio` (QoS 0, before the gate, so listeners
//! hear what the microphone hears). The hub repeats `live-start` every 20 s; a session that hears
//! nothing for [`LIVE_SATELLITE_TIMEOUT_SECS`] ends by itself, so a hub that vanished does not
//! keep the satellite streaming.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use base64::Engine;
use rumqttc::QoS;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{chunk::CapturedChunk, link, run::Shared};
use crate::mqtt::{protocol::LIVE_SATELLITE_TIMEOUT_SECS, topics::Channel};

#[derive(Debug)]
struct Session {
    id: String,
    heard: Instant,
    seq: u64,
}

/// The live session, if one is running.
#[derive(Debug, Default)]
pub struct Live {
    session: Mutex<Option<Session>>,
}

impl Live {
    /// `live-start`: starts a session, or refreshes the running one when the id matches.
    pub fn start(&self, id: String) {
        let Ok(mut s) = self.session.lock() else { return };
        match s.as_mut() {
            Some(cur) if cur.id == id => cur.heard = Instant::now(),
            _ => {
                tracing::info!(session = %id, "live session started");
                *s = Some(Session { id, heard: Instant::now(), seq: 0 });
            }
        }
    }

    /// `live-stop`: ends the session (any session when no id is given).
    pub fn stop(&self, id: Option<&str>) {
        let Ok(mut s) = self.session.lock() else { return };
        if s.as_ref().is_some_and(|cur| id.is_none_or(|id| id == cur.id)) {
            tracing::info!("live session stopped");
            *s = None;
        }
    }

    pub fn active(&self) -> Option<String> {
        self.session.lock().ok()?.as_ref().map(|s| s.id.clone())
    }

    /// Publishes the chunk when a session runs.
    pub async fn relay(&self, shared: &Shared, chunk: &CapturedChunk) {
        let next = {
            let Ok(mut s) = self.session.lock() else { return };
            expire(&mut s);
            s.as_mut().map(|cur| {
                cur.seq += 1;
                (cur.id.clone(), cur.seq)
            })
        };
        let Some((session, seq)) = next else { return };
        let body = json!({
            "sessionId": session,
            "satelliteId": shared.settings.satellite_id,
            "tenantId": shared.settings.tenant_id,
            "seq": seq,
            "recordedAt": crate::time::format(chunk.recorded_at),
            "audio": base64::engine::general_purpose::STANDARD.encode(chunk.to_wav()),
        });
        link::publish(shared, Channel::LiveAudio, QoS::AtMostOnce, body.to_string().into_bytes()).await;
    }
}

/// Ends a session the hub stopped refreshing even when no chunk arrives (capture stalled).
pub async fn refresh(shared: Arc<Shared>, shutdown: CancellationToken) {
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
        if let Ok(mut s) = shared.live.session.lock() {
            expire(&mut s);
        }
    }
}

/// Ends the session when the hub has not refreshed it for [`LIVE_SATELLITE_TIMEOUT_SECS`].
fn expire(session: &mut Option<Session>) {
    if session.as_ref().is_some_and(|cur| cur.heard.elapsed() > Duration::from_secs(LIVE_SATELLITE_TIMEOUT_SECS)) {
        tracing::info!("live session timed out (no live-start from the hub)");
        *session = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_refresh_and_stop() {
        let live = Live::default();
        assert_eq!(live.active(), None);
        live.start("a".into());
        live.start("a".into());
        assert_eq!(live.active().as_deref(), Some("a"));
        live.stop(Some("b"));
        assert_eq!(live.active().as_deref(), Some("a"), "another session's stop is ignored");
        live.start("c".into());
        assert_eq!(live.active().as_deref(), Some("c"), "a new session replaces the old one");
        live.stop(None);
        assert_eq!(live.active(), None);
    }
}
