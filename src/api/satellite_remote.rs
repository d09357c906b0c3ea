//! Remote actions on a satellite (SPEC 4.4, 2.8): `POST /satellites/{id}/update`,
//! `POST /satellites/{id}/logs/request` and `GET /satellites/{id}/logs/{requestId}`. Device rule
//! (SPEC 5.4): another team's or an unknown satellite is 404, a visible but unmanageable one 403.

use axum::{extract::State, http::StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    ApiError, Json, Path, Query,
    openapi::{err, tags},
};
use crate::{
    auth::{
        Audit, Authenticated, ClientIp,
        device_rule::{self, DeviceAction},
    },
    ids::SatelliteId,
    mqtt::logs::{self, LogResult, Lookup},
    state::AppState,
    usecases::satellite_remote::{self, UpdateContext},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(update)).routes(routes!(request_logs)).routes(routes!(read_logs))
}

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct UpdateBody {
    /// SemVer; default: the latest satellite release of `GET /system/versions`.
    target_version: Option<String>,
}

#[utoipa::path(
    post, path = "/satellites/{id}/update", tag = tags::SATELLITES,
    description = "Device rule. Asks the satellite to update to `targetVersion` (default: the latest satellite release of `GET /system/versions`; 422 `no_target_version` when none is known). 409 `already_up_to_date` when the satellite already runs that version, or the default is no newer than what it runs. Marks it `updating` and sends `update` over MQTT: `{satelliteId, updateStatus, targetVersion}`.",
    params(("id" = uuid::Uuid, Path, description = "satellite id")),
    request_body = UpdateBody,
    responses((status = 202, description = "`{satelliteId, updateStatus, targetVersion}`", body = Object), err::BadRequest, err::Auth, err::NotFound, err::Conflict, err::Unprocessable)
)]
async fn update(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
    Json(body): Json<UpdateBody>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    let (sat, _, _) = device_rule::check(&state, &ctx, id, DeviceAction::SelfService).await?;
    let uc = UpdateContext {
        store: &state.store,
        clock: &state.clock,
        mqtt: &state.mqtt,
        releases: &state.settings.releases,
        topic_root: &state.settings.mqtt.topic_root,
    };
    let done = satellite_remote::request_update(uc, sat.tenant_id, id, body.target_version.as_deref()).await?;
    Audit::new("admin.satellite_update_requested")
        .actor(&ctx)
        .tenant(sat.tenant_id)
        .target("satellite", id)
        .ip(&ip)
        .details(json!({ "from": sat.version, "targetVersion": done.target_version }))
        .write(&state)
        .await;
    let answer = json!({ "satelliteId": id, "updateStatus": "updating", "targetVersion": done.target_version });
    Ok((StatusCode::ACCEPTED, axum::Json(answer)))
}

/// The longest (and default) wait of `POST /satellites/{id}/logs/request`, in seconds.
const MAX_WAIT_SECS: u64 = 10;

#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
struct LogsBody {
    /// Journal lines to send, 1 to 5000 (default 500).
    #[schema(value_type = Option<u32>)]
    tail: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct WaitQuery {
    /// Seconds to wait for the answer, 0 to 10 (default 10).
    wait: Option<u64>,
}

fn complete(request_id: &str, result: &LogResult) -> (StatusCode, axum::Json<Value>) {
    let body = json!({
        "requestId": request_id,
        "status": "complete",
        "lines": result.lines,
        "truncated": result.truncated,
        "receivedAt": result.received_at,
    });
    (StatusCode::OK, axum::Json(body))
}

fn pending(request_id: &str) -> (StatusCode, axum::Json<Value>) {
    (StatusCode::ACCEPTED, axum::Json(json!({ "requestId": request_id, "status": "pending" })))
}

#[utoipa::path(
    post, path = "/satellites/{id}/logs/request", tag = tags::SATELLITES,
    description = "Device rule. Sends the satellite `log-request {requestId, tail}` (tail 1-5000, default 500; else 422 `invalid_tail`) and waits up to `wait` seconds (0-10, default 10) for its `log-response`: 200 `{requestId, status: complete, lines, truncated, receivedAt}`, or 202 `{requestId, status: pending}` to read later with `GET /satellites/{id}/logs/{requestId}` (kept 10 minutes). At most 5000 lines and 1 MiB are kept (`truncated`).",
    params(("id" = uuid::Uuid, Path, description = "satellite id"), ("wait" = Option<u64>, Query, description = "seconds to wait, 0-10 (default 10)")),
    request_body = LogsBody,
    responses((status = 200, description = "the satellite's lines", body = Object), (status = 202, description = "`{requestId, status: pending}`", body = Object), err::BadRequest, err::Auth, err::NotFound, err::Unprocessable)
)]
async fn request_logs(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
    Query(q): Query<WaitQuery>,
    Json(body): Json<LogsBody>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    let (sat, _, _) = device_rule::check(&state, &ctx, id, DeviceAction::SelfService).await?;
    let tail = satellite_remote::parse_tail(body.tail.as_ref())?;
    let wait = q.wait.unwrap_or(MAX_WAIT_SECS);
    if wait > MAX_WAIT_SECS {
        return Err(ApiError::Unprocessable("invalid_wait", format!("wait must be 0 to {MAX_WAIT_SECS} seconds")));
    }
    let root = &state.settings.mqtt.topic_root;
    let (request_id, rx) =
        satellite_remote::request_logs(&state.mqtt, &state.logs, root, sat.tenant_id, id, tail).await?;
    Audit::new("admin.satellite_logs_requested")
        .actor(&ctx)
        .tenant(sat.tenant_id)
        .target("satellite", id)
        .ip(&ip)
        .details(json!({ "requestId": request_id, "tail": tail }))
        .write(&state)
        .await;
    Ok(match logs::wait(rx, std::time::Duration::from_secs(wait)).await {
        Some(result) => complete(&request_id, &result),
        None => pending(&request_id),
    })
}

#[utoipa::path(
    get, path = "/satellites/{id}/logs/{requestId}", tag = tags::SATELLITES,
    description = "Device rule (logs may hold secrets). A log request's answer: 200 complete (as the request's), 202 pending, 404 unknown or expired (10 minutes).",
    params(("id" = uuid::Uuid, Path, description = "satellite id"), ("requestId" = String, Path, description = "the request's id")),
    responses((status = 200, description = "the satellite's lines", body = Object), (status = 202, description = "`{requestId, status: pending}`", body = Object), err::Auth, err::NotFound)
)]
async fn read_logs(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
    Path((id, request_id)): Path<(SatelliteId, String)>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    let (sat, _, _) = device_rule::check(&state, &ctx, id, DeviceAction::SelfService).await?;
    match state.logs.lookup(sat.tenant_id, id, &request_id) {
        Lookup::Complete(result) => Ok(complete(&request_id, &result)),
        Lookup::Pending => Ok(pending(&request_id)),
        Lookup::Unknown => {
            Err(ApiError::NotFound("log_request_not_found", "no such log request (they are kept 10 minutes)".into()))
        }
    }
}
