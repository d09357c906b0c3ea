//! A team's public page as JSON (`/public/{tenantId}/...`, no credentials): the same views the
//! dashboard's `/public/<team>` pages show, for a widget on someone's own website. Off unless a
//! team admin sets `public_page_enabled`; every route is limited per client address
//! (`http.public_page_per_minute`). See [`crate::usecases::public_page`] for what is shown.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{
    extract::{Request, State},
    http::HeaderMap,
    response::Response,
};

use super::{ApiError, Path, files::serve_object, species_images::send_picture};
use crate::{
    auth::ClientIp,
    state::AppState,
    usecases::public_page::{self, SpeciesView, Team, Today},
};

/// Public pictures may sit in shared caches for a day.
const PICTURE_CACHE: &str = "public, max-age=86400";

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(today)).routes(routes!(species)).routes(routes!(image)).routes(routes!(audio))
}

/// Counts the request against the client's limit, then opens the team's page.
async fn admit(state: &AppState, ip: &ClientIp, team: &str) -> Result<Team, public_page::PublicError> {
    public_page::visit(state.public_ctx(), &ip.0, team).await
}

#[utoipa::path(
    get, path = "/public/{tenantId}", tag = tags::PUBLIC,
    description = "Public (when the team turned its public page on). Today's species hour by hour, the newest detections and the stations; 404 `public_page_not_found` when the page is off or the team unknown, 429 `rate_limited` past the per-address limit.",
    params(("tenantId" = uuid::Uuid, Path, description = "team id")),
    responses((status = 200, description = "today's view", body = Today), err::NotFound, err::TooManyRequests),
    security(())
)]
async fn today(
    State(state): State<AppState>,
    ip: ClientIp,
    Path(team): Path<String>,
) -> Result<axum::Json<Today>, ApiError> {
    let team = admit(&state, &ip, &team).await?;
    Ok(axum::Json(public_page::today(state.public_ctx(), &team).await?))
}

#[utoipa::path(
    get, path = "/public/{tenantId}/species/{code}", tag = tags::PUBLIC,
    description = "Public (when the page is on). A species the team has heard, over the last 30 days; 404 `species_not_found` for any other.",
    params(("tenantId" = uuid::Uuid, Path, description = "team id"), ("code" = String, Path, description = "species code")),
    responses((status = 200, description = "the species view", body = SpeciesView), err::NotFound, err::TooManyRequests),
    security(())
)]
async fn species(
    State(state): State<AppState>,
    ip: ClientIp,
    Path((team, code)): Path<(String, String)>,
) -> Result<axum::Json<SpeciesView>, ApiError> {
    let team = admit(&state, &ip, &team).await?;
    Ok(axum::Json(public_page::species(state.public_ctx(), &team, &code).await?))
}

#[utoipa::path(
    get, path = "/public/{tenantId}/species/{code}/image", tag = tags::PUBLIC,
    description = "Public (when the page is on). The cached picture of a species the team has heard, with `X-Attribution` and `X-License`.",
    params(("tenantId" = uuid::Uuid, Path, description = "team id"), ("code" = String, Path, description = "species code")),
    responses((status = 200, description = "the image", content_type = "image/*"), (status = 304, description = "the client's copy is current"), err::NotFound, err::TooManyRequests),
    security(())
)]
async fn image(
    State(state): State<AppState>,
    ip: ClientIp,
    Path((team, code)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let team = admit(&state, &ip, &team).await?;
    let picture = public_page::image(state.public_ctx(), &team, &code).await?;
    send_picture(&state, &picture, &headers, PICTURE_CACHE).await
}

#[utoipa::path(
    get, path = "/public/{tenantId}/audio/{detectionId}", tag = tags::PUBLIC,
    description = "Public (when the page is on and `public_page_audio` allows it). The WAV of one of the team's detections; supports `Range`. 403 `audio_not_shared` when the team keeps its recordings private.",
    params(("tenantId" = uuid::Uuid, Path, description = "team id"), ("detectionId" = uuid::Uuid, Path, description = "detection id")),
    responses((status = 200, description = "the WAV", content_type = "audio/wav"), (status = 206, description = "a byte range", content_type = "audio/wav"), err::Forbidden, err::NotFound, err::TooManyRequests),
    security(())
)]
async fn audio(
    State(state): State<AppState>,
    ip: ClientIp,
    Path((team, id)): Path<(String, String)>,
    req: Request,
) -> Result<Response, ApiError> {
    let team = admit(&state, &ip, &team).await?;
    let key = public_page::audio(state.public_ctx(), &team, &id).await?;
    serve_object(&state.objects, &key, super::audio::content_type(&key), req).await
}
