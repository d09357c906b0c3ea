//! `GET /api/health` (SPEC 2.21): `{status, version, timestamp}`, public, for load balancers,
//! `birdhub healthcheck` and the test harness.

use super::openapi::tags;
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};

use super::Json;
use crate::state::AppState;

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Health {
    /// `ok`, or `degraded` when the database does not answer.
    pub status: String,
    pub version: String,
    pub timestamp: String,
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(health))
}

#[utoipa::path(
    get, path = "/health", tag = tags::SYSTEM,
    description = "Public. `{status, version, timestamp}`; 503 with `status: degraded` when the database does not answer.",
    responses((status = 200, description = "the hub answers", body = Health), (status = 503, description = "the database does not answer", body = Health)),
    security(())
)]
async fn health(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    let db_ok = state.store.ping().await.is_ok();
    let (code, status) = if db_ok { (StatusCode::OK, "ok") } else { (StatusCode::SERVICE_UNAVAILABLE, "degraded") };
    let body =
        Health { status: status.into(), version: env!("CARGO_PKG_VERSION").into(), timestamp: crate::time::now() };
    (code, Json(body))
}
