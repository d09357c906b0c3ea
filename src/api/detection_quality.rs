//! Detection quality (issue 35): thresholds learned from votes.
//!
//! - `GET /detection-quality?lang=` (Viewer+): the team's learning settings and, per species with
//!   settled votes, its votes, precision today, current and suggested thresholds, what the
//!   suggestion would hide and whether it is in place.
//! - `POST /detection-quality/{code}/apply` (Admin+): stores the suggestion as the species'
//!   `species_min_confidence` (the team's settings, as `PUT /settings/tenant` writes them, with
//!   the same audit action `admin.tenant_settings_updated`) and answers the updated row. 404
//!   `species_not_found` for a species without votes in the team, 409 `no_suggestion` when there
//!   is nothing to apply.
//! - `GET /detection-quality/{code}/threshold` (Viewer+): the species' threshold today and where
//!   it comes from (its own, the team's, the hub's).
//! - `POST /detection-quality/{code}/raise` (Admin+) `{threshold}`: a detection page's "raise this
//!   species' threshold" (`?lang=` names the species); 409 `not_a_raise` when the species already needs as much or more, so
//!   the shortcut never lowers a threshold (issue 51).

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::extract::State;
use serde::Deserialize;

use super::{ApiError, Json, Path, Query};
use crate::{
    auth::{Admin, ClientIp, Viewer},
    state::AppState,
    usecases::{
        learned_thresholds::{self as learned, Actor, Overview, Row},
        species_threshold::{self as threshold, Raised, Threshold},
    },
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(overview))
        .routes(routes!(apply))
        .routes(routes!(unconfirmed))
        .routes(routes!(species_threshold))
        .routes(routes!(raise))
}

#[utoipa::path(
    get, path = "/detection-quality/{code}/threshold", tag = tags::DETECTIONS,
    description = "Viewer+. The species' threshold today: its own `species_min_confidence` (set by hand or a learned one applied), else the team's `min_confidence`, else the hub's; `source` says which.",
    params(("code" = String, Path, description = "species code"), QualityQuery),
    responses((status = 200, description = "the threshold", body = Threshold), err::Auth, err::Unprocessable)
)]
async fn species_threshold(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path(code): Path<String>,
    Query(q): Query<QualityQuery>,
) -> Result<axum::Json<Threshold>, ApiError> {
    let ctx = ctx(&state);
    Ok(axum::Json(threshold::current(&ctx, access.tenant_id, code, q.lang.as_deref()).await?))
}

/// What a raise asks for.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct RaiseBody {
    /// The new threshold, 0.01 to 0.99; above the species' current one.
    threshold: f64,
}

#[utoipa::path(
    post, path = "/detection-quality/{code}/raise", tag = tags::DETECTIONS,
    description = "Admin+. Raises the species' threshold (its entry in the team's `species_min_confidence`, audited as `admin.tenant_settings_updated`). Refused with 409 `not_a_raise` when the species already needs this much or more (its own, a learned, the team's or the hub's threshold): a raise never lowers. Answers the threshold before and after.",
    params(("code" = String, Path, description = "species code"), QualityQuery),
    request_body = RaiseBody,
    responses((status = 200, description = "raised", body = Raised), err::BadRequest, err::Auth, err::Conflict, err::Unprocessable)
)]
async fn raise(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Admin(access): Admin,
    Path(code): Path<String>,
    Query(q): Query<QualityQuery>,
    Json(body): Json<RaiseBody>,
) -> Result<axum::Json<Raised>, ApiError> {
    let by = Actor { user: access.ctx.user_id(), api_key: access.ctx.api_key_id().map(str::to_owned), ip: Some(ip) };
    let ctx = ctx(&state);
    let ask = threshold::Raise { code, to: body.threshold, lang: q.lang };
    let raised = threshold::raise(&ctx, &state.clock, &state.bus, access.tenant_id, ask, by).await?;
    Ok(axum::Json(raised))
}

/// The team's unconfirmed detections, as the page and scripts read them.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct Unconfirmed {
    /// Newest first, at most 100.
    #[schema(value_type = Vec<Object>)]
    detections: Vec<crate::store::held::Hidden>,
}

#[utoipa::path(
    get, path = "/detection-quality/unconfirmed", tag = tags::DETECTIONS,
    description = "Viewer+. Detections a second look did not confirm, kept hidden because the team's `second_look_unconfirmed` is `hide` (docs/detection-quality.md), newest first (100 at most). They are in no list, stat, alert or feed; the audio of each is `/api/audio/{audioChunkId}` while audio retention keeps it.",
    responses((status = 200, description = "`{detections}`", body = Unconfirmed), err::Auth)
)]
async fn unconfirmed(
    State(state): State<AppState>,
    Viewer(access): Viewer,
) -> Result<axum::Json<Unconfirmed>, ApiError> {
    let tenant = access.tenant_id;
    let detections = state.store.call(move |c| crate::store::held::hidden(c, tenant, 100)).await?;
    Ok(axum::Json(Unconfirmed { detections }))
}

/// The use case's handles from the hub's state.
pub(super) fn ctx(state: &AppState) -> learned::Ctx<'_> {
    learned::Ctx {
        store: &state.store,
        labels: &state.names,
        hub_threshold: f64::from(state.settings.inference.threshold),
    }
}

#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
struct QualityQuery {
    /// Language of the common names (default: the team's primary language).
    lang: Option<String>,
}

#[utoipa::path(
    get, path = "/detection-quality", tag = tags::DETECTIONS,
    description = "Viewer+. Thresholds learned from votes: the team's learning settings and, per species with confirmed or rejected detections, votes, precision today, the current and suggested threshold, what the suggestion would hide, and whether it is applied.",
    params(QualityQuery),
    responses((status = 200, description = "the learning settings and the species", body = Overview), err::BadRequest, err::Auth, err::Unprocessable)
)]
async fn overview(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Query(q): Query<QualityQuery>,
) -> Result<axum::Json<Overview>, ApiError> {
    Ok(axum::Json(learned::overview(&ctx(&state), access.tenant_id, q.lang.as_deref()).await?))
}

#[utoipa::path(
    post, path = "/detection-quality/{code}/apply", tag = tags::DETECTIONS,
    description = "Admin+. Stores the species' suggested threshold in the team's `species_min_confidence` (audited as `admin.tenant_settings_updated`); answers the updated row.",
    params(("code" = String, Path, description = "species code")),
    responses((status = 200, description = "the species' row after the change", body = Row), err::Auth, err::NotFound, err::Conflict)
)]
async fn apply(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Admin(access): Admin,
    Path(code): Path<String>,
) -> Result<axum::Json<Row>, ApiError> {
    let by = Actor { user: access.ctx.user_id(), api_key: access.ctx.api_key_id().map(str::to_owned), ip: Some(ip) };
    let row = learned::apply(&ctx(&state), &state.clock, &state.bus, access.tenant_id, code, by).await?;
    Ok(axum::Json(row))
}

/// After a vote or annotation settled `detection`: applies its species' learned threshold when the
/// team asked for that. The vote stands whatever happens here; a failure is logged.
pub(super) async fn after_vote(state: &AppState, tenant: crate::ids::TenantId, detection: crate::ids::DetectionId) {
    if let Err(e) = learned::after_vote(&ctx(state), &state.clock, &state.bus, tenant, detection).await {
        tracing::error!(%tenant, error = %e, "could not apply a learned threshold after a vote");
    }
}
