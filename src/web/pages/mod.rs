//! The dashboard's pages, one file per group. Each file has a `routes()` merged here.

mod alerts;
mod auth;
mod common;
mod exports;
mod forms;
mod live;
mod sat_parts;
mod satellite;
mod satellites;

use axum::Router;

use super::WebState;

pub fn routes() -> Router<WebState> {
    Router::new()
        .merge(auth::routes())
        .merge(live::routes())
        .merge(satellites::routes())
        .merge(satellite::routes())
        .merge(alerts::routes())
        .merge(exports::routes())
}
