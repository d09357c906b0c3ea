//! A satellite's configuration (SPEC 4.4, 2.5, 2.11): `GET/PUT /satellites/:id/config` and
//! `POST /satellites/:id/profile`. Changes are pushed to the device over MQTT (QoS 2).

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ApiError, Json, Path};
use crate::{
    auth::{
        Audit, Authenticated, ClientIp,
        device_rule::{self, DeviceAction},
    },
    domain::{
        Role,
        satellite_config::{self, Overrides, RecordingProfile},
        settings::TenantSettings,
    },
    events::Event,
    ids::SatelliteId,
    state::AppState,
    store::satellites::Satellite,
    usecases::satellites,
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_config, put_config)).routes(routes!(set_profile))
}

fn effective(sat: &Satellite, settings: &TenantSettings) -> Value {
    let overrides = Overrides::from_stored(&sat.overrides_json);
    let profile: Option<RecordingProfile> =
        sat.recording_profile_json.as_deref().and_then(|j| serde_json::from_str(j).ok());
    let config =
        satellite_config::resolve(&sat.id.to_string(), &sat.tenant_id.to_string(), settings, &overrides, profile);
    // What the inference workers apply to this satellite's chunks: the team's detection settings
    // with the satellite's overrides (docs/detection-quality.md).
    let resolved = serde_json::to_value(overrides.apply(settings)).unwrap_or_default();
    let detection: serde_json::Map<String, Value> = crate::domain::detection_settings::SATELLITE_KEYS
        .iter()
        .map(|k| ((*k).to_owned(), resolved.get(*k).cloned().unwrap_or(Value::Null)))
        .collect();
    json!({ "satelliteId": sat.id, "configLocked": sat.config_locked, "overrides": overrides, "config": config,
            "detection": detection })
}

#[utoipa::path(
    get, path = "/satellites/{id}/config", tag = tags::SATELLITES,
    description = "Viewer+. The effective config (overrides merged with the team defaults).",
    params(("id" = uuid::Uuid, Path, description = "satellite id")),
    responses((status = 200, description = "the effective config", body = Object), err::Auth, err::NotFound)
)]
async fn get_config(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
) -> Result<axum::Json<Value>, ApiError> {
    let (sat, _, settings) = device_rule::check(&state, &ctx, id, DeviceAction::View).await?;
    Ok(axum::Json(effective(&sat, &settings)))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct ConfigBody {
    config_locked: Option<bool>,
    overrides: Option<Value>,
}

/// Changes overrides (`null` inherits again) and/or the lock. Only admins (of the team or the
/// platform) may change `configLocked`, and only they may change a locked config.
#[utoipa::path(
    put, path = "/satellites/{id}/config", tag = tags::SATELLITES,
    description = "Device rule. Body `{configLocked?, overrides?}`; `configLocked` is admin-only; a `null` override inherits again. Pushes the config over MQTT.",
    params(("id" = uuid::Uuid, Path, description = "satellite id")),
    responses((status = 200, description = "the effective config", body = Object), err::BadRequest, err::Auth, err::NotFound, err::Unprocessable)
)]
async fn put_config(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
    Json(body): Json<ConfigBody>,
) -> Result<axum::Json<Value>, ApiError> {
    let (sat, rel, settings) = device_rule::check(&state, &ctx, id, DeviceAction::SelfService).await?;
    let admin = rel.sees_all || rel.role == Some(Role::Admin);
    if body.config_locked.is_some() && !admin {
        return Err(ApiError::Forbidden(
            "admin_required",
            "only admins may lock or unlock a satellite's config".into(),
        ));
    }
    if sat.config_locked && !admin && body.overrides.is_some() {
        return Err(ApiError::Forbidden("config_locked", "this satellite's config is locked by an admin".into()));
    }
    let overrides = match &body.overrides {
        Some(patch) => {
            let next = Overrides::from_stored(&sat.overrides_json)
                .patched(patch, &settings)
                .map_err(|e| ApiError::Unprocessable("invalid_overrides", e))?;
            let before = Overrides::from_stored(&sat.overrides_json).apply(&settings);
            crate::usecases::detection_settings::check_codes(&state.names, &next.apply(&settings), &before)
                .map_err(|e| ApiError::Unprocessable("invalid_overrides", e))?;
            Some(next)
        }
        None => None,
    };
    if overrides.is_none() && body.config_locked.is_none() {
        return Err(ApiError::Unprocessable("nothing_to_change", "send overrides and/or configLocked".into()));
    }
    let json = overrides.as_ref().map(serde_json::to_string).transpose().map_err(ApiError::internal)?;
    let updated =
        satellites::set_config(&state.store, &state.clock, sat.tenant_id, id, json, body.config_locked).await?;
    state.bus.publish(Event::ConfigChanged { tenant_id: sat.tenant_id, satellite_id: Some(id) });
    Audit::new("admin.satellite_config_changed")
        .actor(&ctx)
        .tenant(sat.tenant_id)
        .target("satellite", id)
        .ip(&ip)
        .details(json!({ "overrides": body.overrides, "configLocked": body.config_locked }))
        .write(&state)
        .await;
    Ok(axum::Json(effective(&updated, &settings)))
}

/// Sets the recording profile (the `recordingProfile` object of SPEC 2.5) and pushes it.
#[utoipa::path(
    post, path = "/satellites/{id}/profile", tag = tags::SATELLITES,
    description = "Device rule. Sets the recording profile (`recordingProfile` of SPEC 2.5) and pushes it over MQTT.",
    params(("id" = uuid::Uuid, Path, description = "satellite id")),
    request_body = Object,
    responses((status = 200, description = "the effective config", body = Object), err::BadRequest, err::Auth, err::NotFound, err::Unprocessable)
)]
async fn set_profile(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
    Json(profile): Json<RecordingProfile>,
) -> Result<axum::Json<Value>, ApiError> {
    let (sat, _, settings) = device_rule::check(&state, &ctx, id, DeviceAction::Manage).await?;
    profile.validate().map_err(|e| ApiError::Unprocessable("invalid_profile", e))?;
    let json = serde_json::to_string(&profile).map_err(ApiError::internal)?;
    let updated = satellites::set_profile(&state.store, &state.clock, sat.tenant_id, id, json).await?;
    state.bus.publish(Event::ConfigChanged { tenant_id: sat.tenant_id, satellite_id: Some(id) });
    Audit::new("admin.satellite_profile_changed")
        .actor(&ctx)
        .tenant(sat.tenant_id)
        .target("satellite", id)
        .ip(&ip)
        .details(json!({ "type": profile.kind }))
        .write(&state)
        .await;
    Ok(axum::Json(effective(&updated, &settings)))
}
