//! `GET /system/status` (SPEC 2.21, 4.12; platform admin): services from the cross-process
//! registry, infrastructure and a data summary, gathered by `usecases::system_status`.

use axum::{Router, extract::State, routing::get};

use super::ApiError;
use crate::{
    auth::PlatformAdmin,
    state::AppState,
    usecases::system_status::{self, Sources, SystemStatus},
};

pub fn router() -> Router<AppState> {
    Router::new().route("/system/status", get(status))
}

async fn status(State(state): State<AppState>, _: PlatformAdmin) -> Result<axum::Json<SystemStatus>, ApiError> {
    let (registry, this) = (state.registry(), state.this_process());
    let sources =
        Sources { store: &state.store, registry: &registry, this: &this, cache: &state.cache, objects: &state.objects };
    Ok(axum::Json(system_status::gather(sources, state.clock.now()).await?))
}
