//! Recording sessions (SPEC 2.12, 4.3). A session is one satellite's run of chunks whose start
//! times are less than 5 minutes apart. Fields (snake_case): `id`, `satellite_id`,
//! `satellite_name`, `started_at` (first chunk's start), `ended_at` (last chunk's end),
//! `duration_ms`, `chunk_count`, `detection_count`, `species_count` and `top_species` (the five
//! most detected species with their counts), the detection summary.
//!
//! `GET /sessions/timeline?from=&to=&satelliteId=`: chunks and detections in `[from, to)`,
//! oldest first; defaults to the last 24 hours; a range is at most 31 days, and at most 5000
//! chunks and 5000 detections come back (`truncated: true` says there were more).

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ApiError, Query, views::Page};
use crate::{
    auth::Viewer,
    domain::sort,
    ids::SatelliteId,
    state::AppState,
    store::{self, recording_sessions::SortBy},
    time::Timestamp,
};

/// The longest range `GET /sessions/timeline` covers.
const MAX_RANGE_DAYS: i64 = 31;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(timeline))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListQuery {
    satellite_id: Option<SatelliteId>,
    filter: Option<String>,
    sort_by: Option<String>,
    sort_dir: Option<String>,
}

#[utoipa::path(
    get, path = "/sessions", tag = tags::SESSIONS,
    description = "Viewer+. Recording sessions (`satelliteId`, `filter`, `sortBy`, `sortDir`, `limit`, `offset`): `{sessions, total}`.",
    responses((status = 200, description = "`{sessions, total}`", body = Object), err::BadRequest, err::Auth)
)]
async fn list(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Query(q): Query<ListQuery>,
    Query(page): Query<Page>,
) -> Result<axum::Json<Value>, ApiError> {
    let page = page.checked()?;
    let with_detections = match q.filter.as_deref() {
        None | Some("") | Some("all") => None,
        Some("with-detections") => Some(true),
        Some("empty") => Some(false),
        Some(other) => {
            return Err(ApiError::BadRequest(
                "invalid_filter",
                format!("filter must be with-detections or empty (or left out), not {other:?}"),
            ));
        }
    };
    let sort = sort::parse::<SortBy>(q.sort_by.as_deref(), q.sort_dir.as_deref())?;
    let filter = store::recording_sessions::Filter {
        satellite_id: q.satellite_id,
        with_detections,
        sort_by: sort.by,
        descending: sort.descending,
        limit: page.limit,
        offset: page.offset,
    };
    let tenant = access.tenant_id;
    let (sessions, total) = state.store.call(move |c| store::recording_sessions::list(c, tenant, &filter)).await?;
    Ok(axum::Json(json!({ "sessions": sessions, "total": total, "limit": page.limit, "offset": page.offset })))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TimelineQuery {
    satellite_id: Option<SatelliteId>,
    from: Option<String>,
    to: Option<String>,
}

fn instant(raw: Option<&str>, name: &str) -> Result<Option<DateTime<Utc>>, ApiError> {
    raw.filter(|s| !s.is_empty())
        .map(|s| {
            DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&Utc)).map_err(|_| {
                ApiError::BadRequest(
                    "invalid_time",
                    format!("{name} must be an ISO 8601 time such as 2026-05-01T05:00:00Z"),
                )
            })
        })
        .transpose()
}

#[utoipa::path(
    get, path = "/sessions/timeline", tag = tags::SESSIONS,
    description = "Viewer+. Chunks and detections for a time range (`satelliteId`, `from`, `to`). Each chunk has `reported_recorded_at` and `clock_corrected`: a chunk whose `recordedAt` was implausible (its satellite's clock was wrong) is filed at a corrected `recorded_at`, the stamp it carried kept in `reported_recorded_at`.",
    responses((status = 200, description = "the timeline", body = Object), err::BadRequest, err::Auth)
)]
async fn timeline(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Query(q): Query<TimelineQuery>,
) -> Result<axum::Json<store::timeline::Timeline>, ApiError> {
    let to = instant(q.to.as_deref(), "to")?.unwrap_or_else(|| state.clock.now());
    let from = instant(q.from.as_deref(), "from")?.unwrap_or(to - chrono::Duration::hours(24));
    if from >= to {
        return Err(ApiError::BadRequest("invalid_range", "from must be before to".into()));
    }
    if to - from > chrono::Duration::days(MAX_RANGE_DAYS) {
        return Err(ApiError::BadRequest("invalid_range", format!("a timeline covers at most {MAX_RANGE_DAYS} days")));
    }
    let (tenant, satellite) = (access.tenant_id, q.satellite_id);
    let (from, to) = (Timestamp(from), Timestamp(to));
    let t = state.store.call(move |c| store::timeline::range(c, tenant, satellite, from, to)).await?;
    Ok(axum::Json(t))
}
