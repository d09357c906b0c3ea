//! `GET /stats/expected-species` (SPEC 4.8): the species the range model expects at a
//! satellite's place (or `lat`/`lon`) in a week, each marked detected by the team or not. Query: `satelliteId` or `lat` and `lon`; `date` (YYYY-MM-DD, default today) or `week`
//! (1-48); `threshold` (default 0.03); `lang` (default the team's primary language); `speciesCode`
//! (only that species, for a species page).

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::extract::State;
use serde::Deserialize;

use super::{ApiError, Query};
use crate::{
    auth::Viewer,
    domain::settings::TenantSettings,
    ids::SatelliteId,
    inference::range,
    state::AppState,
    store,
    usecases::expected_species::{self, Answer, Ask},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(expected))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExpectedQuery {
    satellite_id: Option<SatelliteId>,
    lat: Option<f64>,
    lon: Option<f64>,
    date: Option<chrono::NaiveDate>,
    week: Option<u32>,
    threshold: Option<f32>,
    lang: Option<String>,
    /// Only this species code.
    species_code: Option<String>,
}

#[utoipa::path(
    get, path = "/stats/expected-species", tag = tags::STATS,
    description = "Viewer+. Species expected at a location, from an external checklist service, compared with what the team heard.",
    responses((status = 200, description = "the expected species", body = Object), err::BadRequest, err::Auth, err::Unavailable)
)]
async fn expected(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Query(q): Query<ExpectedQuery>,
) -> Result<axum::Json<Answer>, ApiError> {
    let tenant = access.tenant_id;
    let (latitude, longitude) = match (q.satellite_id, q.lat, q.lon) {
        (Some(id), None, None) => {
            let sat = state
                .store
                .call(move |c| store::satellites::get(c, id))
                .await
                .ok()
                .filter(|s| s.tenant_id == tenant)
                .ok_or_else(|| {
                    ApiError::NotFound("satellite_not_found", "There is no such satellite in this team.".into())
                })?;
            match (sat.latitude, sat.longitude) {
                (Some(lat), Some(lon)) => (lat, lon),
                _ => {
                    return Err(ApiError::Unprocessable(
                        "no_location",
                        format!("{} has no location yet; give lat and lon", sat.name),
                    ));
                }
            }
        }
        (None, Some(lat), Some(lon)) => (lat, lon),
        _ => {
            return Err(ApiError::BadRequest("invalid_query", "give either satelliteId, or lat and lon".into()));
        }
    };
    let week = match (q.week, q.date) {
        (Some(_), Some(_)) => return Err(ApiError::BadRequest("invalid_query", "give date or week, not both".into())),
        (Some(w), None) => w,
        (None, Some(d)) => range::week_of(d),
        (None, None) => range::week_of(state.clock.now().date_naive()),
    };
    let lang = match q.lang {
        Some(l) => l,
        None => {
            let scope = tenant.to_string();
            let settings: TenantSettings = state.store.call(move |c| store::settings::load(c, &scope)).await?;
            settings.primary_language
        }
    };
    let threshold = q.threshold.unwrap_or(range::DEFAULT_THRESHOLD);
    let only = q.species_code.map(|c| c.trim().to_owned()).filter(|c| !c.is_empty());
    let ask = Ask { tenant, latitude, longitude, week, threshold, lang, only };
    Ok(axum::Json(expected_species::expected(&state.store, &state.range, &state.names, ask).await?))
}
