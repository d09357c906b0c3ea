//! A satellite's live-audio session over HTTP (SPEC 2.8, 3): `GET /satellites/{id}/live` shows
//! it, `DELETE /satellites/{id}/live` ends it for every watcher. Watching happens on the team
//! WebSocket ([`super::ws_live`]). Another team's or an unknown satellite is 404.

use axum::{extract::State, http::StatusCode};
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    ApiError, Path,
    openapi::{err, tags},
};
use crate::{
    auth::{
        Authenticated,
        device_rule::{self, DeviceAction},
    },
    ids::SatelliteId,
    mqtt::live::EndReason,
    state::AppState,
    usecases::satellite_live,
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(show, stop))
}

#[utoipa::path(
    get, path = "/satellites/{id}/live", tag = tags::SATELLITES,
    description = "Viewer+ of the satellite's team. Its live-audio session: `{active: true, sessionId, watchers, startedAt, lastKeepaliveAt, chunksRelayed, chunksDropped}`, or `{active: false, watchers: 0, chunksRelayed: 0}` when none runs. Sessions are started, kept alive and left on the team WebSocket (`/ws/events`, frames `live-start`, `live-keepalive`, `live-stop`); one ends `LIVE_AUDIO_TIMEOUT_MS` (default 60 s) after the last start or keepalive.",
    params(("id" = uuid::Uuid, Path, description = "satellite id")),
    responses((status = 200, description = "the session, or `active: false`", body = Object), err::Auth, err::NotFound)
)]
async fn show(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
) -> Result<axum::Json<Value>, ApiError> {
    let (sat, _, _) = device_rule::check(&state, &ctx, id, DeviceAction::View).await?;
    let body = match satellite_live::status(&state.live, sat.tenant_id, id) {
        Some(s) => json!({
            "active": true,
            "sessionId": s.session_id,
            "watchers": s.watchers,
            "startedAt": s.started_at,
            "lastKeepaliveAt": s.last_keepalive_at,
            "chunksRelayed": s.chunks_relayed,
            "chunksDropped": s.chunks_dropped,
        }),
        None => json!({ "active": false, "watchers": 0, "chunksRelayed": 0 }),
    };
    Ok(axum::Json(body))
}

#[utoipa::path(
    delete, path = "/satellites/{id}/live", tag = tags::SATELLITES,
    description = "Device rule. Ends the satellite's live-audio session for every watcher: the hub sends `live-stop {sessionId}` and each watching socket gets `{type: live-ended, data: {sessionId, satelliteId, reason: stopped}}`. 404 `live_session_not_found` when none runs.",
    params(("id" = uuid::Uuid, Path, description = "satellite id")),
    responses((status = 204, description = "ended"), err::Auth, err::NotFound)
)]
async fn stop(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
) -> Result<StatusCode, ApiError> {
    let (sat, _, _) = device_rule::check(&state, &ctx, id, DeviceAction::SelfService).await?;
    satellite_live::end(state.live_ctx(), sat.tenant_id, id, EndReason::Stopped).await?;
    Ok(StatusCode::NO_CONTENT)
}
