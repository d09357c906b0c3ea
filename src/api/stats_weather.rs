//! `GET /stats/weather-correlation` (SPEC 4.8, Viewer+): the team's detections per day next to the
//! weather at its satellites' place, with Pearson's r for temperature, precipitation and wind.
//! Query: `satelliteId` (default: every satellite of the team), `days` (default 30, 1-366, ending
//! today) or `from` and `to` (YYYY-MM-DD, inclusive, at most 366 days), `includeRejected`
//! (default false) and `minConfidence` (0-1). Without a provider, a location or a working
//! provider the answer is 200 with `available: false`, a `reasonCode` and a `reason`.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::extract::State;
use serde::Deserialize;

use super::{ApiError, Query};
use crate::{
    auth::Viewer,
    ids::SatelliteId,
    state::AppState,
    usecases::weather::{self, Answer, Ask},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(correlation))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CorrelationQuery {
    satellite_id: Option<SatelliteId>,
    days: Option<i64>,
    from: Option<chrono::NaiveDate>,
    to: Option<chrono::NaiveDate>,
    include_rejected: Option<bool>,
    min_confidence: Option<f64>,
}

#[utoipa::path(
    get, path = "/stats/weather-correlation", tag = tags::STATS,
    description = "Viewer+. Daily detections against the weather from an external weather service.",
    responses((status = 200, description = "the correlation", body = Object), err::BadRequest, err::Auth, err::Unavailable)
)]
async fn correlation(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Query(q): Query<CorrelationQuery>,
) -> Result<axum::Json<Answer>, ApiError> {
    let ask = Ask {
        tenant: access.tenant_id,
        satellite: q.satellite_id,
        days: q.days,
        from: q.from,
        to: q.to,
        include_rejected: q.include_rejected.unwrap_or(false),
        min_confidence: q.min_confidence,
    };
    Ok(axum::Json(weather::correlation(&state.store, &state.weather, &state.clock, ask).await?))
}
