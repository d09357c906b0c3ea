//! Species images (SPEC 4.9): `POST /species/images {codes}` and `GET /species/image/proxy?code=`
//! (Viewer+), and the platform admin's `GET /species/image-cache/stats`,
//! `POST /species/image-cache/clear` and `POST /species/image-cache/retry`.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{
    body::Body,
    extract::State,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::Response,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ApiError, Json, Query};
use crate::{
    auth::{Audit, ClientIp, PlatformAdmin, Viewer},
    domain::species_images::header_safe,
    state::AppState,
    usecases::species_images::{self as images, Answer, Picture, Stats},
};

/// Browsers keep a picture a day; `private` because it is served behind a login.
const CACHE_CONTROL: &str = "private, max-age=86400";

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(request))
        .routes(routes!(proxy))
        .routes(routes!(stats))
        .routes(routes!(clear))
        .routes(routes!(retry))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct ImagesBody {
    /// Species codes (`turdus_migratorius`), 1 to 200.
    codes: Vec<String>,
}

#[utoipa::path(
    post, path = "/species/images", tag = tags::SPECIES,
    description = "Viewer+. Image statuses for species; missing images are queued for download.",
    responses((status = 200, description = "the image statuses", body = Object), err::Auth, err::Unprocessable)
)]
async fn request(
    State(state): State<AppState>,
    Viewer(_viewer): Viewer,
    Json(body): Json<ImagesBody>,
) -> Result<axum::Json<Answer>, ApiError> {
    let answer = images::request(&state.store, &state.clock, &state.names, &state.images, body.codes).await?;
    Ok(axum::Json(answer))
}

#[derive(Debug, Deserialize)]
struct ProxyQuery {
    code: String,
}

#[utoipa::path(
    get, path = "/species/image/proxy", tag = tags::SPECIES,
    description = "Viewer+. Serves a species image from the object store.",
    responses((status = 200, description = "the image", content_type = "image/*"), err::BadRequest, err::Auth, err::NotFound)
)]
async fn proxy(
    State(state): State<AppState>,
    Viewer(_viewer): Viewer,
    Query(q): Query<ProxyQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let picture = images::picture(&state.store, &state.names, &q.code).await?;
    send_picture(&state, &picture, &headers, CACHE_CONTROL).await
}

/// The picture's bytes with its credits, or 304 when the client's copy is current.
pub(super) async fn send_picture(
    state: &AppState,
    picture: &Picture,
    headers: &HeaderMap,
    cache_control: &'static str,
) -> Result<Response, ApiError> {
    let etag = format!("\"{}\"", picture.sha256.get(..32).unwrap_or(&picture.sha256));
    let fresh = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()).is_some_and(|v| matches(v, &etag));
    let (status, body) = if fresh {
        (StatusCode::NOT_MODIFIED, Body::empty())
    } else {
        (StatusCode::OK, Body::from(images::picture_bytes(&state.objects, picture).await?))
    };
    let mut resp = Response::builder().status(status).body(body).map_err(ApiError::internal)?;
    let h = resp.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache_control));
    h.insert(header::ETAG, value(&etag));
    credit_headers(h, picture);
    if !fresh {
        h.insert(header::CONTENT_TYPE, value(&picture.content_type));
        h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    }
    Ok(resp)
}

/// Whether an `If-None-Match` list names `etag` (weak forms and `*` included).
fn matches(if_none_match: &str, etag: &str) -> bool {
    if_none_match.split(',').map(str::trim).any(|t| t == "*" || t.trim_start_matches("W/") == etag)
}

fn credit_headers(h: &mut HeaderMap, p: &Picture) {
    for (name, text) in [("x-attribution", &p.attribution), ("x-license", &p.license)] {
        if !text.is_empty() {
            h.insert(name, value(&header_safe(text)));
        }
    }
}

/// A header value from text that is already header-safe (hashes, MIME types, [`header_safe`]).
fn value(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[utoipa::path(
    get, path = "/species/image-cache/stats", tag = tags::SPECIES,
    description = "Platform admin. Counts of the image cache.",
    responses((status = 200, description = "the cache counts", body = Object), err::Auth)
)]
async fn stats(
    State(state): State<AppState>,
    PlatformAdmin(_admin): PlatformAdmin,
) -> Result<axum::Json<Stats>, ApiError> {
    Ok(axum::Json(images::stats(&state.store, &state.images).await?))
}

#[utoipa::path(
    post, path = "/species/image-cache/clear", tag = tags::SPECIES,
    description = "Platform admin. Clears the whole image cache.",
    responses((status = 200, description = "what was removed", body = Object), err::Auth)
)]
async fn clear(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
) -> Result<axum::Json<Value>, ApiError> {
    let cleared = images::clear(&state.store, &state.objects).await?;
    let details = json!({ "removed": cleared.removed, "filesDeleted": cleared.files_deleted });
    Audit::new("admin.image_cache_cleared").actor(&ctx).ip(&ip).details(details).write(&state).await;
    Ok(axum::Json(json!({ "removed": cleared.removed, "filesDeleted": cleared.files_deleted })))
}

#[utoipa::path(
    post, path = "/species/image-cache/retry", tag = tags::SPECIES,
    description = "Platform admin. Re-queues failed downloads.",
    responses((status = 200, description = "how many were re-queued", body = Object), err::Auth)
)]
async fn retry(
    State(state): State<AppState>,
    PlatformAdmin(_admin): PlatformAdmin,
) -> Result<axum::Json<Value>, ApiError> {
    let requeued = images::retry(&state.store, &state.clock, &state.images).await?;
    Ok(axum::Json(json!({ "requeued": requeued, "enabled": state.images.enabled() })))
}

#[cfg(test)]
mod tests {
    #[test]
    fn if_none_match_lists_weak_tags_and_star() {
        let tag = "\"abc\"";
        assert!(super::matches("\"abc\"", tag));
        assert!(super::matches("\"x\", W/\"abc\"", tag));
        assert!(super::matches("*", tag));
        assert!(!super::matches("\"abcd\"", tag));
        assert!(!super::matches("", tag));
    }
}
