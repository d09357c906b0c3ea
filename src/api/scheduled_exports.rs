//! Scheduled exports (SPEC 4.7): `/exports/scheduled`, Viewer+ to read and Admin+ to write. The
//! body and how runs work are documented in `usecases::scheduled_exports`.

use axum::{Router, extract::State, http::StatusCode, routing::get};
use serde_json::{Value, json};

use super::{ApiError, Json, Path};
use crate::{
    auth::{Admin, Audit, ClientIp, TenantAccess, Viewer},
    state::AppState,
    usecases::scheduled_exports::{self, ScheduleInput, ScheduleView},
};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/exports/scheduled", get(list).post(create))
        .route("/exports/scheduled/{id}", get(one).put(update).delete(delete))
}

async fn list(State(state): State<AppState>, Viewer(access): Viewer) -> Result<axum::Json<Value>, ApiError> {
    let exports = scheduled_exports::list(&state.store, access.tenant_id, state.clock.stamp()).await?;
    Ok(axum::Json(json!({ "scheduledExports": exports, "total": exports.len() })))
}

async fn one(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path(id): Path<uuid::Uuid>,
) -> Result<axum::Json<ScheduleView>, ApiError> {
    Ok(axum::Json(scheduled_exports::get(&state.store, access.tenant_id, id.to_string(), state.clock.stamp()).await?))
}

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
