//! The dashboard's pages, one file per group. Each file has a `routes()` merged here.

mod auth;
mod common;
mod forms;
mod live;

use axum::Router;

use super::WebState;

pub fn routes() -> Router<WebState> {
    Router::new().merge(auth::routes()).merge(live::routes())
}
