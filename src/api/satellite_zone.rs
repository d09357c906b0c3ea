//! Time zones over HTTP (issue 37): a satellite's zone chosen by hand
//! (`PUT /satellites/{id}/time-zone`) and how far the statistics are from counting every
//! satellite in its current zone (`GET /stats/time-zone-moves`). The satellite record itself
//! carries `time_zone`, `time_zone_source` and `time_zone_override` (`satellites.rs`).

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::extract::State;
use serde::Deserialize;
use serde_json::json;

use super::{ApiError, Json, Path, satellites::SatelliteView};
use crate::{
    auth::{
        Audit, Authenticated, ClientIp, Viewer,
        device_rule::{self, DeviceAction},
    },
    ids::SatelliteId,
    state::AppState,
    usecases::zones::{self, OverrideError, Progress},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(set_zone)).routes(routes!(moves))
}

impl From<OverrideError> for ApiError {
    fn from(e: OverrideError) -> Self {
        let m = e.to_string();
        match e {
            OverrideError::InvalidZone(_) => Self::Unprocessable("invalid_time_zone", m),
            OverrideError::NotFound => Self::NotFound("satellite_not_found", m),
            OverrideError::Store(e) => e.into(),
        }
    }
}

/// `{"timeZone": "Europe/Berlin"}` chooses a zone; `{"timeZone": null}` goes back to the zone of
/// the satellite's position, else its team's.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ZoneBody {
    /// An IANA zone name (`Europe/Berlin`, `America/New_York`, `UTC`), or null.
    #[serde(default)]
    time_zone: Option<String>,
}

#[utoipa::path(
    put, path = "/satellites/{id}/time-zone", tag = tags::SATELLITES,
    description = "Device rule (like the satellite's config). Body `{timeZone}`: an IANA name chooses the satellite's zone, `null` goes back to the zone of its position, else its team's. Its statistics move to the new zone in the background (`GET /stats/time-zone-moves`). A name that is not an IANA zone (`CET`, `Mars/Olympus`) gets 422 `invalid_time_zone`.",
    params(("id" = uuid::Uuid, Path, description = "satellite id")),
    request_body = ZoneBody,
    responses((status = 200, description = "the satellite", body = SatelliteView), err::BadRequest, err::Auth, err::NotFound, err::Unprocessable)
)]
async fn set_zone(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Path(id): Path<SatelliteId>,
    Json(body): Json<ZoneBody>,
) -> Result<axum::Json<SatelliteView>, ApiError> {
    let (sat, rel, settings) = device_rule::check(&state, &ctx, id, DeviceAction::SelfService).await?;
    let info = zones::set_override(&state.store, &state.clock, sat.tenant_id, id, body.time_zone.as_deref()).await?;
    Audit::new("admin.satellite_time_zone_changed")
        .actor(&ctx)
        .tenant(sat.tenant_id)
        .target("satellite", id)
        .ip(&ip)
        .details(json!({
            "from": sat.time_zone, "fromOverride": sat.zone_override,
            "to": info.zone.name(), "override": info.zone_override, "source": info.source.as_str(),
        }))
        .write(&state)
        .await;
    let updated = state.store.call(move |c| crate::store::satellites::get(c, id)).await?;
    Ok(axum::Json(super::satellites::view(&state, &updated, rel, &settings)))
}

#[utoipa::path(
    get, path = "/stats/time-zone-moves", tag = tags::STATS,
    description = "Viewer+. Whether the team's statistics are being moved to new time zones (after a team or satellite zone change), and how far: `{running, done, total, satellites: [{satelliteId, name, fromZone, toZone, done, total}]}`. Figures stay readable while a move runs.",
    responses((status = 200, description = "the moves under way", body = Progress), err::Auth)
)]
async fn moves(State(state): State<AppState>, Viewer(access): Viewer) -> Result<axum::Json<Progress>, ApiError> {
    Ok(axum::Json(zones::progress(&state.store, access.tenant_id).await?))
}
