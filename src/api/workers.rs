//! Inference workers (SPEC 4.12): `GET /workers` (the queue and the workers of every process in
//! the service registry, one entry per IP, with `jobsProcessed`, `jobsSucceeded`, `jobsFailed`,
//! `avgDurationMs`; see `usecases::workers`) and `GET /workers/jobs` (the 50 most recently
//! finished jobs). Admin+; a team admin's counts are the team's own, a platform admin's the hub's.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::extract::State;
use serde_json::{Value, json};

use super::ApiError;
use crate::{
    auth::Admin,
    state::AppState,
    store,
    usecases::workers::{self, Scope, Workers},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(jobs))
}

#[utoipa::path(
    get, path = "/workers", tag = tags::SYSTEM,
    description = "Admin+. Queue stats and the workers of every process in the service registry, deduplicated by IP, with `jobsProcessed`, `jobsSucceeded`, `jobsFailed`, `avgDurationMs`; a team admin's counts are the team's own.",
    responses((status = 200, description = "`{queue, workers}`", body = Object), err::Auth)
)]
async fn list(State(state): State<AppState>, Admin(access): Admin) -> Result<axum::Json<Workers>, ApiError> {
    let scope = if access.ctx.sees_all() { Scope::Platform } else { Scope::Team(access.tenant_id) };
    let (registry, this) = (state.registry(), state.this_process());
    Ok(axum::Json(workers::list(&state.store, &registry, &this, state.clock.now(), scope).await?))
}

#[utoipa::path(
    get, path = "/workers/jobs", tag = tags::SYSTEM,
    description = "Admin+. Recently completed jobs.",
    responses((status = 200, description = "`{jobs}`", body = Object), err::Auth)
)]
async fn jobs(State(state): State<AppState>, Admin(access): Admin) -> Result<axum::Json<Value>, ApiError> {
    let tenant = access.tenant_id;
    let jobs = state.store.call(move |c| store::jobs::recent(c, Some(tenant), 50)).await?;
    Ok(axum::Json(json!({ "jobs": jobs })))
}
