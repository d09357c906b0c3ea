//! Statistics (SPEC 4.8), all `GET`, Viewer+, for the caller's team. The filters every route
//! shares (`satelliteId`, `days` or `from`/`to`, `includeRejected`, `minConfidence`, `lang`) are
//! checked by `usecases::stats`; each route's default range is in its use-case function.
//! `expected-species` lives in `stats_expected.rs`.

use axum::{Router, extract::State, routing::get};
use serde::Deserialize;

use super::{ApiError, Path, Query};
use crate::{
    auth::{TenantAccess, Viewer},
    ids::SatelliteId,
    state::AppState,
    usecases::stats::{Filters, overview, overview::Ctx, places, profile},
};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/stats/dashboard", get(dashboard))
        .route("/stats/trends", get(trends))
        .route("/stats/top-species", get(top_species))
        .route("/stats/activity", get(activity))
        .route("/stats/verification", get(verification))
        .route("/stats/leaderboard", get(leaderboard))
        .route("/stats/species", get(catalogue))
        .route("/stats/species/{code}", get(species_profile))
        .route("/stats/species-accuracy", get(species_accuracy))
        .route("/stats/compare", get(compare))
        .route("/stats/migration", get(migration))
        .route("/stats/biodiversity", get(biodiversity))
        .route("/stats/activity-heatmap", get(heatmap))
        .route("/stats/satellite-activity", get(satellite_activity))
        .route("/stats/map", get(map))
        .route("/stats/map/detections", get(map_detections))
        .merge(super::stats_expected::router())
        .merge(super::stats_weather::router())
}

/// Every query parameter a stats route takes (each route uses its share).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatsQuery {
    satellite_id: Option<SatelliteId>,
    days: Option<i64>,
    from: Option<chrono::NaiveDate>,
    to: Option<chrono::NaiveDate>,
    #[serde(default)]
    include_rejected: bool,
    min_confidence: Option<f64>,
    lang: Option<String>,
    limit: Option<usize>,
    /// `compare`: comma-separated satellite ids.
    satellite_ids: Option<String>,
}

impl StatsQuery {
    fn filters(&self) -> Filters {
        Filters {
            satellite: self.satellite_id,
            days: self.days,
            from: self.from,
            to: self.to,
            include_rejected: self.include_rejected,
            min_confidence: self.min_confidence,
            lang: self.lang.clone(),
        }
    }
}

fn ctx<'a>(state: &'a AppState, access: &TenantAccess) -> Ctx<'a> {
    Ctx { store: &state.store, labels: &state.names, tenant: access.tenant_id, now: state.clock.now() }
}

type Answer<T> = Result<axum::Json<T>, ApiError>;

async fn dashboard(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<overview::Dashboard> {
    Ok(axum::Json(overview::dashboard(&ctx(&s, &a), &q.filters()).await?))
}

async fn trends(State(s): State<AppState>, Viewer(a): Viewer, Query(q): Query<StatsQuery>) -> Answer<overview::Trends> {
    Ok(axum::Json(overview::trends(&ctx(&s, &a), &q.filters()).await?))
}

async fn top_species(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<overview::TopSpecies> {
    Ok(axum::Json(overview::top_species(&ctx(&s, &a), &q.filters(), q.limit).await?))
}

async fn activity(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<overview::Activity> {
    Ok(axum::Json(overview::activity(&ctx(&s, &a), &q.filters()).await?))
}

async fn verification(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<overview::Verification> {
    Ok(axum::Json(overview::verification(&ctx(&s, &a), &q.filters()).await?))
}

async fn leaderboard(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<overview::Leaderboard> {
    Ok(axum::Json(overview::leaderboard(&ctx(&s, &a), &q.filters(), q.limit).await?))
}

async fn catalogue(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<overview::Catalogue> {
    Ok(axum::Json(overview::catalogue(&ctx(&s, &a), &q.filters()).await?))
}

async fn species_profile(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Path(code): Path<String>,
    Query(q): Query<StatsQuery>,
) -> Answer<profile::Profile> {
    Ok(axum::Json(profile::profile(&ctx(&s, &a), &q.filters(), &code).await?))
}

async fn species_accuracy(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<overview::SpeciesAccuracy> {
    Ok(axum::Json(overview::species_accuracy(&ctx(&s, &a), &q.filters()).await?))
}

async fn compare(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<places::Comparison> {
    let raw = q.satellite_ids.as_deref().unwrap_or_default();
    let ids = raw
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| p.trim().parse::<SatelliteId>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| ApiError::BadRequest("invalid_query", format!("satelliteIds holds a malformed id: {raw:?}")))?;
    Ok(axum::Json(places::compare(&ctx(&s, &a), &q.filters(), &ids).await?))
}

async fn migration(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<places::Migration> {
    Ok(axum::Json(places::migration(&ctx(&s, &a), &q.filters()).await?))
}

async fn biodiversity(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<places::Biodiversity> {
    Ok(axum::Json(places::biodiversity(&ctx(&s, &a), &q.filters()).await?))
}

async fn heatmap(State(s): State<AppState>, Viewer(a): Viewer, Query(q): Query<StatsQuery>) -> Answer<places::Heatmap> {
    Ok(axum::Json(places::heatmap(&ctx(&s, &a), &q.filters()).await?))
}

async fn satellite_activity(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<places::SatelliteActivity> {
    Ok(axum::Json(places::satellite_activity(&ctx(&s, &a), &q.filters()).await?))
}

async fn map(State(s): State<AppState>, Viewer(a): Viewer, Query(q): Query<StatsQuery>) -> Answer<places::Map> {
    Ok(axum::Json(places::map(&ctx(&s, &a), &q.filters()).await?))
}

async fn map_detections(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<places::MapDetections> {
    Ok(axum::Json(places::map_detections(&ctx(&s, &a), &q.filters(), q.limit).await?))
}
