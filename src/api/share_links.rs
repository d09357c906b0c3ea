//! Share links with a record (issue 48): `POST /detections/:id/shares` makes (or gives back) the
//! caller's link, `GET /detections/:id/shares` lists the live ones, `DELETE
//! /detections/:id/shares/:share_id` revokes one. `GET /detections/:id/share`, what clients used
//! before, does the same as the `POST` (see [`super::share`]). The rules are in
//! [`crate::usecases::share_links`].

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{extract::State, http::StatusCode};
use serde_json::{Value, json};

use super::{ApiError, Path};
use crate::{
    auth::Viewer,
    domain::Role,
    ids::{DetectionId, TenantId, UserId},
    state::AppState,
    usecases::{
        share_links::{self, LinkView, Made},
        species,
    },
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(make, list)).routes(routes!(revoke))
}

/// The body of a made link: its record, its token and the addresses built from it; the page
/// shows names in the maker's reading language.
pub(super) async fn made_body(state: &AppState, tenant: TenantId, made: &Made) -> Result<Value, ApiError> {
    let id = made.link.detection_id;
    let token = &made.token;
    let langs = species::reading_languages(&state.store, tenant, Some(made.link.made_by)).await?;
    let base = super::session::base_url(state);
    let page = super::share::page_path(id, token, langs.first().map(String::as_str));
    Ok(json!({
        "id": made.link.id,
        "token": token,
        "createdAt": made.link.created_at,
        "expiresAt": made.link.expires_at,
        "madeBy": made.link.made_by,
        "madeByName": made.link.made_by_name,
        "url": format!("{base}/api/share/detection/{id}/{token}"),
        "pageUrl": format!("{base}{page}"),
        "audioUrl": format!("{base}/api/share/audio/{id}/{token}"),
        "spectrogramUrl": format!("{base}/api/share/spectrogram/{id}/{token}"),
    }))
}

/// Makes (or gives back) the caller's link to the team's detection.
pub(super) async fn make_link(
    state: &AppState,
    access: &crate::auth::TenantAccess,
    id: DetectionId,
) -> Result<Made, ApiError> {
    let maker = match access.ctx.user_id() {
        Some(user) => user,
        None => key_maker(state, access).await?,
    };
    let secret = state.settings.security.jwt_secret.expose();
    Ok(share_links::make(&state.store, &state.clock, secret, access.tenant_id, id, maker).await?)
}

/// The person a link made with a key answers for: a team key's maker, else (the internal key, or
/// a key whose maker is gone) the team's owner. A link needs a person: leaving the team ends it.
async fn key_maker(state: &AppState, access: &crate::auth::TenantAccess) -> Result<UserId, ApiError> {
    let (key, tenant) = (access.ctx.api_key_id().map(str::to_owned), access.tenant_id);
    let found = state
        .store
        .call(move |c| {
            let made_by = match &key {
                Some(id) => crate::store::api_keys::maker(c, id)?,
                None => None,
            };
            match made_by {
                Some(user) => Ok(Some(user)),
                None => Ok(crate::store::tenants::get(c, tenant)?.owner_user_id),
            }
        })
        .await?;
    found.ok_or_else(|| crate::auth::AuthError::UserRequired.into())
}

#[utoipa::path(
    post, path = "/detections/{id}/shares", tag = tags::DETECTIONS,
    description = "Viewer+. Makes a share link to the detection, recorded with its maker (a person; a link made with a team API key is its maker's, one made with the internal key the team owner's): 201 with a new link, 200 with the caller's live link when they already have one. At most 20 live links per detection (409 `too_many_share_links`). A link works for 30 days, until revoked, or until its maker leaves the team. The body is `{id, token, createdAt, expiresAt, madeBy, madeByName, url, pageUrl, audioUrl, spectrogramUrl}`.",
    params(("id" = uuid::Uuid, Path, description = "detection id")),
    responses((status = 201, description = "a new link", body = Object), (status = 200, description = "the caller's live link", body = Object), err::Auth, err::NotFound, err::Conflict)
)]
async fn make(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path(id): Path<DetectionId>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    let made = make_link(&state, &access, id).await?;
    let status = if made.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, axum::Json(made_body(&state, access.tenant_id, &made).await?)))
}

#[utoipa::path(
    get, path = "/detections/{id}/shares", tag = tags::DETECTIONS,
    description = "Viewer+. The detection's live share links, newest first: who made each, when, and until when. Tokens are not listed.",
    params(("id" = uuid::Uuid, Path, description = "detection id")),
    responses((status = 200, description = "the live links", body = Vec<LinkView>), err::Auth, err::NotFound)
)]
async fn list(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path(id): Path<DetectionId>,
) -> Result<axum::Json<Vec<LinkView>>, ApiError> {
    Ok(axum::Json(share_links::list(&state.store, &state.clock, access.tenant_id, id).await?))
}

#[utoipa::path(
    delete, path = "/detections/{id}/shares/{share_id}", tag = tags::DETECTIONS,
    description = "Viewer+: the link's maker, or a team admin (403 `not_your_share_link` for others). Revokes the link at once: its page, JSON, audio and spectrogram answer 404 `share_not_found`, and it keeps the audio from retention no longer.",
    params(("id" = uuid::Uuid, Path, description = "detection id"), ("share_id" = String, Path, description = "share link id")),
    responses((status = 204, description = "revoked"), err::Auth, err::NotFound)
)]
async fn revoke(
    State(state): State<AppState>,
    Viewer(access): Viewer,
    Path((id, share_id)): Path<(DetectionId, String)>,
) -> Result<StatusCode, ApiError> {
    let by = (access.ctx.user_id(), access.role == Role::Admin);
    share_links::revoke(&state.store, &state.clock, access.tenant_id, id, share_id, by).await?;
    Ok(StatusCode::NO_CONTENT)
}
