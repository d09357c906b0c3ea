//! The LAN dashboard: server-rendered pages (maud templates, checked at compile time) with htmx
//! for partial updates and uPlot for charts, all embedded in the binary (`assets.rs`).
//!
//! Pages read and write through the `/api` routes in process (`client.rs`), with the browser's
//! own cookie and team, so every rule stays in the API and its use cases. Browser scripts call the
//! same routes with `fetch`. Sign-in, first run, sign-out and the team switch are the only form
//! posts the dashboard handles itself; `csrf.rs` says how they are protected.
//!
//! Layout: `ctx.rs` (who is signed in), `layout.rs` (the shell), `error.rs` (sign-in redirect and
//! error pages), `setup.rs` (the first-run code), `words.rs` (dates, weeks, places and counts in the
//! sentences the server writes), and one file per page group under `pages/`.

pub mod assets;
mod client;
pub(crate) mod csrf;
mod ctx;
mod error;
mod icons;
mod layout;
mod pages;
mod qr;
pub mod setup;
pub mod words;

use std::sync::Arc;

use axum::{
    Router,
    extract::{Request, State},
    middleware,
    response::Response,
    routing::get,
};
use tower::ServiceExt;
use tower_http::compression::CompressionLayer;

use crate::state::AppState;

/// What the page handlers share.
#[derive(Clone)]
pub struct WebState {
    pub app: AppState,
    /// The `/api` router, for in-process calls.
    pub api: Router,
    pub setup: Arc<setup::SetupCode>,
}

/// The dashboard's routes (everything outside `/api`), to be merged with the API router.
/// Paths under `/api` go to the API router untouched.
pub fn router(app: AppState, api: Router, setup: Arc<setup::SetupCode>) -> Router {
    let state = WebState { app, api, setup };
    pages::routes()
        .route_layer(middleware::from_fn(csrf::layer))
        // Pages are compressed here; assets carry their own gzip, and `/api` its own layer.
        .layer(CompressionLayer::new().gzip(true))
        .route("/assets/{*file}", get(assets::serve))
        .fallback(dispatch)
        .layer(middleware::from_fn_with_state(state.clone(), error::with_shell))
        .with_state(state)
}

/// `/api/...` to the API (its own JSON 404 included); anything else is a page that does not exist.
async fn dispatch(State(state): State<WebState>, req: Request) -> Response {
    let path = req.uri().path();
    if path == "/api" || path.starts_with("/api/") {
        return match state.api.oneshot(req).await {
            Ok(r) => r,
            Err(never) => match never {},
        };
    }
    let uri = req.uri().clone();
    error::PageError::NotFound(format!("There is no page at {}.", uri.path())).respond(&uri)
}
