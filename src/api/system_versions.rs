//! `GET /system/versions` (SPEC 2.21, 4.12, Viewer+): the latest SemVer of each release stream,
//! `{hub, satellite, mobile}`, each `null` when unknown (`usecases::system_versions`).

use axum::extract::State;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    ApiError, Json,
    openapi::{err, tags},
};
use crate::{
    auth::Viewer,
    state::AppState,
    usecases::system_versions::{self, LatestVersions},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(versions))
}

#[utoipa::path(
    get, path = "/system/versions", tag = tags::SYSTEM,
    description = "Viewer+. The latest SemVer of each release stream, each null when unknown.",
    responses((status = 200, description = "`{hub, satellite, mobile}`", body = Object), err::Auth)
)]
async fn versions(State(state): State<AppState>, Viewer(_viewer): Viewer) -> Result<Json<LatestVersions>, ApiError> {
    let running = env!("CARGO_PKG_VERSION");
    Ok(Json(system_versions::latest(&state.store, running, &state.settings.releases).await?))
}
