//! Inference workers (SPEC 4.12): `GET /workers` (queue counts and this hub's workers with
//! `jobsProcessed`, `jobsSucceeded`, `jobsFailed`, `avgDurationMs`) and `GET /workers/jobs`
//! (the 50 most recently finished jobs). Admin+; counts are the team's own.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::extract::State;
use serde_json::{Value, json};

use super::ApiError;
use crate::{auth::Admin, state::AppState, store};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(workers)).routes(routes!(jobs))
}

#[utoipa::path(
    get, path = "/workers", tag = tags::SYSTEM,
    description = "Admin+. Queue stats and the connected workers, deduplicated by IP, with `jobsProcessed`, `jobsSucceeded`, `jobsFailed`, `avgDurationMs`.",
    responses((status = 200, description = "`{queue, workers}`", body = Object), err::Auth)
)]
async fn workers(State(state): State<AppState>, Admin(access): Admin) -> Result<axum::Json<Value>, ApiError> {
    let tenant = access.tenant_id;
    let queue = state.store.call(move |c| store::jobs::stats(c, Some(tenant))).await?;
    let workers = state.workers.snapshot();
    Ok(axum::Json(json!({ "queue": queue, "workers": workers, "instanceId": state.instance_id })))
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
