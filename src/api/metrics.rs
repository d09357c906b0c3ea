//! `GET /metrics`: the Prometheus scrape (`crate::metrics` holds the series).
//!
//! The route is outside `/api` (where Prometheus looks by default) and outside the OpenAPI
//! document: it is for a scraper, not for apps. It answers 404 while `metrics.enabled` is off, and
//! otherwise only to the internal key (`Authorization: Bearer`, compared in constant time) or to a
//! client address in `metrics.allow`; anyone else gets 401.

use std::net::IpAddr;

use axum::{
    Router,
    extract::State,
    http::{HeaderMap, HeaderValue, header},
    response::{IntoResponse, Response},
    routing::get,
};

use super::ApiError;
use crate::{auth::ClientIp, metrics::http::CONTENT_TYPE, state::AppState, usecases::metrics_scrape};

/// The scrape route, to merge beside the dashboard and the API.
pub fn router(state: AppState) -> Router {
    Router::new().route("/metrics", get(scrape)).with_state(state)
}

async fn scrape(State(state): State<AppState>, ip: ClientIp, headers: HeaderMap) -> Response {
    let settings = &state.settings.metrics;
    if !settings.enabled || !state.metrics.is_enabled() {
        return ApiError::NotFound("not_found", "no such endpoint".into()).into_response();
    }
    let by_key =
        crate::auth::context::bearer(&headers).is_some_and(|b| state.settings.security.internal_api_key.matches(b));
    let by_address = ip.0.parse::<IpAddr>().is_ok_and(|ip| settings.allows(ip));
    if !(by_key || by_address) {
        return ApiError::Unauthorized(
            "unauthenticated",
            "metrics need the internal API key or a client address in metrics.allow".into(),
        )
        .into_response();
    }
    let figures =
        metrics_scrape::figures(&state.store, &state.mqtt, state.settings.mode, &state.settings.data_dir).await;
    let body = state.metrics.render(&figures);
    ([(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE))], body).into_response()
}
