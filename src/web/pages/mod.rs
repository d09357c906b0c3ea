//! The dashboard's pages, one file per group. Each file has a `routes()` merged here.

mod account;
mod admin;
mod admin_audit;
mod alert_forms;
mod alert_rule_words;
mod alerts;
mod auth;
mod common;
mod detection;
mod detection_actions;
mod detection_settings;
mod detection_shares;
mod detections;
mod exports;
mod exports_scheduled;
mod forms;
mod imports;
mod live;
mod map_tiles;
mod platform_settings;
mod public;
mod quality;
mod recovery;
mod sat_birdweather;
mod sat_clock;
mod sat_detection;
mod sat_history;
mod sat_parts;
mod sat_summary;
mod sat_workers;
mod satellite;
mod satellites;
mod sessions;
mod share;
mod species;
mod species_pick;
mod stats;
mod stats_map;
mod stats_parts;
mod stats_species;
mod team;
mod team_settings;
mod widgets;
mod zones;

use axum::Router;

use super::WebState;

pub fn routes() -> Router<WebState> {
    Router::new()
        .merge(auth::routes())
        .merge(live::routes())
        .merge(account::routes())
        .merge(team::routes())
        .merge(detection_settings::routes())
        .merge(admin::routes())
        .merge(recovery::routes())
        .merge(detections::routes())
        .merge(detection::routes())
        .merge(detection_shares::routes())
        .merge(sessions::routes())
        .merge(species::routes())
        .merge(stats::routes())
        .merge(satellites::routes())
        .merge(satellite::routes())
        .merge(alerts::routes())
        .merge(exports::routes())
        .merge(imports::routes())
        .merge(public::routes())
        .merge(share::routes())
        .merge(quality::routes())
}
