//! Detections (SPEC 4.2): the list with its filters and sorts, the detail, and votes.
//!
//! `GET /detections`: `limit` defaults to 50 and may be 1 to 500; `withCount=false` skips the
//! total (`total: null`). A total that would read too many rows is a lower bound, flagged by
//! `totalIsLowerBound` (see `store::detection_count`). `GET /detections/votes?ids=a,b,c` returns
//! the caller's votes for up to 500 detection ids (ids of other teams are left out).

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ApiError, Json, Path, Query, not_found, views::Page};
use crate::{
    auth::{Member, Viewer, audit::Audit, ip::ClientIp},
    domain::{
        consensus::{STATUSES, Vote},
        sort,
    },
    ids::{DetectionId, SatelliteId, TenantId},
    state::AppState,
    store::{self, detection_list, detections::Stored, votes::Tally},
    usecases::{
        species,
        verification::{self, Verdict},
    },
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(my_votes)).routes(routes!(detail)).routes(routes!(verify))
}

/// The detection `id` of `tenant` with its calibrated confidence, or 404.
pub(super) async fn find(state: &AppState, tenant: TenantId, id: DetectionId) -> Result<Stored, ApiError> {
    state
        .store
        .call(move |c| {
            let mut d = store::detections::get(c, tenant, id)?;
            store::calibration::apply(c, tenant, std::slice::from_mut(&mut d))?;
            Ok(d)
        })
        .await
        .map_err(not_found("detection_not_found", "no such detection in this team"))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListQuery {
    satellite_id: Option<SatelliteId>,
    species: Option<String>,
    species_search: Option<String>,
    min_confidence: Option<f64>,
    verification_status: Option<String>,
    sort_by: Option<String>,
    sort_dir: Option<String>,
    with_count: Option<bool>,
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

impl ListQuery {
    fn into_query(self, page: Page) -> Result<detection_list::Query, ApiError> {
        let sort = sort::parse::<detection_list::SortBy>(self.sort_by.as_deref(), self.sort_dir.as_deref())?;
        if let Some(m) = self.min_confidence
            && !(0.0..=1.0).contains(&m)
        {
            return Err(ApiError::BadRequest("invalid_confidence", "minConfidence must be between 0 and 1".into()));
        }
        let status = non_empty(self.verification_status);
        if let Some(s) = &status
            && !STATUSES.contains(&s.as_str())
        {
            return Err(ApiError::BadRequest(
                "invalid_status",
                format!("verificationStatus must be one of {}, not {s:?}", STATUSES.join(", ")),
            ));
        }
        let search = non_empty(self.species_search);
        if search.as_ref().is_some_and(|s| s.chars().count() > 100) {
            return Err(ApiError::BadRequest("invalid_search", "speciesSearch is at most 100 characters".into()));
        }
        Ok(detection_list::Query {
            satellite_id: self.satellite_id,
            species_code: non_empty(self.species),
            species_search: search,
            named: Vec::new(),
            min_confidence: self.min_confidence,
            verification_status: status,
            sort_by: sort.by,
            descending: sort.descending,
            limit: page.limit,
            offset: page.offset,
            with_count: self.with_count.unwrap_or(true),
        })
    }
}

#[utoipa::path(
    get, path = "/detections", tag = tags::DETECTIONS,
    description = "Viewer+. The team's detections, filtered (`satelliteId`, `species` (a code such as `parus_major`), `speciesSearch` (part of a common name in the caller's or the team's languages, a scientific name or a code), `minConfidence`, `verificationStatus`, dates), sorted (`sortBy`, `sortDir`) and paginated (`limit`, `offset`): `{detections, total, totalIsLowerBound, limit, offset}` (`total` is null when `withCount=false`). `total` is exact when the team's kept counts give it (no `minConfidence`, or one on a 0.05 step such as 0.9, with any satellite, species and status filter) or when at most 10,000 rows match a species filter. A `minConfidence` between two steps counts the rows of its partial step through a confidence index, at most 10,000 of them; when that count stops there, `total` is a lower bound and `totalIsLowerBound` is true (show it as \"10,000+\"). `totalIsLowerBound` is false otherwise.",
    responses((status = 200, description = "`{detections, total, totalIsLowerBound, limit, offset}`", body = Object), err::BadRequest, err::Auth)
)]
async fn list(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Query(q): Query<ListQuery>,
    Query(page): Query<Page>,
) -> Result<axum::Json<Value>, ApiError> {
    let mut query = q.into_query(page.checked()?)?;
    let tenant = access.tenant_id;
    if let Some(needle) = query.species_search.clone() {
        // Common names in the reader's and the team's languages, from the model's label files.
        let langs = species::reading_languages(&state.store, tenant, access.ctx.user_id()).await?;
        let names = state.names.clone();
        query.named = tokio::task::spawn_blocking(move || species::codes_named(&names, &needle, &langs))
            .await
            .map_err(ApiError::internal)?;
    }
    let (rows, total) = state.store.call(move |c| detection_list::list(c, tenant, &query)).await?;
    Ok(axum::Json(json!({
        "detections": rows,
        "total": total.map(|t| t.n),
        "totalIsLowerBound": total.is_some_and(|t| t.is_lower_bound),
        "limit": page.limit,
        "offset": page.offset,
    })))
}

/// The detail: the listed fields, the storage key and the vote counts.
#[derive(Debug, Serialize)]
struct Detail {
    #[serde(flatten)]
    detection: Stored,
    votes: Tally,
}

#[utoipa::path(
    get, path = "/detections/{id}", tag = tags::DETECTIONS,
    description = "Viewer+. One detection with its storage key and vote tally.",
    params(("id" = uuid::Uuid, Path, description = "detection id")),
    responses((status = 200, description = "the detection (SPEC 2.9) with `votes`", body = Object), err::Auth, err::NotFound)
)]
async fn detail(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path(id): Path<DetectionId>,
) -> Result<axum::Json<Detail>, ApiError> {
    let detection = find(&state, access.tenant_id, id).await?;
    let votes = state.store.call(move |c| store::votes::tally(c, id)).await?;
    Ok(axum::Json(Detail { detection, votes }))
}

#[derive(Debug, Deserialize)]
struct VotesQuery {
    ids: Option<String>,
}

#[utoipa::path(
    get, path = "/detections/votes", tag = tags::DETECTIONS,
    description = "Viewer+. The caller's votes for `?ids=` (comma-separated detection ids).",
    responses((status = 200, description = "the caller's votes by detection id", body = Object), err::BadRequest, err::Auth)
)]
async fn my_votes(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Query(q): Query<VotesQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let user = access.ctx.require_user()?;
    let raw = q.ids.unwrap_or_default();
    let ids = raw
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<DetectionId>().map_err(|_| ApiError::BadRequest("invalid_id", format!("{s:?} is not a UUID")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if ids.len() > super::views::MAX_LIMIT as usize {
        return Err(ApiError::BadRequest("too_many_ids", format!("at most {} ids", super::views::MAX_LIMIT)));
    }
    let tenant = access.tenant_id;
    let votes = state.store.call(move |c| store::votes::mine(c, tenant, user, &ids)).await?;
    Ok(axum::Json(json!({ "votes": votes })))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct VoteBody {
    vote: String,
}

/// Parses a vote value into a 422 naming the allowed ones.
pub(super) fn parse_vote(raw: &str) -> Result<Vote, ApiError> {
    raw.parse().map_err(|e| ApiError::Unprocessable("invalid_vote", e))
}

#[utoipa::path(
    post, path = "/detections/{id}/verify", tag = tags::DETECTIONS,
    description = "Member+. Casts the caller's verification vote `{vote}`; answers with the new consensus.",
    params(("id" = uuid::Uuid, Path, description = "detection id")),
    responses((status = 200, description = "the tally and status after the vote", body = Object), err::Auth, err::NotFound, err::Unprocessable)
)]
async fn verify(
    State(state): State<AppState>,
    Member(access): Member,
    ClientIp(ip): ClientIp,
    Path(id): Path<DetectionId>,
    Json(body): Json<VoteBody>,
) -> Result<axum::Json<Value>, ApiError> {
    let user = access.ctx.require_user()?;
    let vote = parse_vote(&body.vote)?;
    let tenant = access.tenant_id;
    let Verdict { status, tally } = verification::vote(&state.store, &state.clock, tenant, id, user, vote).await?;
    Audit::new("detection.voted")
        .actor(&access.ctx)
        .tenant(tenant)
        .target("detection", id)
        .ip(&ip)
        .details(json!({ "vote": vote, "verificationStatus": status.as_str() }))
        .write(&state)
        .await;
    super::detection_quality::after_vote(&state, tenant, id).await;
    Ok(axum::Json(json!({
        "detectionId": id, "vote": vote, "verificationStatus": status.as_str(), "votes": tally
    })))
}
