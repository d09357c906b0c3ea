//! The dashboard's pages, one file per group. Each file has a `routes()` merged here.

mod account;
mod admin;
mod auth;
mod common;
mod forms;
mod live;
mod recovery;
mod team;
mod widgets;

use axum::Router;

use super::WebState;

pub fn routes() -> Router<WebState> {
    Router::new()
        .merge(auth::routes())
        .merge(live::routes())
        .merge(account::routes())
        .merge(team::routes())
        .merge(admin::routes())
        .merge(recovery::routes())
}
