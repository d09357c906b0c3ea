//! `GET /system/versions` (SPEC 2.21, 4.12, Viewer+): the latest SemVer of each release stream,
//! `{hub, satellite, mobile}`, each `null` when unknown (`usecases::system_versions`).

use axum::{Router, extract::State, routing::get};

use super::{ApiError, Json};
use crate::{
    auth::Viewer,
    state::AppState,
    usecases::system_versions::{self, LatestVersions},
};

pub fn router() -> Router<AppState> {
    Router::new().route("/system/versions", get(versions))
}

async fn versions(State(state): State<AppState>, Viewer(_): Viewer) -> Result<Json<LatestVersions>, ApiError> {
    let running = env!("CARGO_PKG_VERSION");
    Ok(Json(system_versions::latest(&state.store, running, &state.settings.releases).await?))
}
