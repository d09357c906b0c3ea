//! Calibration (SPEC 4.10): per (team, model) isotonic curves fitted on confirmed and rejected
//! detections ([`crate::domain::calibration`]: 20 confidence buckets, pool-adjacent-violators).
//!
//! - `POST /calibration/refresh {tenantId?, modelId?}` (Admin+) refits the team's curves; a
//!   platform admin who names no team refits every pair. A pair with fewer than 10 verified
//!   detections gets no curve (and loses an old one), and says so.
//! - `GET /calibration/curve?tenantId=&modelId=` (Viewer+): the buckets, empty when none is fitted.
//!   `modelId` defaults to the hub's classifier.
//! - `GET /calibration/coverage` (Admin+): verified-sample counts per pair; a platform admin who
//!   names no team sees every team.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ApiError, Query};
use crate::{
    auth::{Admin, Authenticated, Viewer, guard},
    domain::{Role, calibration},
    ids::TenantId,
    inference::MODEL_ID,
    state::AppState,
    store,
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(refresh)).routes(routes!(curve)).routes(routes!(coverage))
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RefreshBody {
    tenant_id: Option<TenantId>,
    model_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TeamQuery {
    tenant_id: Option<TenantId>,
}

#[utoipa::path(
    post, path = "/calibration/refresh", tag = tags::CALIBRATION,
    description = "Admin+. Refits the calibration curves; body `{tenantId?, modelId?}` (may be empty); a platform admin may refresh every pair.",
    request_body = Object,
    responses((status = 200, description = "the refreshed pairs", body = Object), err::BadRequest, err::Auth, err::Unprocessable)
)]
async fn refresh(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
    Query(q): Query<TeamQuery>,
    body: axum::body::Bytes,
) -> Result<axum::Json<Value>, ApiError> {
    // The body is optional: empty means "my team" (or every team, for a platform admin).
    let body: RefreshBody =
        if body.iter().all(u8::is_ascii_whitespace) { RefreshBody::default() } else { super::json_body(&body)? };
    let named = body.tenant_id.or(q.tenant_id);
    let scope = if named.is_none() && ctx.sees_all() {
        None
    } else {
        Some(guard::access(&state, &ctx, named, Role::Admin).await?.tenant_id)
    };
    let model = body.model_id.filter(|m| !m.is_empty());
    let refitted =
        crate::usecases::calibration::refresh(&state.store, &state.clock, scope, model, MODEL_ID.into()).await?;
    let results: Vec<Value> = refitted
        .into_iter()
        .map(|r| {
            json!({
                "tenantId": r.tenant, "modelId": r.model_id, "samples": r.samples, "fitted": !r.curve.is_empty(),
                "minSamples": calibration::MIN_SAMPLES, "buckets": r.curve,
            })
        })
        .collect();
    Ok(axum::Json(json!({ "refreshed": results })))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CurveQuery {
    model_id: Option<String>,
}

#[utoipa::path(
    get, path = "/calibration/curve", tag = tags::CALIBRATION,
    description = "Viewer+. The bucket array of a curve (`?tenantId=&modelId=`).",
    responses((status = 200, description = "the curve", body = Object), err::BadRequest, err::Auth, err::NotFound)
)]
async fn curve(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Query(q): Query<CurveQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let tenant = access.tenant_id;
    let model = q.model_id.filter(|m| !m.is_empty()).unwrap_or_else(|| MODEL_ID.into());
    let m = model.clone();
    let (buckets, fitted_at) = state.store.call(move |c| store::calibration::curve(c, tenant, &m)).await?;
    let samples: u64 = buckets.iter().map(|b| u64::from(b.samples)).sum();
    Ok(axum::Json(json!({
        "tenantId": tenant, "modelId": model, "buckets": buckets, "fittedAt": fitted_at, "samples": samples,
    })))
}

#[utoipa::path(
    get, path = "/calibration/coverage", tag = tags::CALIBRATION,
    description = "Admin+. Verified-sample counts per (team, model).",
    responses((status = 200, description = "the coverage", body = Object), err::BadRequest, err::Auth)
)]
async fn coverage(
    State(state): State<AppState>,
    Admin(access): Admin,
    Query(q): Query<TeamQuery>,
) -> Result<axum::Json<Value>, ApiError> {
    let scope = if q.tenant_id.is_none() && access.ctx.sees_all() { None } else { Some(access.tenant_id) };
    let rows = state.store.call(move |c| store::calibration::coverage(c, scope)).await?;
    Ok(axum::Json(json!({ "coverage": rows, "minSamples": calibration::MIN_SAMPLES })))
}
