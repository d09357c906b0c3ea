//! Inference workers (SPEC 4.12): `GET /workers` (the queue and the workers of every process in
//! the service registry, one entry per IP, with `jobsProcessed`, `jobsSucceeded`, `jobsFailed`,
//! `avgDurationMs`; see `usecases::workers`) and `GET /workers/jobs` (the 50 most recently
//! finished jobs). Admin+; a team admin's counts are the team's own, a platform admin's the hub's.

use axum::{Router, extract::State, routing::get};
use serde_json::{Value, json};

use super::ApiError;
use crate::{
    auth::Admin,
    state::AppState,
    store,
    usecases::workers::{self, Scope, Workers},
};

pub fn router() -> Router<AppState> {
    Router::new().route("/workers", get(list)).route("/workers/jobs", get(jobs))
}

async fn list(State(state): State<AppState>, Admin(access): Admin) -> Result<axum::Json<Workers>, ApiError> {
    let scope = if access.ctx.sees_all() { Scope::Platform } else { Scope::Team(access.tenant_id) };
    let (registry, this) = (state.registry(), state.this_process());
    Ok(axum::Json(workers::list(&state.store, &registry, &this, state.clock.now(), scope).await?))
}

async fn jobs(State(state): State<AppState>, Admin(access): Admin) -> Result<axum::Json<Value>, ApiError> {
    let tenant = access.tenant_id;
    let jobs = state.store.call(move |c| store::jobs::recent(c, Some(tenant), 50)).await?;
    Ok(axum::Json(json!({ "jobs": jobs })))
}
