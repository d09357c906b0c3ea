//! `GET /api/health` (SPEC 2.21): `{status, version, timestamp}`, public, for load balancers,
//! `birdhub healthcheck` and the test harness.

use axum::{Router, extract::State, http::StatusCode, routing::get};
use serde::{Deserialize, Serialize};

use super::Json;
use crate::state::AppState;

#[derive(Debug, Serialize, Deserialize)]
pub struct Health {
    /// `ok`, or `degraded` when the database does not answer.
    pub status: String,
    pub version: String,
    pub timestamp: String,
}

pub fn router() -> Router<AppState> {
    Router::new().route("/health", get(health))
}

async fn health(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    let db_ok = state.store.ping().await.is_ok();
    let (code, status) = if db_ok { (StatusCode::OK, "ok") } else { (StatusCode::SERVICE_UNAVAILABLE, "degraded") };
    let body =
        Health { status: status.into(), version: env!("CARGO_PKG_VERSION").into(), timestamp: crate::time::now() };
    (code, Json(body))
}
