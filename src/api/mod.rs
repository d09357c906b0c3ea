//! The HTTP API under `/api`: one `router()` per resource file, merged here, plus the layers every
//! request passes (tracing, gzip, body limit, panic catcher) and JSON 404/405 fallbacks.

mod admin_members;
mod admin_users;
mod alert_rules;
mod alerts;
mod api_keys;
mod audio;
mod auth;
mod calibration;
mod detection_notes;
mod detections;
mod error;
mod exports;
mod extract;
pub mod files;
pub mod health;
mod invites;
mod me;
mod mfa;
mod mfa_login;
mod mobile;
mod request_log;
mod satellite_config;
pub mod satellites;
mod scheduled_exports;
mod session;
mod sessions;
mod settings;
mod share;
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
mod workers;
pub mod ws;

use axum::{Router, extract::DefaultBodyLimit, response::IntoResponse};
use tower_http::{
    catch_panic::CatchPanicLayer,
    compression::{
        CompressionLayer,
        predicate::{DefaultPredicate, NotForContentType, Predicate},
    },
};

pub use error::{ApiError, ErrorBody, not_found};
pub use extract::{Json, Path, Query};
pub use request_log::redact_uri;

use crate::state::AppState;

/// The whole HTTP surface of the hub.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
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
        .merge(detections::router())
        .merge(detection_notes::router())
        .merge(share::router())
        .merge(exports::router())
        .merge(species::router())
        .merge(species_images::router())
        .merge(stats::router())
        .merge(audio::router())
        .merge(sessions::router())
        .merge(calibration::router())
        .merge(alerts::router())
        .merge(alert_rules::router())
        .merge(scheduled_exports::router())
        .merge(workers::router())
        .merge(system::router())
        .merge(mobile::router(state.settings.releases.max_apk_bytes))
        .merge(system_versions::router())
        .merge(ws::router())
        .fallback(unknown_route)
        .method_not_allowed_fallback(method_not_allowed);

    Router::new()
        .nest("/api", api)
        .fallback(unknown_route)
        .layer(DefaultBodyLimit::max(state.settings.http.max_body_bytes))
        // Audio and APKs are served with byte ranges (seeking, resumed downloads); compressing
        // them would break the ranges, and an APK is a ZIP already.
        .layer(
            CompressionLayer::new().gzip(true).compress_when(
                DefaultPredicate::new()
                    .and(NotForContentType::const_new("audio/"))
                    .and(NotForContentType::const_new(mobile::APK_CONTENT_TYPE)),
            ),
        )
        .layer(CatchPanicLayer::custom(|_| {
            ApiError::Internal(anyhow::anyhow!("a request handler panicked")).into_response()
        }))
        .layer(request_log::layer())
        .with_state(state)
}

/// The HTTP surface of a `dispatcher`: health only (for systemd and load balancers).
pub fn health_only(state: AppState) -> Router {
    Router::new()
        .nest("/api", health::router().fallback(unknown_route))
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
