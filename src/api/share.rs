//! Share links (SPEC 4.2): `GET /detections/:id/share` makes a link that works without an
//! account for 30 days ([`crate::auth::share`]); the public routes show the detection, stream its
//! audio and draw its spectrogram. A forged, altered or expired token answers 404, like an unknown
//! detection.
//!
//! People get a page, scripts get JSON: the link the Share button copies is the page
//! (`/share/{id}/{token}`, `pageUrl`), and `GET /api/share/detection/{id}/{token}` answers a
//! browser that asks for HTML (`Accept: text/html` before any JSON type) with a redirect to that
//! page, so a link handed out before the page existed opens as a page too. Every other `Accept`
//! gets the JSON.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{
    extract::{Request, State},
    http::{HeaderMap, header},
    response::{IntoResponse, Redirect, Response},
};
use serde_json::json;

use super::{ApiError, Path, detections::find, files::serve_object};
use crate::{
    auth::{Viewer, share},
    ids::DetectionId,
    state::AppState,
    store,
    usecases::{
        shared_detection::{self, ShareError},
        species,
    },
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create))
        .routes(routes!(shared_detection))
        .routes(routes!(shared_audio))
        .routes(routes!(shared_spectrogram))
}

/// The page of a share link, in the language `lang` (the sharer's) when given.
pub fn page_path(id: DetectionId, token: &str, lang: Option<&str>) -> String {
    match lang {
        Some(l) => format!(
            "/share/{id}/{token}?lang={}",
            url::form_urlencoded::byte_serialize(l.as_bytes()).collect::<String>()
        ),
        None => format!("/share/{id}/{token}"),
    }
}

#[utoipa::path(
    get, path = "/detections/{id}/share", tag = tags::DETECTIONS,
    description = "Viewer+. An HMAC share token and the links for a detection: `pageUrl` is the page for people (names in the sharer's language), `url` the JSON for scripts (a browser asking for HTML is sent to the page), `audioUrl` the WAV.",
    params(("id" = uuid::Uuid, Path, description = "detection id")),
    responses((status = 200, description = "`{token, expiresAt, url, pageUrl, audioUrl, spectrogramUrl}`", body = Object), err::Auth, err::NotFound)
)]
async fn create(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path(id): Path<DetectionId>,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    find(&state, access.tenant_id, id).await?;
    let expires = state.clock.now() + chrono::Duration::days(share::SHARE_DAYS);
    let token = share::sign(state.settings.security.jwt_secret.expose(), id, expires.timestamp());
    // Retention keeps the audio of a shared detection while its link works.
    let until = crate::time::Timestamp(expires);
    crate::usecases::audio_retention::keep_shared_until(&state.store, id, until).await?;
    let langs = species::reading_languages(&state.store, access.tenant_id, access.ctx.user_id()).await?;
    let base = super::session::base_url(&state);
    Ok(axum::Json(json!({
        "token": token,
        "expiresAt": crate::time::format(expires),
        "url": format!("{base}/api/share/detection/{id}/{token}"),
        "pageUrl": format!("{base}{}", page_path(id, &token, langs.first().map(String::as_str))),
        "audioUrl": format!("{base}/api/share/audio/{id}/{token}"),
        "spectrogramUrl": format!("{base}/api/share/spectrogram/{id}/{token}"),
    })))
}

/// The shared detection, or 404 when the token does not verify.
async fn shared(state: &AppState, id: DetectionId, token: &str) -> Result<store::detections::Stored, ApiError> {
    let secret = state.settings.security.jwt_secret.expose();
    shared_detection::open(&state.store, secret, state.clock.now().timestamp(), id, token).await.map_err(|e| match e {
        ShareError::NotFound => {
            ApiError::NotFound("share_not_found", "this share link is invalid or has expired".into())
        }
        ShareError::Store(s) => s.into(),
    })
}

/// Whether the caller is a browser opening a page: `text/html` comes before any JSON type in
/// `Accept` (browsers send `text/html,application/xhtml+xml,...`; scripts send JSON, `*/*` or
/// nothing).
fn wants_page(headers: &HeaderMap) -> bool {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or_default().to_ascii_lowercase();
    match (accept.find("text/html"), accept.find("json")) {
        (Some(html), Some(json)) => html < json,
        (Some(_), None) => true,
        _ => false,
    }
}

#[utoipa::path(
    get, path = "/share/detection/{id}/{token}", tag = tags::DETECTIONS,
    description = "Public (with a valid share token). The shared detection as JSON; a browser asking for HTML (`Accept: text/html` before any JSON type) is redirected (303) to its page `/share/{id}/{token}`.",
    params(("id" = uuid::Uuid, Path, description = "detection id"), ("token" = String, Path, description = "share token")),
    responses((status = 200, description = "the shared detection", body = Object), (status = 303, description = "a browser: to the page"), err::NotFound),
    security(())
)]
async fn shared_detection(
    State(state): State<AppState>,
    Path((id, token)): Path<(DetectionId, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let d = shared(&state, id, &token).await?;
    if wants_page(&headers) {
        return Ok(Redirect::to(&page_path(id, &token, None)).into_response());
    }
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
        "spectrogram_url": format!("/api/share/spectrogram/{id}/{token}"),
        "page_url": page_path(id, &token, None),
    }))
    .into_response())
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
    serve_object(&state.objects, &d.storage_key, super::audio::content_type(&d.storage_key), req).await
}

#[utoipa::path(
    get, path = "/share/spectrogram/{id}/{token}", tag = tags::DETECTIONS,
    description = "Public (with a valid share token). The spectrogram PNG of a shared detection, as `GET /detections/{id}/spectrogram.png` draws it (default band, same `X-Spectrogram-*` headers).",
    params(("id" = uuid::Uuid, Path, description = "detection id"), ("token" = String, Path, description = "share token")),
    responses((status = 200, description = "the spectrogram", content_type = "image/png"), err::NotFound, err::Gone),
    security(())
)]
async fn shared_spectrogram(
    State(state): State<AppState>,
    Path((id, token)): Path<(DetectionId, String)>,
    req: Request,
) -> Result<Response, ApiError> {
    let d = shared(&state, id, &token).await?;
    super::audio::spectrogram_of(&state, d.tenant_id, d.audio_chunk_id, (None, None), req).await
}
