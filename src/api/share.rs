//! Share links (SPEC 4.2): `GET /detections/:id/share` makes a link that works without an
//! account for 30 days ([`crate::auth::share`]); the public routes show the detection and stream
//! its audio. A forged, altered or expired token answers 404, like an unknown detection.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{
    extract::{Request, State},
    response::Response,
};
use serde_json::{Value, json};

use super::{ApiError, Path, detections::find, files::serve_object};
use crate::{
    auth::{Viewer, share},
    ids::DetectionId,
    state::AppState,
    store,
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(create)).routes(routes!(shared_detection)).routes(routes!(shared_audio))
}

#[utoipa::path(
    get, path = "/detections/{id}/share", tag = tags::DETECTIONS,
    description = "Viewer+. An HMAC share token and the public links for a detection.",
    params(("id" = uuid::Uuid, Path, description = "detection id")),
    responses((status = 200, description = "`{token, url, audioUrl}`", body = Object), err::Auth, err::NotFound)
)]
async fn create(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path(id): Path<DetectionId>,
) -> Result<axum::Json<Value>, ApiError> {
    find(&state, access.tenant_id, id).await?;
    let expires = state.clock.now() + chrono::Duration::days(share::SHARE_DAYS);
    let token = share::sign(state.settings.security.jwt_secret.expose(), id, expires.timestamp());
    // Retention keeps the audio of a shared detection while its link works.
    let until = crate::time::Timestamp(expires);
    crate::usecases::audio_retention::keep_shared_until(&state.store, id, until).await?;
    let base = super::session::base_url(&state);
    Ok(axum::Json(json!({
        "token": token,
        "expiresAt": crate::time::format(expires),
        "url": format!("{base}/api/share/detection/{id}/{token}"),
        "audioUrl": format!("{base}/api/share/audio/{id}/{token}"),
    })))
}

/// The shared detection, or 404 when the token does not verify.
async fn shared(state: &AppState, id: DetectionId, token: &str) -> Result<store::detections::Stored, ApiError> {
    let gone = || ApiError::NotFound("share_not_found", "this share link is invalid or has expired".into());
    if !share::verify(state.settings.security.jwt_secret.expose(), id, token, state.clock.now().timestamp()) {
        return Err(gone());
    }
    state.store.call(move |c| store::detections::get_any(c, id)).await.map_err(|_| gone())
}

#[utoipa::path(
    get, path = "/share/detection/{id}/{token}", tag = tags::DETECTIONS,
    description = "Public (with a valid share token). The shared detection.",
    params(("id" = uuid::Uuid, Path, description = "detection id"), ("token" = String, Path, description = "share token")),
    responses((status = 200, description = "the shared detection", body = Object), err::NotFound),
    security(())
)]
async fn shared_detection(
    State(state): State<AppState>,
    Path((id, token)): Path<(DetectionId, String)>,
) -> Result<axum::Json<Value>, ApiError> {
    let d = shared(&state, id, &token).await?;
    // What a stranger may see: no team, satellite or storage ids.
    Ok(axum::Json(json!({
        "id": d.id,
        "species_code": d.species_code,
        "common_name": d.common_name,
        "scientific_name": d.scientific_name,
        "confidence": d.confidence,
        "detected_at": d.detected_at,
        "start_ms": d.start_ms,
        "end_ms": d.end_ms,
        "verification_status": d.verification_status,
        "satellite_name": d.satellite_name,
        "audio_url": format!("/api/share/audio/{id}/{token}"),
    })))
}

#[utoipa::path(
    get, path = "/share/audio/{id}/{token}", tag = tags::DETECTIONS,
    description = "Public (with a valid share token). Streams the WAV of a shared detection; supports `Range`.",
    params(("id" = uuid::Uuid, Path, description = "detection id"), ("token" = String, Path, description = "share token")),
    responses((status = 200, description = "the WAV", content_type = "audio/wav"), (status = 206, description = "a byte range", content_type = "audio/wav"), err::NotFound),
    security(())
)]
async fn shared_audio(
    State(state): State<AppState>,
    Path((id, token)): Path<(DetectionId, String)>,
    req: Request,
) -> Result<Response, ApiError> {
    let d = shared(&state, id, &token).await?;
    if let Some(at) = d.audio_expired_at {
        return Err(super::audio::expired(at));
    }
    serve_object(&state.objects, &d.storage_key, "audio/wav", req).await
}
