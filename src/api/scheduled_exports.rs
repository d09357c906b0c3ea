//! Scheduled exports (SPEC 4.7): `/exports/scheduled`, Viewer+ to read and Admin+ to write. The
//! body and how runs work are documented in `usecases::scheduled_exports`.

use axum::{extract::State, http::StatusCode};
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    ApiError, Json, Path,
    openapi::{err, tags},
};
use crate::{
    auth::{Admin, Audit, ClientIp, TenantAccess, Viewer},
    state::AppState,
    usecases::scheduled_exports::{self, ScheduleInput, ScheduleView},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(one, update, delete)).routes(routes!(run_now))
}

#[utoipa::path(
    get, path = "/exports/scheduled", tag = tags::EXPORTS,
    description = "Viewer+. The team's scheduled exports.",
    responses((status = 200, description = "`{scheduledExports, total}`", body = Object), err::Auth)
)]
async fn list(State(state): State<AppState>, Viewer(access): Viewer) -> Result<axum::Json<Value>, ApiError> {
    let exports = scheduled_exports::list(&state.store, access.tenant_id, state.clock.stamp()).await?;
    Ok(axum::Json(json!({ "scheduledExports": exports, "total": exports.len() })))
}

#[utoipa::path(
    get, path = "/exports/scheduled/{id}", tag = tags::EXPORTS,
    description = "Viewer+. One scheduled export with its next three runs.",
    params(("id" = uuid::Uuid, Path, description = "scheduled export id")),
    responses((status = 200, description = "`{id, name, format, filters, cron, timezone, channelId, enabled, nextRuns (the next three), lastRunAt, lastStatus, lastError, createdAt, updatedAt}`", body = Object), err::BadRequest, err::Auth, err::NotFound)
)]
async fn one(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path(id): Path<uuid::Uuid>,
) -> Result<axum::Json<ScheduleView>, ApiError> {
    Ok(axum::Json(scheduled_exports::get(&state.store, access.tenant_id, id.to_string(), state.clock.stamp()).await?))
}

#[utoipa::path(
    post, path = "/exports/scheduled", tag = tags::EXPORTS,
    description = "Admin+. Creates a scheduled export; the cron is checked and its next three runs shown.",
    request_body(content = Object, description = "`{name, format: csv|json|checklist|observation, filters, cron (five fields), timezone (IANA), channelId (an email or webhook channel of the team), enabled}`"),
    responses((status = 201, description = "`{id, name, format, filters, cron, timezone, channelId, enabled, nextRuns (the next three), lastRunAt, lastStatus, lastError, createdAt, updatedAt}`", body = Object), err::BadRequest, err::Auth, err::Unprocessable)
)]
async fn create(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Admin(access): Admin,
    Json(body): Json<ScheduleInput>,
) -> Result<(StatusCode, axum::Json<ScheduleView>), ApiError> {
    let view = scheduled_exports::create(&state.store, access.tenant_id, body, state.clock.stamp()).await?;
    audit(&state, &access, &ip, "admin.scheduled_export_created", &view.id, &view.name).await;
    Ok((StatusCode::CREATED, axum::Json(view)))
}

#[utoipa::path(
    put, path = "/exports/scheduled/{id}", tag = tags::EXPORTS,
    description = "Admin+. Changes the fields the body names.",
    params(("id" = uuid::Uuid, Path, description = "scheduled export id")),
    request_body(content = Object, description = "Any fields of the create body"),
    responses((status = 200, description = "`{id, name, format, filters, cron, timezone, channelId, enabled, nextRuns (the next three), lastRunAt, lastStatus, lastError, createdAt, updatedAt}`", body = Object), err::BadRequest, err::Auth, err::NotFound, err::Unprocessable)
)]
async fn update(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Admin(access): Admin,
    Path(id): Path<uuid::Uuid>,
    Json(body): Json<ScheduleInput>,
) -> Result<axum::Json<ScheduleView>, ApiError> {
    let view =
        scheduled_exports::update(&state.store, access.tenant_id, id.to_string(), body, state.clock.stamp()).await?;
    audit(&state, &access, &ip, "admin.scheduled_export_updated", &view.id, &view.name).await;
    Ok(axum::Json(view))
}

#[utoipa::path(
    delete, path = "/exports/scheduled/{id}", tag = tags::EXPORTS,
    description = "Admin+. Deletes a scheduled export.",
    params(("id" = uuid::Uuid, Path, description = "scheduled export id")),
    responses((status = 204, description = "Deleted"), err::BadRequest, err::Auth, err::NotFound)
)]
async fn delete(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Admin(access): Admin,
    Path(id): Path<uuid::Uuid>,
) -> Result<StatusCode, ApiError> {
    let gone = scheduled_exports::delete(&state.store, access.tenant_id, id.to_string()).await?;
    audit(&state, &access, &ip, "admin.scheduled_export_deleted", &gone.id, &gone.name).await;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    post, path = "/exports/scheduled/{id}/run", tag = tags::EXPORTS,
    description = "Admin+. Runs the scheduled export now, whatever its cron says; its next scheduled run stays. The file is queued for its channel like a scheduled run; a failure is recorded and shown in `lastStatus` (`failed`) and `lastError`.",
    params(("id" = uuid::Uuid, Path, description = "scheduled export id")),
    responses((status = 200, description = "The scheduled export after the run: `lastRunAt`, `lastStatus` (`sending` or `failed`), `lastError`", body = Object), err::BadRequest, err::Auth, err::NotFound)
)]
async fn run_now(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Admin(access): Admin,
    Path(id): Path<uuid::Uuid>,
) -> Result<axum::Json<ScheduleView>, ApiError> {
    let env = super::exports::env(&state);
    let view = scheduled_exports::run_now(&env, access.tenant_id, id.to_string(), state.clock.stamp()).await?;
    audit(&state, &access, &ip, "admin.scheduled_export_run", &view.id, &view.name).await;
    Ok(axum::Json(view))
}

async fn audit(state: &AppState, access: &TenantAccess, ip: &str, action: &'static str, id: &str, name: &str) {
    Audit::new(action)
        .actor(&access.ctx)
        .tenant(access.tenant_id)
        .target("scheduled_export", id)
        .ip(ip)
        .details(json!({ "name": name }))
        .write(state)
        .await;
}
