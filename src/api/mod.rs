//! The HTTP API under `/api`: one `router()` per resource file, merged here, plus the layers every
//! request passes (tracing, gzip, body limit, panic catcher) and JSON 404/405 fallbacks. The merged
//! routers also yield the OpenAPI document (`openapi.rs` says how a route gets into it).

mod access_errors;
mod admin_members;
mod admin_users;
mod alert_rules;
mod alerts;
mod api_keys;
mod audio;
mod auth;
mod calibration;
mod detection_notes;
mod detection_quality;
mod detections;
mod error;
mod exports;
mod extract;
pub mod files;
mod form_fields;
pub mod health;
mod humane;
mod idempotency;
mod imports;
mod invites;
mod me;
pub mod metrics;
mod mfa;
mod mfa_login;
mod mobile;
pub mod openapi;
mod origin;
mod public;
mod request_log;
mod satellite_birdweather;
mod satellite_config;
mod satellite_live;
mod satellite_remote;
mod satellite_schedule;
mod satellite_telemetry;
mod satellite_zone;
pub mod satellites;
mod scheduled_exports;
pub mod security_headers;
mod session;
mod sessions;
mod settings;
mod share;
mod share_links;
mod species;
mod species_images;
mod stats;
mod stats_expected;
mod stats_weather;
mod system;
mod system_versions;
mod tenants;
mod usecase_errors;
pub mod views;
mod worker_keys;
mod workers;
pub mod ws;
mod ws_live;

use axum::{Router, extract::DefaultBodyLimit, response::IntoResponse};
use tower_http::{
    catch_panic::CatchPanicLayer,
    compression::{
        CompressionLayer,
        predicate::{DefaultPredicate, NotForContentType, Predicate},
    },
};
use utoipa_axum::router::OpenApiRouter;

pub use error::{ApiError, ErrorBody, not_found};
pub use extract::{Json, Path, Query, json_body};
pub use request_log::redact_uri;

use crate::state::AppState;

/// Every documented route under `/api`, before fallbacks and layers.
fn routes(max_apk_bytes: u64, max_import_bytes: u64) -> OpenApiRouter<AppState> {
    let api = OpenApiRouter::new()
        .merge(openapi::router())
        .merge(health::router())
        .merge(auth::router())
        .merge(me::router())
        .merge(mfa::router())
        .merge(mfa_login::router())
        .merge(invites::router())
        .merge(tenants::router())
        .merge(settings::router())
        .merge(api_keys::router())
        .merge(admin_users::router())
        .merge(admin_members::router())
        .merge(satellites::router())
        .merge(satellite_config::router())
        .merge(satellite_schedule::router())
        .merge(satellite_telemetry::router())
        .merge(satellite_remote::router())
        .merge(satellite_live::router())
        .merge(satellite_zone::router())
        .merge(satellite_birdweather::router())
        .merge(detections::router())
        .merge(detection_notes::router())
        .merge(share::router())
        .merge(share_links::router())
        .merge(public::router())
        .merge(exports::router())
        .merge(species::router())
        .merge(species_images::router())
        .merge(stats::router())
        .merge(audio::router())
        .merge(sessions::router())
        .merge(calibration::router())
        .merge(detection_quality::router())
        .merge(alerts::router())
        .merge(alert_rules::router())
        .merge(scheduled_exports::router())
        .merge(workers::router())
        .merge(worker_keys::router())
        .merge(system::router())
        .merge(mobile::router(max_apk_bytes))
        .merge(imports::router(max_import_bytes))
        .merge(system_versions::router())
        .merge(ws::router());
    OpenApiRouter::new().nest("/api", api)
}

/// The OpenAPI 3.1 document of every route of [`router`] (served at `GET /api/openapi.json`).
pub fn document() -> utoipa::openapi::OpenApi {
    let defaults = crate::config::Settings::default();
    openapi::finish(routes(defaults.releases.max_apk_bytes, defaults.imports.max_upload_bytes).into_openapi())
}

/// The whole HTTP surface of the hub.
pub fn router(state: AppState) -> Router {
    let settings = &state.settings;
    let (routes, _) = routes(settings.releases.max_apk_bytes, settings.imports.max_upload_bytes).split_for_parts();
    let api = Router::new().merge(routes).fallback(unknown_route).method_not_allowed_fallback(method_not_allowed);

    // Innermost: a repeated POST with the same Idempotency-Key gets the first answer back.
    api.layer(axum::middleware::from_fn_with_state(idempotency::Idempotency::new(state.clone()), idempotency::layer))
        .layer(DefaultBodyLimit::max(state.settings.http.max_body_bytes))
        // Audio and APKs are served with byte ranges (seeking, resumed downloads); compressing
        // them would break the ranges. APKs and export bundles are ZIPs, compressed already.
        .layer(
            CompressionLayer::new().gzip(true).compress_when(
                DefaultPredicate::new()
                    .and(NotForContentType::const_new("audio/"))
                    .and(NotForContentType::const_new(mobile::APK_CONTENT_TYPE))
                    .and(NotForContentType::const_new("application/zip")),
            ),
        )
        .layer(CatchPanicLayer::custom(|_| {
            ApiError::Internal(anyhow::anyhow!("a request handler panicked")).into_response()
        }))
        .layer(axum::middleware::from_fn(origin::layer))
        .layer(request_log::layer())
        // Outermost, so even a panic's answer carries its route template for the request metrics.
        .layer(axum::middleware::from_fn(crate::metrics::http::label_route))
        .with_state(state)
}

/// The HTTP surface of a `dispatcher`: health only (for systemd and load balancers).
pub fn health_only(state: AppState) -> Router {
    Router::new()
        .nest("/api", Router::from(health::router()).fallback(unknown_route))
        .fallback(unknown_route)
        .layer(request_log::layer())
        .with_state(state)
}

async fn unknown_route() -> ApiError {
    ApiError::NotFound("not_found", "no such endpoint".into())
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
