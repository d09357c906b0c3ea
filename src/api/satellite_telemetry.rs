//! `GET /satellites/:id/telemetry` (SPEC 2.2): a satellite's recent telemetry samples, for the
//! dashboard's sparklines (temperature, free storage, battery, network).

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::{ApiError, Path, Query};
use crate::{
    auth::{
        Authenticated,
        device_rule::{self, DeviceAction},
    },
    ids::SatelliteId,
    state::AppState,
    store,
    time::Timestamp,
};

/// The most samples one answer holds (a day at one sample a minute fits).
const MAX_POINTS: i64 = 2000;
/// The longest window one may ask for: a week.
const MAX_HOURS: i64 = 24 * 7;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_telemetry))
}

#[derive(Debug, Deserialize)]
struct HoursQuery {
    /// The window, 1 to 168 hours back from now (default 24).
    hours: Option<i64>,
}

/// One telemetry sample as the satellite sent it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TelemetryPoint {
    #[schema(value_type = String)]
    pub recorded_at: Timestamp,
    pub cpu_temp: Option<f64>,
    pub storage_free_bytes: Option<i64>,
    pub battery_level: Option<f64>,
    pub network_latency_ms: Option<f64>,
    pub packet_loss_pct: Option<f64>,
    pub uptime_seconds: Option<i64>,
}

/// The answer: the window and its samples, oldest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TelemetryView {
    pub satellite_id: String,
    pub hours: i64,
    pub points: Vec<TelemetryPoint>,
}

#[utoipa::path(
    get, path = "/satellites/{id}/telemetry", tag = tags::SATELLITES,
    description = "Viewer+. The satellite's telemetry samples of the last `hours` (1-168, default 24; else 422 `invalid_hours`), oldest first, at most the newest 2000: `{satelliteId, hours, points: [{recordedAt, cpuTemp, storageFreeBytes, batteryLevel, networkLatencyMs, packetLossPct, uptimeSeconds}]}`. Samples are kept 30 days.",
    params(("id" = uuid::Uuid, Path, description = "satellite id"), ("hours" = Option<i64>, Query, description = "window in hours, 1-168 (default 24)")),
    responses((status = 200, description = "the samples", body = TelemetryView), err::BadRequest, err::Auth, err::NotFound, err::Unprocessable)
)]
async fn get_telemetry(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
    Query(q): Query<HoursQuery>,
) -> Result<axum::Json<TelemetryView>, ApiError> {
    let hours = q.hours.unwrap_or(24);
    if !(1..=MAX_HOURS).contains(&hours) {
        return Err(ApiError::Unprocessable("invalid_hours", format!("hours must be 1 to {MAX_HOURS}, not {hours}")));
    }
    let (sat, _, _) = device_rule::check(&state, &ctx, id, DeviceAction::View).await?;
    let from = Timestamp::from(state.clock.now() - chrono::Duration::hours(hours));
    let samples = state.store.call(move |c| store::telemetry::since(c, sat.id, from, MAX_POINTS)).await?;
    let points = samples
        .into_iter()
        .map(|s| TelemetryPoint {
            recorded_at: s.recorded_at,
            cpu_temp: s.cpu_temp,
            storage_free_bytes: s.storage_free_bytes,
            battery_level: s.battery_level,
            network_latency_ms: s.network_latency_ms,
            packet_loss_pct: s.packet_loss_pct,
            uptime_seconds: s.uptime_seconds,
        })
        .collect();
    Ok(axum::Json(TelemetryView { satellite_id: id.to_string(), hours, points }))
}
