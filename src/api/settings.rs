//! Settings (SPEC 4.12, 2.18): `GET/PUT /settings/tenant` and `GET/PUT /settings/platform`.
//! A PUT takes any subset of the fields; unknown fields and bad values answer 422 naming the field.

use axum::{Router, extract::State, routing::get};
use serde_json::{Value, json};

use super::{ApiError, Json};
use crate::{
    auth::{Admin, Audit, ClientIp, PlatformAdmin, Viewer},
    domain::settings::{self, PlatformSettings, TenantSettings},
    events::Event,
    state::AppState,
    store,
};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/settings/tenant", get(get_tenant).put(put_tenant))
        .route("/settings/platform", get(get_platform).put(put_platform))
}

async fn get_tenant(State(state): State<AppState>, Viewer(access): Viewer) -> Result<axum::Json<Value>, ApiError> {
    let scope = access.tenant_id.to_string();
    let s: TenantSettings = state.store.call(move |c| store::settings::load(c, &scope)).await?;
    Ok(axum::Json(json!({ "tenantId": access.tenant_id, "settings": s })))
}

async fn put_tenant(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Admin(access): Admin,
    Json(patch): Json<Value>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = access.tenant_id.to_string();
    let scope2 = scope.clone();
    let current: TenantSettings = state.store.call(move |c| store::settings::load(c, &scope2)).await?;
    let next: TenantSettings =
        settings::patch(&current, &patch).map_err(|e| ApiError::Unprocessable("invalid_settings", e))?;
    next.validate().map_err(|e| ApiError::Unprocessable("invalid_settings", e))?;
    let (saved, now) = (next.clone(), state.clock.stamp());
    state.store.call(move |c| store::settings::save(c, &scope, &saved, now)).await?;
    state.bus.publish(Event::ConfigChanged { tenant_id: access.tenant_id, satellite_id: None });
    let changed: Vec<&String> = patch.as_object().map(|m| m.keys().collect()).unwrap_or_default();
    Audit::new("admin.tenant_settings_updated")
        .actor(&access.ctx)
        .tenant(access.tenant_id)
        .target("tenant", access.tenant_id)
        .ip(&ip)
        .details(json!({ "changed": changed }))
        .write(&state)
        .await;
    Ok(axum::Json(json!({ "tenantId": access.tenant_id, "settings": next })))
}

async fn get_platform(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
) -> Result<axum::Json<PlatformSettings>, ApiError> {
    Ok(axum::Json(state.store.call(|c| store::settings::load(c, store::settings::PLATFORM)).await?))
}

async fn put_platform(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
    Json(patch): Json<Value>,
) -> Result<axum::Json<PlatformSettings>, ApiError> {
    let current: PlatformSettings = state.store.call(|c| store::settings::load(c, store::settings::PLATFORM)).await?;
    let next: PlatformSettings =
        settings::patch(&current, &patch).map_err(|e| ApiError::Unprocessable("invalid_settings", e))?;
    let (saved, now) = (next.clone(), state.clock.stamp());
    state.store.call(move |c| store::settings::save(c, store::settings::PLATFORM, &saved, now)).await?;
    Audit::new("admin.platform_settings_updated").actor(&ctx).ip(&ip).details(patch).write(&state).await;
    Ok(axum::Json(next))
}
