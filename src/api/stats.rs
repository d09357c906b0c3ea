//! Statistics (SPEC 4.8), all `GET`, Viewer+, for the caller's team. The filters every route
//! shares (`satelliteId`, `days` or `from`/`to`, `includeRejected`, `minConfidence`, `lang`) are
//! checked by `usecases::stats`; each route's default range is in its use-case function.
//! `expected-species` lives in `stats_expected.rs`.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::extract::State;
use serde::Deserialize;

use super::{ApiError, Path, Query};
use crate::{
    auth::{TenantAccess, Viewer},
    ids::SatelliteId,
    state::AppState,
    usecases::stats::{Filters, overview, overview::Ctx, places, profile},
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(dashboard))
        .routes(routes!(trends))
        .routes(routes!(top_species))
        .routes(routes!(activity))
        .routes(routes!(daily_activity))
        .routes(routes!(verification))
        .routes(routes!(leaderboard))
        .routes(routes!(catalogue))
        .routes(routes!(species_profile))
        .routes(routes!(species_accuracy))
        .routes(routes!(compare))
        .routes(routes!(migration))
        .routes(routes!(biodiversity))
        .routes(routes!(heatmap))
        .routes(routes!(satellite_activity))
        .routes(routes!(map))
        .routes(routes!(map_detections))
        .merge(super::stats_expected::router())
        .merge(super::stats_weather::router())
}

/// Every query parameter a stats route takes (each route uses its share).
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
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

#[utoipa::path(
    get, path = "/stats/dashboard", tag = tags::STATS,
    description = "Viewer+. Species, detection, chunk and satellite counts over the range (default 30 days), today and all time.",
    params(StatsQuery),
    responses((status = 200, description = "the statistics", body = overview::Dashboard), err::BadRequest, err::Auth)
)]
async fn dashboard(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<overview::Dashboard> {
    Ok(axum::Json(overview::dashboard(&ctx(&s, &a), &q.filters()).await?))
}

#[utoipa::path(
    get, path = "/stats/trends", tag = tags::STATS,
    description = "Viewer+. Detections and species per day over the range (default 30 days), every day listed.",
    params(StatsQuery),
    responses((status = 200, description = "the statistics", body = overview::Trends), err::BadRequest, err::Auth)
)]
async fn trends(State(s): State<AppState>, Viewer(a): Viewer, Query(q): Query<StatsQuery>) -> Answer<overview::Trends> {
    Ok(axum::Json(overview::trends(&ctx(&s, &a), &q.filters()).await?))
}

#[utoipa::path(
    get, path = "/stats/top-species", tag = tags::STATS,
    description = "Viewer+. The species ranking over the range (`limit`).",
    params(StatsQuery),
    responses((status = 200, description = "the statistics", body = overview::TopSpecies), err::BadRequest, err::Auth)
)]
async fn top_species(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<overview::TopSpecies> {
    Ok(axum::Json(overview::top_species(&ctx(&s, &a), &q.filters(), q.limit).await?))
}

#[utoipa::path(
    get, path = "/stats/activity", tag = tags::STATS,
    description = "Viewer+. Detections per hour of the day.",
    params(StatsQuery),
    responses((status = 200, description = "the statistics", body = overview::Activity), err::BadRequest, err::Auth)
)]
async fn activity(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<overview::Activity> {
    Ok(axum::Json(overview::activity(&ctx(&s, &a), &q.filters()).await?))
}

#[utoipa::path(
    get, path = "/stats/daily-activity", tag = tags::STATS,
    description = "Viewer+. Species by local hour of day over the range (default today): the daily activity grid, most detected species first, with the largest cell for shading.",
    params(StatsQuery),
    responses((status = 200, description = "the statistics", body = overview::DailyGrid), err::BadRequest, err::Auth)
)]
async fn daily_activity(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<overview::DailyGrid> {
    Ok(axum::Json(overview::daily_grid(&ctx(&s, &a), &q.filters()).await?))
}

#[utoipa::path(
    get, path = "/stats/verification", tag = tags::STATS,
    description = "Viewer+. Verification progress counts.",
    params(StatsQuery),
    responses((status = 200, description = "the statistics", body = overview::Verification), err::BadRequest, err::Auth)
)]
async fn verification(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<overview::Verification> {
    Ok(axum::Json(overview::verification(&ctx(&s, &a), &q.filters()).await?))
}

#[utoipa::path(
    get, path = "/stats/leaderboard", tag = tags::STATS,
    description = "Viewer+. Verification contributors ranked (`limit`).",
    params(StatsQuery),
    responses((status = 200, description = "the statistics", body = overview::Leaderboard), err::BadRequest, err::Auth)
)]
async fn leaderboard(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<overview::Leaderboard> {
    Ok(axum::Json(overview::leaderboard(&ctx(&s, &a), &q.filters(), q.limit).await?))
}

#[utoipa::path(
    get, path = "/stats/species", tag = tags::STATS,
    description = "Viewer+. The species catalogue with per-species stats.",
    params(StatsQuery),
    responses((status = 200, description = "the statistics", body = overview::Catalogue), err::BadRequest, err::Auth)
)]
async fn catalogue(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<overview::Catalogue> {
    Ok(axum::Json(overview::catalogue(&ctx(&s, &a), &q.filters()).await?))
}

#[utoipa::path(
    get, path = "/stats/species/{code}", tag = tags::STATS,
    description = "Viewer+. A species profile: stats, trend, hours, satellites, confidence bands, recent detections.",
    params(("code" = String, Path, description = "species code"), StatsQuery),
    responses((status = 200, description = "the statistics", body = profile::Profile), err::BadRequest, err::Auth, err::NotFound)
)]
async fn species_profile(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Path(code): Path<String>,
    Query(q): Query<StatsQuery>,
) -> Answer<profile::Profile> {
    Ok(axum::Json(profile::profile(&ctx(&s, &a), &q.filters(), &code).await?))
}

#[utoipa::path(
    get, path = "/stats/species-accuracy", tag = tags::STATS,
    description = "Viewer+. Verification accuracy per species.",
    params(StatsQuery),
    responses((status = 200, description = "the statistics", body = overview::SpeciesAccuracy), err::BadRequest, err::Auth)
)]
async fn species_accuracy(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<overview::SpeciesAccuracy> {
    Ok(axum::Json(overview::species_accuracy(&ctx(&s, &a), &q.filters()).await?))
}

#[utoipa::path(
    get, path = "/stats/compare", tag = tags::STATS,
    description = "Viewer+. Satellites side by side (`satelliteIds`, comma-separated): species overlap and Jaccard index.",
    params(StatsQuery),
    responses((status = 200, description = "the statistics", body = places::Comparison), err::BadRequest, err::Auth)
)]
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

#[utoipa::path(
    get, path = "/stats/migration", tag = tags::STATS,
    description = "Viewer+. Monthly species presence.",
    params(StatsQuery),
    responses((status = 200, description = "the statistics", body = places::Migration), err::BadRequest, err::Auth)
)]
async fn migration(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<places::Migration> {
    Ok(axum::Json(places::migration(&ctx(&s, &a), &q.filters()).await?))
}

#[utoipa::path(
    get, path = "/stats/biodiversity", tag = tags::STATS,
    description = "Viewer+. Shannon, Simpson and evenness per satellite.",
    params(StatsQuery),
    responses((status = 200, description = "the statistics", body = places::Biodiversity), err::BadRequest, err::Auth)
)]
async fn biodiversity(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<places::Biodiversity> {
    Ok(axum::Json(places::biodiversity(&ctx(&s, &a), &q.filters()).await?))
}

#[utoipa::path(
    get, path = "/stats/activity-heatmap", tag = tags::STATS,
    description = "Viewer+. Detections by hour and day (optional `satelliteId`).",
    params(StatsQuery),
    responses((status = 200, description = "the statistics", body = places::Heatmap), err::BadRequest, err::Auth)
)]
async fn heatmap(State(s): State<AppState>, Viewer(a): Viewer, Query(q): Query<StatsQuery>) -> Answer<places::Heatmap> {
    Ok(axum::Json(places::heatmap(&ctx(&s, &a), &q.filters()).await?))
}

#[utoipa::path(
    get, path = "/stats/satellite-activity", tag = tags::STATS,
    description = "Viewer+. Peak hours per satellite.",
    params(StatsQuery),
    responses((status = 200, description = "the statistics", body = places::SatelliteActivity), err::BadRequest, err::Auth)
)]
async fn satellite_activity(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<places::SatelliteActivity> {
    Ok(axum::Json(places::satellite_activity(&ctx(&s, &a), &q.filters()).await?))
}

#[utoipa::path(
    get, path = "/stats/map", tag = tags::STATS,
    description = "Viewer+. Satellite positions with detection summaries.",
    params(StatsQuery),
    responses((status = 200, description = "the statistics", body = places::Map), err::BadRequest, err::Auth)
)]
async fn map(State(s): State<AppState>, Viewer(a): Viewer, Query(q): Query<StatsQuery>) -> Answer<places::Map> {
    Ok(axum::Json(places::map(&ctx(&s, &a), &q.filters()).await?))
}

#[utoipa::path(
    get, path = "/stats/map/detections", tag = tags::STATS,
    description = "Viewer+. Per-detection GPS points (`days`, `limit`).",
    params(StatsQuery),
    responses((status = 200, description = "the statistics", body = places::MapDetections), err::BadRequest, err::Auth)
)]
async fn map_detections(
    State(s): State<AppState>,
    Viewer(a): Viewer,
    Query(q): Query<StatsQuery>,
) -> Answer<places::MapDetections> {
    Ok(axum::Json(places::map_detections(&ctx(&s, &a), &q.filters(), q.limit).await?))
}
