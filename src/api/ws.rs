//! `GET /api/ws/events?tenantId=` (SPEC 4.14, 6.1): real-time events of one team over a WebSocket.
//!
//! Authenticated like HTTP (session cookie, `Authorization` header), or with `?token=` carrying a
//! session JWT or API key for clients that cannot set headers. Viewer+ of the team. Frames are
//! JSON text: `{"type": "hello", "data": {"tenantId"}}` first, then `{"type": "detection",
//! "data": {...}}` for each new detection (the fields of SPEC 2.7) and `{"type": "satellite",
//! "data": {"satelliteId", "status"}}` when a satellite comes online or goes offline. The server
//! pings every 30 s.

use std::time::Duration;

use axum::{
    Router,
    extract::{
        State, WebSocketUpgrade,
        ws::{Message, WebSocket},
    },
    http::{HeaderMap, HeaderValue, header},
    response::Response,
    routing::get,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ApiError, Query};
use crate::{
    auth::{context, guard},
    domain::Role,
    events::Event,
    ids::TenantId,
    state::AppState,
};

pub fn router() -> Router<AppState> {
    Router::new().route("/ws/events", get(events))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WsQuery {
    tenant_id: Option<TenantId>,
    token: Option<String>,
}

async fn events(
    State(state): State<AppState>,
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
    let ctx = context::resolve(&state, &headers).await?;
    let access = guard::access(&state, &ctx, q.tenant_id.or(ctx.default_tenant), Role::Viewer).await?;
    let tenant = access.tenant_id;
    Ok(ws.on_upgrade(move |socket| stream(state, socket, tenant)))
}

/// The frame for an event of `tenant`, if it is one clients see.
pub fn frame(event: &Event, tenant: TenantId) -> Option<Value> {
    if event.tenant_id() != tenant {
        return None;
    }
    match event {
        Event::DetectionCreated(d) => Some(json!({ "type": "detection", "data": &**d })),
        Event::SatelliteOnline { satellite_id, .. } => {
            Some(json!({ "type": "satellite", "data": { "satelliteId": satellite_id, "status": "online" } }))
        }
        Event::SatelliteOffline { satellite_id, last_seen_at, .. } => Some(json!({
            "type": "satellite",
            "data": { "satelliteId": satellite_id, "status": "offline", "lastSeenAt": last_seen_at },
        })),
        _ => None,
    }
}

async fn stream(state: AppState, mut socket: WebSocket, tenant: TenantId) {
    let mut events = state.bus.subscribe("websocket");
    let hello = json!({ "type": "hello", "data": { "tenantId": tenant } }).to_string();
    if socket.send(Message::Text(hello.into())).await.is_err() {
        return;
    }
    let mut ping = tokio::time::interval(Duration::from_secs(30));
    ping.tick().await;
    loop {
        let outgoing = tokio::select! {
            event = events.recv() => match event {
                Some(e) => frame(&e, tenant).map(|f| Message::Text(f.to_string().into())),
                None => return,
            },
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => None,
            },
            _ = ping.tick() => Some(Message::Ping(Vec::new().into())),
        };
        if let Some(message) = outgoing
            && socket.send(message).await.is_err()
        {
            return;
        }
    }
}
