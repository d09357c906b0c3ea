//! Detections (SPEC 4.2): the list and the detail. Newest first; filters `satelliteId` and
//! `species` (species code); `limit` (default 50, at most 500) and `offset`.

use axum::{Router, extract::State, routing::get};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ApiError, Path, Query, not_found, views::Page};
use crate::{
    auth::Viewer,
    ids::{DetectionId, SatelliteId},
    state::AppState,
    store::{self, detections::Stored},
};

pub fn router() -> Router<AppState> {
    Router::new().route("/detections", get(list)).route("/detections/{id}", get(detail))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListQuery {
    satellite_id: Option<SatelliteId>,
    species: Option<String>,
}

async fn list(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Query(q): Query<ListQuery>,
    Query(page): Query<Page>,
) -> Result<axum::Json<Value>, ApiError> {
    let page = page.checked()?;
    let tenant = access.tenant_id;
    let filter = store::detections::Filter {
        satellite_id: q.satellite_id,
        species_code: q.species.filter(|s| !s.is_empty()),
        limit: page.limit,
        offset: page.offset,
    };
    let (rows, total) = state.store.call(move |c| store::detections::list(c, tenant, &filter)).await?;
    Ok(axum::Json(json!({ "detections": rows, "total": total })))
}

async fn detail(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path(id): Path<DetectionId>,
) -> Result<axum::Json<Stored>, ApiError> {
    let tenant = access.tenant_id;
    let found = state
        .store
        .call(move |c| store::detections::get(c, tenant, id))
        .await
        .map_err(not_found("detection_not_found", "no such detection"))?;
    Ok(axum::Json(found))
}
