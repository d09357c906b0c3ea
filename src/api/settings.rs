//! Settings (SPEC 4.12, 2.18): `GET/PUT /settings/tenant` and `GET/PUT /settings/platform`.
//! A PUT takes any subset of the fields; unknown fields and bad values answer 422 `invalid_settings`
//! with the setting's key in `field` and a `message` in words that names it by its label.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::extract::State;
use serde_json::{Value, json};

use super::{ApiError, Json};
use crate::{
    auth::{Admin, Audit, ClientIp, PlatformAdmin, Viewer},
    domain::{
        audit_changes,
        settings::{self, PlatformSettings, TenantSettings},
    },
    state::AppState,
    store, usecases,
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_tenant, put_tenant)).routes(routes!(get_platform, put_platform))
}

#[utoipa::path(
    get, path = "/settings/tenant", tag = tags::SYSTEM,
    description = "Viewer+. The team's settings (SPEC 2.18).",
    responses((status = 200, description = "the team settings", body = Object), err::Auth)
)]
async fn get_tenant(State(state): State<AppState>, Viewer(access): Viewer) -> Result<axum::Json<Value>, ApiError> {
    let scope = access.tenant_id.to_string();
    let s: TenantSettings = state.store.call(move |c| store::settings::load(c, &scope)).await?;
    Ok(axum::Json(json!({ "tenantId": access.tenant_id, "settings": s })))
}

#[utoipa::path(
    put, path = "/settings/tenant", tag = tags::SYSTEM,
    description = "Admin+. Changes some team settings; the fields sent replace the stored ones.",
    request_body = Object,
    responses((status = 200, description = "the team settings", body = Object), err::Auth, err::Unprocessable)
)]
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
        settings::patch_setting(&current, &patch).map_err(|e| ApiError::invalid_setting("invalid_settings", e))?;
    // A species is named as the team reads it (its main language, else English).
    let lang = next.primary_language.clone();
    let species = |code: &str| {
        let found = state.names.common_name(&lang, code).or_else(|| state.names.common_name("en", code));
        found.unwrap_or_else(|| crate::domain::detection_settings::scientific_name(code))
    };
    next.check(&species).map_err(|e| ApiError::invalid_setting("invalid_settings", e))?;
    usecases::detection_settings::check_codes(&state.names, &next, &current)
        .map_err(|e| ApiError::Unprocessable("invalid_settings", e))?;
    usecases::settings::save_tenant(&state.store, &state.clock, &state.bus, access.tenant_id, next.clone()).await?;
    let changed: Vec<&String> = patch.as_object().map(|m| m.keys().collect()).unwrap_or_default();
    let name_of = |code: &str| Some(species(code));
    let changes = audit_changes::changes(&json!(current), &json!(next), &name_of);
    Audit::new("admin.tenant_settings_updated")
        .actor(&access.ctx)
        .tenant(access.tenant_id)
        .target("tenant", access.tenant_id)
        .ip(&ip)
        .details(json!({ "changed": changed, "changes": changes }))
        .write(&state)
        .await;
    Ok(axum::Json(json!({ "tenantId": access.tenant_id, "settings": next })))
}

#[utoipa::path(
    get, path = "/settings/platform", tag = tags::SYSTEM,
    description = "Platform admin. The platform settings.",
    responses((status = 200, description = "the platform settings", body = Object), err::Auth)
)]
async fn get_platform(
    State(state): State<AppState>,
    PlatformAdmin(_admin): PlatformAdmin,
) -> Result<axum::Json<PlatformSettings>, ApiError> {
    Ok(axum::Json(state.store.call(|c| store::settings::load(c, store::settings::PLATFORM)).await?))
}

#[utoipa::path(
    put, path = "/settings/platform", tag = tags::SYSTEM,
    description = "Platform admin. Changes some platform settings.",
    request_body = Object,
    responses((status = 200, description = "the platform settings", body = Object), err::Auth, err::Unprocessable)
)]
async fn put_platform(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
    Json(patch): Json<Value>,
) -> Result<axum::Json<PlatformSettings>, ApiError> {
    let current: PlatformSettings = state.store.call(|c| store::settings::load(c, store::settings::PLATFORM)).await?;
    let next: PlatformSettings =
        settings::patch_setting(&current, &patch).map_err(|e| ApiError::invalid_setting("invalid_settings", e))?;
    usecases::settings::save_platform(&state.store, &state.clock, next.clone()).await?;
    let mut details = patch;
    details["changes"] = json!(audit_changes::changes(&json!(current), &json!(next), &|_| None));
    Audit::new("admin.platform_settings_updated").actor(&ctx).ip(&ip).details(details).write(&state).await;
    Ok(axum::Json(next))
}
