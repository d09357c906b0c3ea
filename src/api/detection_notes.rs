//! What people add to a detection (SPEC 4.2): comments and annotations.
//!
//! Comments: 1 to 2000 characters; members write; the author, or a team admin, deletes.
//! Annotations (SPEC 2.10): `timeStartMs < timeEndMs` within the chunk, `freqLowHz < freqHighHz`
//! within 0 Hz and the chunk's Nyquist frequency, `notes` up to 2000 characters. Each one also
//! records the author's vote (replacing an earlier one), so the consensus moves.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{extract::State, http::StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ApiError, Json, Path, detections::find, detections::parse_vote};
use crate::{
    auth::{Member, Viewer, audit::Audit, ip::ClientIp},
    domain::Role,
    ids::DetectionId,
    state::AppState,
    store::{self, annotations::NewAnnotation},
    usecases::verification,
};

const MAX_TEXT: usize = 2000;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(comments, add_comment))
        .routes(routes!(delete_comment))
        .routes(routes!(annotations))
        .routes(routes!(annotate))
}

#[utoipa::path(
    get, path = "/detections/{id}/comments", tag = tags::DETECTIONS,
    description = "Viewer+. Comments on a detection: `{comments}`.",
    params(("id" = uuid::Uuid, Path, description = "detection id")),
    responses((status = 200, description = "`{comments}`", body = Object), err::Auth, err::NotFound)
)]
async fn comments(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path(id): Path<DetectionId>,
) -> Result<axum::Json<Value>, ApiError> {
    let tenant = access.tenant_id;
    find(&state, tenant, id).await?;
    let list = state.store.call(move |c| store::comments::list(c, tenant, id)).await?;
    Ok(axum::Json(json!({ "comments": list })))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct CommentBody {
    body: String,
}

#[utoipa::path(
    post, path = "/detections/{id}/comments", tag = tags::DETECTIONS,
    description = "Member+. Adds a comment `{body}`.",
    params(("id" = uuid::Uuid, Path, description = "detection id")),
    responses((status = 201, description = "the comment", body = Object), err::Auth, err::NotFound, err::Unprocessable)
)]
async fn add_comment(
    State(state): State<AppState>,
    Member(access): Member,
    Path(id): Path<DetectionId>,
    Json(b): Json<CommentBody>,
) -> Result<(StatusCode, axum::Json<store::comments::Comment>), ApiError> {
    let user = access.ctx.require_user()?;
    let text = b.body.trim().to_owned();
    if text.is_empty() || text.chars().count() > MAX_TEXT {
        return Err(ApiError::Unprocessable("invalid_comment", format!("body must be 1 to {MAX_TEXT} characters")));
    }
    let tenant = access.tenant_id;
    find(&state, tenant, id).await?;
    let comment = verification::add_comment(&state.store, &state.clock, tenant, id, user, text).await?;
    Ok((StatusCode::CREATED, axum::Json(comment)))
}

#[utoipa::path(
    delete, path = "/detections/{id}/comments/{comment_id}", tag = tags::DETECTIONS,
    description = "Member+ (own comment; an admin may delete any).",
    params(("id" = uuid::Uuid, Path, description = "detection id"), ("comment_id" = uuid::Uuid, Path, description = "comment id")),
    responses((status = 204, description = "deleted"), err::Auth, err::NotFound)
)]
async fn delete_comment(
    State(state): State<AppState>,
    Member(access): Member,
    Path((id, comment_id)): Path<(DetectionId, uuid::Uuid)>,
) -> Result<StatusCode, ApiError> {
    let by_admin = access.role == Role::Admin;
    let comment = comment_id.to_string();
    verification::delete_comment(&state.store, access.tenant_id, id, comment, access.ctx.user_id(), by_admin).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    get, path = "/detections/{id}/annotations", tag = tags::DETECTIONS,
    description = "Viewer+. Annotations of a detection: `{annotations}`.",
    params(("id" = uuid::Uuid, Path, description = "detection id")),
    responses((status = 200, description = "`{annotations}`", body = Object), err::Auth, err::NotFound)
)]
async fn annotations(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path(id): Path<DetectionId>,
) -> Result<axum::Json<Value>, ApiError> {
    let tenant = access.tenant_id;
    find(&state, tenant, id).await?;
    let list = state.store.call(move |c| store::annotations::list(c, tenant, id)).await?;
    Ok(axum::Json(json!({ "annotations": list })))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AnnotationBody {
    vote: String,
    time_start_ms: i64,
    time_end_ms: i64,
    freq_low_hz: Option<f64>,
    freq_high_hz: Option<f64>,
    notes: Option<String>,
}

fn invalid(message: String) -> ApiError {
    ApiError::Unprocessable("invalid_annotation", message)
}

/// Checks the box against the chunk it is drawn on.
fn checked(b: AnnotationBody, duration_ms: i64, sample_rate: i64) -> Result<NewAnnotation, ApiError> {
    let vote = parse_vote(&b.vote)?;
    if b.time_start_ms < 0 || b.time_start_ms >= b.time_end_ms || b.time_end_ms > duration_ms {
        return Err(invalid(format!(
            "need 0 <= timeStartMs < timeEndMs <= {duration_ms} (the chunk's length in ms), got {}..{}",
            b.time_start_ms, b.time_end_ms
        )));
    }
    let nyquist = sample_rate as f64 / 2.0;
    for f in [b.freq_low_hz, b.freq_high_hz].into_iter().flatten() {
        if !f.is_finite() || !(0.0..=nyquist).contains(&f) {
            return Err(invalid(format!(
                "frequencies must be within 0 and {nyquist} Hz (the chunk's Nyquist), got {f}"
            )));
        }
    }
    if let (Some(lo), Some(hi)) = (b.freq_low_hz, b.freq_high_hz)
        && lo >= hi
    {
        return Err(invalid(format!("need freqLowHz < freqHighHz, got {lo} and {hi}")));
    }
    let notes = b.notes.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
    if notes.as_ref().is_some_and(|n| n.chars().count() > MAX_TEXT) {
        return Err(invalid(format!("notes are at most {MAX_TEXT} characters")));
    }
    Ok(NewAnnotation {
        vote,
        time_start_ms: b.time_start_ms,
        time_end_ms: b.time_end_ms,
        freq_low_hz: b.freq_low_hz,
        freq_high_hz: b.freq_high_hz,
        notes,
    })
}

#[utoipa::path(
    post, path = "/detections/{id}/annotate", tag = tags::DETECTIONS,
    description = "Member+. Body per SPEC 2.10; also writes a mirrored vote so consensus applies.",
    params(("id" = uuid::Uuid, Path, description = "detection id")),
    responses((status = 201, description = "the annotation and the tally", body = Object), err::Auth, err::NotFound, err::Unprocessable)
)]
async fn annotate(
    State(state): State<AppState>,
    Member(access): Member,
    ClientIp(ip): ClientIp,
    Path(id): Path<DetectionId>,
    Json(body): Json<AnnotationBody>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    let user = access.ctx.require_user()?;
    let tenant = access.tenant_id;
    let detection = find(&state, tenant, id).await?;
    let chunk = detection.audio_chunk_id;
    let meta = state
        .store
        .call(move |c| store::chunks::meta(c, tenant, chunk))
        .await?
        .ok_or_else(|| ApiError::NotFound("chunk_not_found", "the detection's audio is gone".into()))?;
    let new = checked(body, meta.duration_ms, meta.sample_rate)?;
    let (annotation, status, tally) = verification::annotate(&state.store, &state.clock, tenant, id, user, new).await?;
    Audit::new("detection.annotated")
        .actor(&access.ctx)
        .tenant(tenant)
        .target("detection", id)
        .ip(&ip)
        .details(
            json!({ "annotationId": annotation.id, "vote": annotation.vote, "verificationStatus": status.as_str() }),
        )
        .write(&state)
        .await;
    super::detection_quality::after_vote(&state, tenant, id).await;
    Ok((
        StatusCode::CREATED,
        axum::Json(json!({ "annotation": annotation, "verificationStatus": status.as_str(), "votes": tally })),
    ))
}
