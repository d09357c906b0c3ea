//! BirdWeather sharing of a satellite over HTTP (issue 38, docs/birdweather.md):
//! `GET/PUT/DELETE /satellites/{id}/birdweather` and the read-only token test
//! `POST /satellites/{id}/birdweather/test`. Anyone of the team reads the setting and status
//! (never the token: `tokenSet` and its last 4 characters); only the team's admins change it or
//! test it.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{ApiError, Json, Path};
use crate::{
    auth::{
        Audit, AuthContext, Authenticated, ClientIp,
        device_rule::{self, DeviceAction},
    },
    domain::Role,
    ids::SatelliteId,
    state::AppState,
    store::satellites::Satellite,
    usecases::birdweather::{BirdweatherError, Change, Sharing, TestReport, View},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_setting, put_setting, delete_setting)).routes(routes!(test_token))
}

impl From<BirdweatherError> for ApiError {
    fn from(e: BirdweatherError) -> Self {
        let m = e.to_string();
        match e {
            BirdweatherError::SatelliteNotFound => Self::NotFound("satellite_not_found", m),
            BirdweatherError::InvalidToken => Self::Unprocessable("invalid_token", m),
            BirdweatherError::TokenRequired => Self::Unprocessable("token_required", m),
            BirdweatherError::InvalidMinConfidence => Self::Unprocessable("invalid_min_confidence", m),
            BirdweatherError::NotConfigured => Self::NotFound("birdweather_not_configured", m),
            BirdweatherError::Secrets(_) => Self::Unavailable("secret_unreadable", m),
            BirdweatherError::Store(e) => e.into(),
        }
    }
}

fn sharing(state: &AppState) -> Sharing {
    Sharing::new(&state.store, &state.objects, &state.secrets, &state.clock, &state.settings.birdweather)
}

/// The satellite, when the caller may change its BirdWeather sharing (the team's admins).
async fn admin_of(state: &AppState, ctx: &AuthContext, id: SatelliteId) -> Result<Satellite, ApiError> {
    let (sat, rel, _) = device_rule::check(state, ctx, id, DeviceAction::View).await?;
    if !(rel.sees_all || rel.role == Some(Role::Admin)) {
        return Err(ApiError::Forbidden(
            "admin_required",
            "only the team's admins may change or test its BirdWeather sharing".into(),
        ));
    }
    Ok(sat)
}

#[utoipa::path(
    get, path = "/satellites/{id}/birdweather", tag = tags::SATELLITES,
    description = "Viewer+. The satellite's BirdWeather sharing: `tokenSet` and `tokenLast4` (never the token), `enabled`, `minConfidence`, and `status`: how many detections are `queued`, `sent`, `skipped` or `failed`, the last success, the last error in words, a pause after repeated failures, and the latest detections with their reasons; `timeZone` is the station's zone, the clock its times are read on.",
    params(("id" = uuid::Uuid, Path, description = "satellite id")),
    responses((status = 200, description = "the setting and status", body = Read), err::Auth, err::NotFound)
)]
async fn get_setting(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
) -> Result<axum::Json<Read>, ApiError> {
    let (sat, _, settings) = device_rule::check(&state, &ctx, id, DeviceAction::View).await?;
    let view = sharing(&state).view(id).await?;
    Ok(axum::Json(Read { view, time_zone: sat.time_zone.unwrap_or(settings.time_zone) }))
}

/// The setting and status as `GET` reads them, with the zone their times are the station's in.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = BirdweatherRead)]
struct Read {
    #[serde(flatten)]
    view: View,
    /// The satellite's effective IANA zone (issue 37; the team's while it has none): the
    /// dashboard writes the status's times on the station's clock, as it does its detections'.
    time_zone: String,
}

/// `{token?, enabled?, minConfidence?}`: a token is needed the first time; an absent field
/// keeps its value.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SettingBody {
    /// The station token from app.birdweather.com/account/stations (write-only).
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    enabled: Option<bool>,
    /// 0.01 to 1; default 0.7.
    #[serde(default)]
    min_confidence: Option<f64>,
}

#[utoipa::path(
    put, path = "/satellites/{id}/birdweather", tag = tags::SATELLITES,
    description = "Team admin. Body `{token?, enabled?, minConfidence?}`. The token (4 to 200 letters, digits, `-`, `_`) is sealed with the hub's key and never returned; it is needed the first time (422 `token_required`), later an absent field keeps its value. A new token clears the station's errors and pause and makes its queued detections due at once. From then on, each detection of this satellite that people confirm, at or above `minConfidence`, is uploaded.",
    params(("id" = uuid::Uuid, Path, description = "satellite id")),
    request_body = SettingBody,
    responses((status = 200, description = "the setting and status", body = View), err::BadRequest, err::Auth, err::NotFound, err::Unprocessable)
)]
async fn put_setting(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
    Json(body): Json<SettingBody>,
) -> Result<axum::Json<View>, ApiError> {
    let sat = admin_of(&state, &ctx, id).await?;
    let new_token = body.token.as_deref().is_some_and(|t| !t.trim().is_empty());
    let change = Change { token: body.token, enabled: body.enabled, min_confidence: body.min_confidence };
    let view = sharing(&state).set(id, change).await?;
    Audit::new("admin.satellite_birdweather_changed")
        .actor(&ctx)
        .tenant(sat.tenant_id)
        .target("satellite", id)
        .ip(&ip)
        .details(json!({ "newToken": new_token, "enabled": view.enabled, "minConfidence": view.min_confidence }))
        .write(&state)
        .await;
    Ok(axum::Json(view))
}

#[utoipa::path(
    delete, path = "/satellites/{id}/birdweather", tag = tags::SATELLITES,
    description = "Team admin. Stops sharing and forgets the token; detections still queued are skipped. 404 `birdweather_not_configured` when it did not share.",
    params(("id" = uuid::Uuid, Path, description = "satellite id")),
    responses((status = 204, description = "removed"), err::Auth, err::NotFound)
)]
async fn delete_setting(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
) -> Result<StatusCode, ApiError> {
    let sat = admin_of(&state, &ctx, id).await?;
    sharing(&state).remove(id).await?;
    Audit::new("admin.satellite_birdweather_removed")
        .actor(&ctx)
        .tenant(sat.tenant_id)
        .target("satellite", id)
        .ip(&ip)
        .write(&state)
        .await;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    post, path = "/satellites/{id}/birdweather/test", tag = tags::SATELLITES,
    description = "Team admin. Checks the stored token with BirdWeather's one documented read, `GET /stations/{token}/stats?period=day`; never posts anything (no test data on the public map). Answers 200 `{ok, httpStatus, detections, species, summary}`: a refused token (401/403) or an unknown station (404) is `ok: false` with the reason in `summary`. 404 `birdweather_not_configured` without a token.",
    params(("id" = uuid::Uuid, Path, description = "satellite id")),
    responses((status = 200, description = "what the test found", body = TestReport), err::Auth, err::NotFound)
)]
async fn test_token(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
) -> Result<axum::Json<TestReport>, ApiError> {
    admin_of(&state, &ctx, id).await?;
    Ok(axum::Json(sharing(&state).test(id).await?))
}
