//! Live audio over the team WebSocket (`/api/ws/events`, SPEC 2.8, 4.15): the frames a client
//! sends to watch a satellite, and the hub's answers. The sessions themselves are
//! `usecases::satellite_live`'s.
//!
//! Client frames (JSON text):
//! - `{"type": "live-start", "satelliteId"}`: Member+ of the socket's team, for a satellite of
//!   that team. Creates the satellite's session (the hub sends it `live-start {sessionId}`) or
//!   joins the running one; answers `{"type": "live-started", "data": {sessionId, satelliteId,
//!   watchers}}`. Counts as a keepalive.
//! - `{"type": "live-keepalive", "satelliteId"}`: every 20 s while watching; no answer.
//! - `{"type": "live-stop", "satelliteId"}`: stops watching; answers `{"type": "live-stopped",
//!   "data": {sessionId, satelliteId, watchers}}`. The last watcher leaving ends the session
//!   (the hub sends `live-stop`). Closing the socket leaves every session it watched.
//!
//! While watching, the socket receives `{"type": "live-audio", "data": {sessionId, satelliteId,
//! seq, recordedAt, audio}}` for each chunk, and `{"type": "live-ended", "data": {sessionId,
//! satelliteId, reason}}` (`timeout`, `stopped`, `satellite_deleted`) if the session ends
//! without it leaving, or (`access_revoked`) at once when the watching person loses the member
//! role in the team (removed, demoted to viewer, blocked, deleted): that watcher leaves, the others
//! keep watching. A refused frame is answered `{"type": "error", "data": {code, message}}`
//! (`invalid_message`, `forbidden`, `satellite_not_found`, `not_watching`, `mqtt_unavailable`)
//! and the socket stays open.

use axum::http::{HeaderMap, Method};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::{
    auth::{Audit, AuthError, guard},
    domain::Role,
    ids::{SatelliteId, TenantId},
    mqtt::live::{Frame, Left, Watcher},
    state::AppState,
    usecases::satellite_live::{self, LiveError},
};

/// A frame a client sends.
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
enum ClientFrame {
    #[serde(rename = "live-start", rename_all = "camelCase")]
    Start { satellite_id: SatelliteId },
    #[serde(rename = "live-keepalive", rename_all = "camelCase")]
    Keepalive { satellite_id: SatelliteId },
    #[serde(rename = "live-stop", rename_all = "camelCase")]
    Stop { satellite_id: SatelliteId },
}

/// One socket's side of live audio: it watches as one [`Watcher`].
pub struct LiveSocket {
    state: AppState,
    tenant: TenantId,
    credentials: HeaderMap,
    ip: String,
    watcher: Watcher,
}

/// The `error` frame.
fn error(code: &str, message: impl std::fmt::Display) -> Value {
    json!({ "type": "error", "data": { "code": code, "message": message.to_string() } })
}

fn refused(e: LiveError) -> Value {
    let code = match &e {
        LiveError::SatelliteNotFound => "satellite_not_found",
        LiveError::NotWatching => "not_watching",
        LiveError::NoSession => "live_session_not_found",
        LiveError::Publish(_) => "mqtt_unavailable",
        LiveError::Store(_) => "unavailable",
    };
    error(code, e)
}

impl LiveSocket {
    /// A socket of `tenant`, authenticated by `credentials`, ready to watch; the receiver yields
    /// the live frames to send it.
    pub fn open(
        state: &AppState,
        tenant: TenantId,
        credentials: HeaderMap,
        ip: String,
    ) -> (Self, mpsc::Receiver<Frame>) {
        let (watcher, frames) = state.live.watcher();
        (Self { state: state.clone(), tenant, credentials, ip, watcher }, frames)
    }

    /// Handles one text frame from the client; returns the answer to send, if any.
    pub async fn handle(&self, text: &str) -> Option<Value> {
        let frame: ClientFrame = match serde_json::from_str(text) {
            Ok(f) => f,
            Err(e) => return Some(error("invalid_message", format!("not a frame this socket understands: {e}"))),
        };
        let ctx = self.state.live_ctx();
        match frame {
            ClientFrame::Start { satellite_id } => Some(self.start(satellite_id).await),
            ClientFrame::Keepalive { satellite_id } => {
                satellite_live::keepalive(ctx, satellite_id, &self.watcher).err().map(refused)
            }
            ClientFrame::Stop { satellite_id } => {
                Some(match satellite_live::stop_watching(ctx, satellite_id, &self.watcher).await {
                    Ok(Left::Stayed { session_id, watchers }) => stopped(&session_id, satellite_id, watchers),
                    Ok(Left::Ended(session)) => stopped(&session.session_id, satellite_id, 0),
                    Ok(Left::NotWatching) => refused(LiveError::NotWatching),
                    Err(e) => refused(e),
                })
            }
        }
    }

    async fn start(&self, satellite: SatelliteId) -> Value {
        // The role is read now, not when the socket opened: a demoted member may not start.
        let auth = match guard::admit(&self.state, &Method::GET, super::ws::PATH, &self.credentials).await {
            Ok(ctx) => guard::access(&self.state, &ctx, Some(self.tenant), Role::Member).await.map(|_| ctx),
            Err(e) => Err(e),
        };
        let ctx = match auth {
            Ok(ctx) => ctx,
            Err(AuthError::Store(e)) => return error("unavailable", e),
            Err(_) => return error("forbidden", "live audio needs the member role or higher in this team"),
        };
        match satellite_live::start(self.state.live_ctx(), self.tenant, satellite, &self.watcher, ctx.user_id()).await {
            Ok(joined) => {
                if joined.created {
                    Audit::new("admin.satellite_live_started")
                        .actor(&ctx)
                        .tenant(self.tenant)
                        .target("satellite", satellite)
                        .ip(&self.ip)
                        .details(json!({ "sessionId": joined.session.session_id }))
                        .write(&self.state)
                        .await;
                }
                json!({
                    "type": "live-started",
                    "data": {
                        "sessionId": joined.session.session_id,
                        "satelliteId": satellite,
                        "watchers": joined.watchers,
                    },
                })
            }
            Err(e) => refused(e),
        }
    }

    /// Leaves every session this socket watched (it is closing).
    pub async fn close(self) {
        satellite_live::leave_all(self.state.live_ctx(), &self.watcher).await;
    }
}

fn stopped(session_id: &str, satellite: SatelliteId, watchers: usize) -> Value {
    json!({
        "type": "live-stopped",
        "data": { "sessionId": session_id, "satelliteId": satellite, "watchers": watchers },
    })
}
