//! Inference workers (SPEC 4.12): `GET /workers` (the queue and the workers of every process in
//! the service registry, one entry per IP, with `jobsProcessed`, `jobsSucceeded`, `jobsFailed`,
//! `avgDurationMs`; see `usecases::workers`) and `GET /workers/jobs` (the 50 most recently
//! finished jobs). Admin+; a team admin's counts are the team's own, a platform admin's the hub's.
//! A platform admin also sees `remote`: the remote workers (`birdhub worker`) heard from since
//! the hub started, with machine, model, precision, threads, jobs per minute, last seen and
//! whether each is connected (their keys: [`super::worker_keys`]).

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
    description = "Admin+. Queue stats and the workers of every process in the service registry, deduplicated by IP, with `jobsProcessed`, `jobsSucceeded`, `jobsFailed`, `avgDurationMs`; a team admin's counts are the team's own. `remote` (platform admin; empty for a team admin): the remote workers heard from since the hub started, each with `id` (its key), `name`, `machine`, `model`, `precision`, `threads`, `batch`, `jobsPerMinute`, `jobsDone`, `lastSeenAt`, `connected`.",
    responses((status = 200, description = "`{queue, workers, remote}`", body = Object), err::Auth)
)]
async fn list(State(state): State<AppState>, Admin(access): Admin) -> Result<axum::Json<Value>, ApiError> {
    let platform = access.ctx.sees_all();
    let scope = if platform { Scope::Platform } else { Scope::Team(access.tenant_id) };
    let (registry, this) = (state.registry(), state.this_process());
    let listed: Workers = workers::list(&state.store, &registry, &this, state.clock.now(), scope).await?;
    let mut body = serde_json::to_value(listed).map_err(ApiError::internal)?;
    let remote = if platform { remote_workers(&state).await? } else { Vec::new() };
    body["remote"] = json!(remote);
    Ok(axum::Json(body))
}

/// The remote workers with their keys' names.
async fn remote_workers(state: &AppState) -> Result<Vec<Value>, ApiError> {
    let live = state.remote.snapshot();
    if live.is_empty() {
        return Ok(Vec::new());
    }
    let keys = crate::usecases::worker_keys::list(&state.store).await?;
    Ok(live
        .iter()
        .map(|w| {
            let mut v = serde_json::to_value(w).unwrap_or_default();
            v["name"] = json!(keys.iter().find(|k| k.id == w.id).map(|k| k.name.clone()));
            v
        })
        .collect())
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
