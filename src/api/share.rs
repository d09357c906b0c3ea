//! Share links (SPEC 4.2): `GET /detections/:id/share` (as `POST /detections/:id/shares`,
//! [`super::share_links`]) makes a recorded link that works without an account for 30 days; the
//! public routes show the detection, stream its audio and draw its spectrogram. A forged, altered,
//! expired, revoked or ended link answers 404, like an unknown detection. Every public route takes
//! its place in the client address's budget of public reads first (429 `rate_limited`).
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

use super::{ApiError, Path, files::serve_object};
use crate::{
    auth::{ClientIp, Viewer},
    ids::DetectionId,
    state::AppState,
    store,
    usecases::{
        public_page,
        shared_detection::{self, ShareError},
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
    description = "Viewer+ (a link made with a key is recorded as its maker's, see `POST /detections/{id}/shares`). Kept for clients of before share links had records: the same as `POST /detections/{id}/shares`, answering 200 with the caller's live link or a new one. `pageUrl` is the page for people (names in the sharer's language), `url` the JSON for scripts (a browser asking for HTML is sent to the page), `audioUrl` the audio.",
    params(("id" = uuid::Uuid, Path, description = "detection id")),
    responses((status = 200, description = "`{id, token, createdAt, expiresAt, madeBy, madeByName, url, pageUrl, audioUrl, spectrogramUrl}`", body = Object), err::Auth, err::NotFound, err::Conflict)
)]
async fn create(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path(id): Path<DetectionId>,
) -> Result<axum::Json<serde_json::Value>, ApiError> {
    let made = super::share_links::make_link(&state, &access, id).await?;
    Ok(axum::Json(super::share_links::made_body(&state, access.tenant_id, &made).await?))
}

/// Counts a request against the client address's budget for public reads (the public page's:
/// `http.public_page_per_minute`), before anything is read.
async fn admit(state: &AppState, ip: &ClientIp) -> Result<(), ApiError> {
    if public_page::within_budget(state.public_ctx(), &ip.0).await {
        Ok(())
    } else {
        Err(public_page::PublicError::RateLimited.into())
    }
}

/// The shared detection, or 404 when the token does not verify.
async fn shared(state: &AppState, id: DetectionId, token: &str) -> Result<store::detections::Stored, ApiError> {
    let secret = state.settings.security.jwt_secret.expose();
    shared_detection::open(&state.store, secret, state.clock.stamp(), id, token).await.map_err(not_found)
}

fn not_found(e: ShareError) -> ApiError {
    match e {
        ShareError::NotFound => {
            ApiError::NotFound("share_not_found", "this share link is invalid or has expired".into())
        }
        ShareError::Store(s) => s.into(),
    }
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
    responses((status = 200, description = "the shared detection", body = Object), (status = 303, description = "a browser: to the page"), err::NotFound, err::TooManyRequests),
    security(())
)]
async fn shared_detection(
    State(state): State<AppState>,
    ip: ClientIp,
    Path((id, token)): Path<(DetectionId, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    admit(&state, &ip).await?;
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
        // The station's zone, the clock the time is read on (null until the hub has decided it).
        "time_zone": d.time_zone,
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
    responses((status = 200, description = "the WAV", content_type = "audio/wav"), (status = 206, description = "a byte range", content_type = "audio/wav"), err::NotFound, err::TooManyRequests),
    security(())
)]
async fn shared_audio(
    State(state): State<AppState>,
    ip: ClientIp,
    Path((id, token)): Path<(DetectionId, String)>,
    req: Request,
) -> Result<Response, ApiError> {
    admit(&state, &ip).await?;
    let secret = state.settings.security.jwt_secret.expose();
    let d =
        shared_detection::open_audio(&state.store, secret, state.clock.stamp(), id, &token).await.map_err(not_found)?;
    if let Some(at) = d.audio_expired_at {
        return Err(super::audio::expired(at));
    }
    serve_object(&state.objects, &d.storage_key, super::audio::content_type(&d.storage_key), req).await
}

#[utoipa::path(
    get, path = "/share/spectrogram/{id}/{token}", tag = tags::DETECTIONS,
    description = "Public (with a valid share token). The spectrogram PNG of a shared detection, as `GET /detections/{id}/spectrogram.png` draws it (default band, same `X-Spectrogram-*` headers).",
    params(("id" = uuid::Uuid, Path, description = "detection id"), ("token" = String, Path, description = "share token")),
    responses((status = 200, description = "the spectrogram", content_type = "image/png"), err::NotFound, err::Gone, err::TooManyRequests, err::Unprocessable),
    security(())
)]
async fn shared_spectrogram(
    State(state): State<AppState>,
    ip: ClientIp,
    Path((id, token)): Path<(DetectionId, String)>,
    req: Request,
) -> Result<Response, ApiError> {
    admit(&state, &ip).await?;
    let d = shared(&state, id, &token).await?;
    super::audio::spectrogram_of(&state, d.tenant_id, d.audio_chunk_id, (None, None), req).await
}
