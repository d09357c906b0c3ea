//! `GET /api/ws/events?tenantId=` (SPEC 4.14, 6.1): real-time events of one team over a WebSocket.
//!
//! Authenticated like HTTP (session cookie, `Authorization` header), or with `?token=` carrying a
//! session JWT or API key for clients that cannot set headers. Viewer+ of the team. Frames are
//! JSON text: `{"type": "hello", "data": {"tenantId"}}` first, then `{"type": "detection",
//! "data": {...}}` for each new detection (the fields of SPEC 2.7), `satellite` frames when a
//! satellite goes offline or comes back, `heartbeat` frames (`{satelliteId}`) when one reports,
//! and `alert` frames. The server pings every 30 s.
//!
//! Clients also watch satellites' live audio on this socket (`live-start`, `live-keepalive`,
//! `live-stop` frames; see [`super::ws_live`]).
//!
//! The socket passes the gates of every HTTP route ([`guard::admit`]): a person who still has to
//! set up the two-factor sign-in a team requires is refused (403 `mfa_enrollment_required`), and
//! so is a satellite's own key (403 `satellite_key_not_allowed`).
//!
//! A socket is only as good as its credentials: every [`RECHECK`] it resolves them and applies
//! those gates again, and it is closed (code 1008, policy) once its session is revoked, its user
//! blocked or removed from the team, its API key revoked, or a team of the user starts requiring
//! two-factor sign-in that they have not set up.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use std::time::Duration;

use axum::{
    extract::{
        State, WebSocketUpgrade,
        ws::{CloseFrame, Message, WebSocket, close_code},
    },
    http::{HeaderMap, HeaderValue, Method, header},
    response::Response,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ApiError, Query, ws_live::LiveSocket};
use crate::{
    auth::{AuthError, ClientIp, context, guard},
    domain::Role,
    events::Event,
    ids::TenantId,
    state::AppState,
};

/// How often an open socket re-checks its credentials: the longest a revoked one keeps listening.
pub const RECHECK: Duration = Duration::from_secs(2);

/// The socket's route, as the credential gates see it.
pub(super) const PATH: &str = "/ws/events";

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(events))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WsQuery {
    tenant_id: Option<TenantId>,
    token: Option<String>,
}

#[utoipa::path(
    get, path = "/ws/events", tag = tags::WEBSOCKET,
    description = "Viewer+ of the team; not a satellite's own key (403 `satellite_key_not_allowed`), nor a person who must first set up the two-factor sign-in a team requires (403 `mfa_enrollment_required`). Upgrades to a WebSocket of the team's real-time events (SPEC 6.1). Authenticated like HTTP, or with `?token=` (a session JWT or API key) for clients that cannot set headers. Frames are JSON text: `{type: hello, data: {tenantId}}` first, then `{type: detection, data}` for each new detection, `{type: satellite, data: {status: offline|online, satellite: {tenantId, satelliteId, name, lastSeenAt}}}` when a satellite goes offline or comes back, `{type: heartbeat, data: {satelliteId}}` when a satellite's heartbeat or telemetry was recorded (in the all-in-one hub; not relayed to API processes in split mode), and `{type: alert, data}` for each alert raised. The socket closes (1008) when its credentials stop being valid or stop passing those gates (checked every 2 s).\n\nLive audio (Member+, a satellite of the team): send `{type: live-start, satelliteId}` to create or join the satellite's one session (answer `{type: live-started, data: {sessionId, satelliteId, watchers}}`; the hub sends the satellite `live-start {sessionId}`), `{type: live-keepalive, satelliteId}` every 20 s (no answer), `{type: live-stop, satelliteId}` to stop watching (answer `{type: live-stopped, data}`; the last watcher leaving, or closing the socket, ends the session with `live-stop`). Watchers receive `{type: live-audio, data: {sessionId, satelliteId, seq, recordedAt, audio}}` per chunk and `{type: live-ended, data: {sessionId, satelliteId, reason}}` when it ends otherwise (`timeout` after `LIVE_AUDIO_TIMEOUT_MS`, default 60 s, without start or keepalive, `stopped`, `satellite_deleted`). Refused frames get `{type: error, data: {code, message}}` (`invalid_message`, `forbidden`, `satellite_not_found`, `not_watching`) and the socket stays open.",
    params(("tenantId" = Option<uuid::Uuid>, Query, description = "the team (default: the caller's)"), ("token" = Option<String>, Query, description = "a session JWT or API key instead of a header")),
    responses((status = 101, description = "switching to the WebSocket protocol"), err::BadRequest, err::Auth)
)]
async fn events(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    ws: WebSocketUpgrade,
    mut headers: HeaderMap,
    Query(q): Query<WsQuery>,
) -> Result<Response, ApiError> {
    if let Some(token) = q.token.filter(|t| !t.is_empty()) {
        let value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            ApiError::BadRequest("invalid_token", "the token has characters a header cannot carry".into())
        })?;
        headers.insert(header::AUTHORIZATION, value);
    }
    // A page on another site may not open a socket that rides on this hub's session cookie.
    if context::cookie(&headers, crate::auth::tokens::SESSION_COOKIE).is_some()
        && !crate::web::csrf::same_origin(&headers)
    {
        return Err(ApiError::Forbidden(
            "cross_origin",
            "a page on another site may not open this hub's event stream".into(),
        ));
    }
    let ctx = guard::admit(&state, &Method::GET, PATH, &headers).await?;
    let access = guard::access(&state, &ctx, q.tenant_id.or(ctx.default_tenant), Role::Viewer).await?;
    // Only what identifies the caller is kept, to resolve it again while the socket lives.
    let mut credentials = HeaderMap::new();
    for name in [header::AUTHORIZATION, header::COOKIE] {
        for value in headers.get_all(&name) {
            credentials.append(name.clone(), value.clone());
        }
    }
    let tenant = access.tenant_id;
    Ok(ws.on_upgrade(move |socket| stream(state, socket, tenant, credentials, ip)))
}

/// Whether the credentials the socket opened with still pass the gates and give Viewer access to
/// its team.
/// The background re-check of a socket's credentials every [`RECHECK`]; dropping it stops it.
struct Recheck {
    task: tokio::task::JoinHandle<()>,
    ended: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl Recheck {
    fn spawn(state: AppState, credentials: HeaderMap, tenant: TenantId) -> Self {
        let (tx, ended) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let mut recheck = tokio::time::interval(RECHECK);
            recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            recheck.tick().await;
            loop {
                recheck.tick().await;
                match still_allowed(&state, &credentials, tenant).await {
                    Ok(()) => {}
                    // A busy database is no reason to drop a listener; the next check decides.
                    Err(AuthError::Store(e)) => {
                        tracing::warn!(error = %e, "could not re-check a WebSocket's credentials")
                    }
                    Err(refused) => {
                        tracing::debug!(%tenant, reason = %refused, "closing a WebSocket whose credentials ended");
                        let _ = tx.send(());
                        return;
                    }
                }
            }
        });
        Self { task, ended: Some(ended) }
    }

    /// Resolves once the credentials no longer admit the socket.
    async fn ended(&mut self) {
        if let Some(ended) = self.ended.as_mut()
            && ended.await.is_ok()
        {
            return;
        }
        // The checker stopped without a verdict (it never does): never resolve again.
        self.ended = None;
        std::future::pending::<()>().await;
    }
}

impl Drop for Recheck {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn still_allowed(state: &AppState, credentials: &HeaderMap, tenant: TenantId) -> Result<(), AuthError> {
    let ctx = guard::admit(state, &Method::GET, PATH, credentials).await?;
    guard::access(state, &ctx, Some(tenant), Role::Viewer).await.map(|_| ())
}

/// The frame for an event of `tenant`, if it is one clients see.
pub fn frame(event: &Event, tenant: TenantId) -> Option<Value> {
    if event.tenant_id() != tenant {
        return None;
    }
    match event {
        Event::DetectionCreated(d) => Some(json!({ "type": "detection", "data": &**d })),
        Event::SatelliteOffline(s) | Event::SatelliteOnline(s) => {
            let status = if matches!(event, Event::SatelliteOffline(_)) { "offline" } else { "online" };
            Some(json!({ "type": "satellite", "data": { "status": status, "satellite": &**s } }))
        }
        Event::AlertRaised { alert, .. } => Some(json!({ "type": "alert", "data": &**alert })),
        // A heartbeat or telemetry sample was recorded: pages showing the satellite refresh it.
        Event::SatelliteReported { satellite_id, .. } => {
            Some(json!({ "type": "heartbeat", "data": { "satelliteId": satellite_id } }))
        }
        _ => None,
    }
}

async fn stream(state: AppState, mut socket: WebSocket, tenant: TenantId, credentials: HeaderMap, ip: String) {
    let (live, mut live_frames) = LiveSocket::open(&state, tenant, credentials.clone(), ip);
    serve(&state, &mut socket, tenant, &credentials, &live, &mut live_frames).await;
    live.close().await;
}

/// Sends the team's events and the live frames, and answers the client's frames, until the
/// socket closes or its credentials end.
async fn serve(
    state: &AppState,
    socket: &mut WebSocket,
    tenant: TenantId,
    credentials: &HeaderMap,
    live: &LiveSocket,
    live_frames: &mut tokio::sync::mpsc::Receiver<crate::mqtt::live::Frame>,
) {
    let mut events = state.bus.subscribe("websocket");
    let hello = json!({ "type": "hello", "data": { "tenantId": tenant } }).to_string();
    if socket.send(Message::Text(hello.into())).await.is_err() {
        return;
    }
    let mut ping = tokio::time::interval(Duration::from_secs(30));
    ping.tick().await;
    // The credentials are re-checked beside the loop, not in it: resolving them can take tens of
    // milliseconds (an API key's hash, a busy pool), and events arriving meanwhile would wait
    // (the ~48 ms detection-to-WebSocket p99 of issue 39).
    let mut revoked = Recheck::spawn(state.clone(), credentials.clone(), tenant);
    loop {
        let outgoing = tokio::select! {
            event = events.recv() => match event {
                Some(e) => frame(&e, tenant).map(|f| Message::Text(f.to_string().into())),
                None => return,
            },
            Some(frame) = live_frames.recv() => Some(Message::Text(frame.to_string().into())),
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(Message::Text(text))) => live.handle(text.as_str()).await.map(|v| Message::Text(v.to_string().into())),
                Some(Ok(Message::Binary(_))) => {
                    let refused = json!({ "type": "error", "data": { "code": "invalid_message", "message": "frames are JSON text" } });
                    Some(Message::Text(refused.to_string().into()))
                }
                Some(Ok(_)) => None,
            },
            _ = ping.tick() => Some(Message::Ping(Vec::new().into())),
            _ = revoked.ended() => {
                let frame = CloseFrame { code: close_code::POLICY, reason: "credentials revoked".into() };
                let _ = socket.send(Message::Close(Some(frame))).await;
                return;
            }
        };
        if let Some(message) = outgoing
            && socket.send(message).await.is_err()
        {
            return;
        }
    }
}
