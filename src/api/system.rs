//! `GET /system/status` (SPEC 2.21, 4.12; platform admin): services from the cross-process
//! registry, infrastructure and a data summary, gathered by `usecases::system_status`.

use axum::extract::State;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    ApiError,
    openapi::{err, tags},
};
use crate::{
    auth::PlatformAdmin,
    state::AppState,
    usecases::system_status::{self, Sources, SystemStatus},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(status))
}

#[utoipa::path(
    get, path = "/system/status", tag = tags::SYSTEM,
    description = "Platform admin. Services from the cross-process registry, infrastructure (database, cache, broker, object storage) and a data summary (SPEC 2.21).",
    responses((status = 200, description = "`{generatedAt, services, infrastructure, data, integrations}`", body = Object), err::Auth, err::Unavailable)
)]
async fn status(
    State(state): State<AppState>,
    PlatformAdmin(_admin): PlatformAdmin,
) -> Result<axum::Json<SystemStatus>, ApiError> {
    let (registry, this) = (state.registry(), state.this_process());
    let sources = Sources {
        store: &state.store,
        registry: &registry,
        this: &this,
        cache: &state.cache,
        objects: &state.objects,
        retention: state.disk.policy,
        integrations_on: state.settings.integrations.active(),
    };
    Ok(axum::Json(system_status::gather(sources, state.clock.now()).await?))
}
