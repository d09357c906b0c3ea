//! `GET /satellites/:id/schedule` (SPEC 4.4): the recording schedule resolved to real times for
//! today and tomorrow in the satellite's own zone, with sun times at the satellite's position.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::extract::State;

use super::{ApiError, Path};
use crate::{
    auth::{
        Authenticated,
        device_rule::{self, DeviceAction},
    },
    ids::SatelliteId,
    state::AppState,
    usecases::satellite_schedule::{self, ScheduleView},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_schedule))
}

#[utoipa::path(
    get, path = "/satellites/{id}/schedule", tag = tags::SATELLITES,
    description = "Viewer+. The recording profile's schedule resolved for today and tomorrow in the satellite's zone (`timezone`; times carry its offset): sunrise, solar noon, sunset, polar day/night, the recording windows, entries that cannot be resolved (no position, no sun event) and whether the satellite records now.",
    params(("id" = uuid::Uuid, Path, description = "satellite id")),
    responses((status = 200, description = "the resolved schedule", body = Object), err::Auth, err::NotFound)
)]
async fn get_schedule(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
) -> Result<axum::Json<ScheduleView>, ApiError> {
    let (sat, _, _) = device_rule::check(&state, &ctx, id, DeviceAction::View).await?;
    let zone = state.store.satellite_zone(id).await?;
    Ok(axum::Json(satellite_schedule::resolve(&sat, state.clock.now(), zone)))
}
