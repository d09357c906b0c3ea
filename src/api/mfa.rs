//! Two-factor sign-in, the account's side (SPEC 4.1 MFA rows): enrol the authenticator app, backup
//! codes, passkeys, remembered devices, turning it off, and a platform admin's reset.
//! The sign-in completions are in `mfa_login.rs`.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{extract::State, http::StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};
use webauthn_rs::prelude::{RegisterPublicKeyCredential, Webauthn};

use super::{ApiError, Json, Path};
use crate::{
    auth::{Audit, AuthContext, Authenticated, ClientIp, PlatformAdmin},
    ids::UserId,
    state::AppState,
    store::{self, users::User},
    usecases::{
        mfa::{self, Factors, MfaError},
        passkeys,
    },
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(totp_begin))
        .routes(routes!(totp_confirm))
        .routes(routes!(totp_cancel))
        .routes(routes!(disable))
        .routes(routes!(regenerate))
        .routes(routes!(passkey_begin))
        .routes(routes!(passkey_finish))
        .routes(routes!(passkey_list))
        .routes(routes!(passkey_delete))
        .routes(routes!(device_list))
        .routes(routes!(device_forget))
        .routes(routes!(admin_reset))
}

/// The handles second factors use.
pub fn factors(state: &AppState) -> Factors<'_> {
    Factors {
        store: &state.store,
        cache: &state.cache,
        clock: &state.clock,
        secrets: &state.secrets,
        passwords: &state.passwords,
    }
}

/// The relying party for passkeys, or why this hub cannot offer them at its address.
pub fn relying_party(state: &AppState) -> Result<Webauthn, MfaError> {
    crate::auth::passkeys::relying_party(&state.links().http_base)
        .map_err(|e| MfaError::PasskeysUnavailable(e.to_string()))
}

async fn me(state: &AppState, ctx: &AuthContext) -> Result<User, ApiError> {
    let id = ctx.require_user()?;
    Ok(state.store.call(move |c| store::users::get(c, id)).await?)
}

#[utoipa::path(
    post, path = "/auth/mfa/totp/begin", tag = tags::AUTH,
    description = "Signed in. Starts TOTP enrolment: `{qrDataUrl, manualKey}`.",
    responses((status = 200, description = "`{qrDataUrl, manualKey}`", body = Object), err::Unauthorized, err::Forbidden, err::Conflict)
)]
async fn totp_begin(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
) -> Result<axum::Json<Value>, ApiError> {
    let user = me(&state, &ctx).await?;
    let setup = mfa::begin_totp(factors(&state), &user).await?;
    Ok(axum::Json(json!(setup)))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct CodeBody {
    code: String,
}

#[utoipa::path(
    post, path = "/auth/mfa/totp/confirm", tag = tags::AUTH,
    description = "Signed in. Confirms enrolment with a code: `{backupCodes}`, shown once.",
    responses((status = 200, description = "`{backupCodes}`", body = Object), err::BadRequest, err::Unauthorized, err::Forbidden, err::Unprocessable)
)]
async fn totp_confirm(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Json(body): Json<CodeBody>,
) -> Result<axum::Json<Value>, ApiError> {
    let user = me(&state, &ctx).await?;
    let codes = mfa::confirm_totp(factors(&state), &user, &body.code).await?;
    Audit::new("user.mfa_enabled").actor(&ctx).target("user", user.id).ip(&ip).write(&state).await;
    Ok(axum::Json(json!({ "backupCodes": codes })))
}

#[utoipa::path(
    post, path = "/auth/mfa/totp/cancel", tag = tags::AUTH,
    description = "Signed in. Abandons a started enrolment.",
    responses((status = 204, description = "cancelled"), err::Unauthorized, err::Forbidden)
)]
async fn totp_cancel(State(state): State<AppState>, Authenticated(ctx): Authenticated) -> Result<StatusCode, ApiError> {
    mfa::cancel_totp(factors(&state), ctx.require_user()?).await;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct PasswordBody {
    password: String,
}

#[utoipa::path(
    post, path = "/auth/mfa/disable", tag = tags::AUTH,
    description = "Signed in. Turns MFA off (password required); forbidden for platform admins.",
    responses((status = 204, description = "disabled"), err::BadRequest, err::Unauthorized, err::Forbidden)
)]
async fn disable(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Json(body): Json<PasswordBody>,
) -> Result<StatusCode, ApiError> {
    let user = me(&state, &ctx).await?;
    mfa::disable(factors(&state), &user, body.password).await?;
    Audit::new("user.mfa_disabled").actor(&ctx).target("user", user.id).ip(&ip).write(&state).await;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    post, path = "/auth/mfa/backup-codes/regenerate", tag = tags::AUTH,
    description = "Signed in. New backup codes `{backupCodes}` (password required); the old set stops working.",
    responses((status = 200, description = "`{backupCodes}`", body = Object), err::BadRequest, err::Unauthorized, err::Forbidden)
)]
async fn regenerate(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Json(body): Json<PasswordBody>,
) -> Result<axum::Json<Value>, ApiError> {
    let user = me(&state, &ctx).await?;
    let codes = mfa::regenerate_backup_codes(factors(&state), &user, body.password).await?;
    Audit::new("user.mfa_backup_codes_regenerated").actor(&ctx).target("user", user.id).ip(&ip).write(&state).await;
    Ok(axum::Json(json!({ "backupCodes": codes })))
}

#[utoipa::path(
    post, path = "/auth/mfa/passkeys/register/begin", tag = tags::AUTH,
    description = "Signed in. WebAuthn creation options for a new passkey.",
    responses((status = 200, description = "WebAuthn creation options", body = Object), err::Unauthorized, err::Forbidden, err::Unavailable)
)]
async fn passkey_begin(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
) -> Result<axum::Json<Value>, ApiError> {
    let user = me(&state, &ctx).await?;
    let rp = relying_party(&state)?;
    let options = passkeys::passkey_register_begin(factors(&state), &rp, &user).await?;
    Ok(axum::Json(json!(options)))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct PasskeyBody {
    response: Value,
    name: Option<String>,
}

#[utoipa::path(
    post, path = "/auth/mfa/passkeys/register/finish", tag = tags::AUTH,
    description = "Signed in. Stores the passkey from the authenticator `response` (and an optional `name`).",
    responses((status = 201, description = "the passkey", body = Object), err::BadRequest, err::Unauthorized, err::Forbidden, err::Unprocessable)
)]
async fn passkey_finish(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Json(body): Json<PasskeyBody>,
) -> Result<(StatusCode, axum::Json<Value>), ApiError> {
    let user = me(&state, &ctx).await?;
    let response: RegisterPublicKeyCredential = serde_json::from_value(body.response).map_err(|e| {
        ApiError::Unprocessable("invalid_passkey_response", format!("response is not a WebAuthn registration: {e}"))
    })?;
    let rp = relying_party(&state)?;
    let key = passkeys::passkey_register_finish(factors(&state), &rp, &user, &response, body.name).await?;
    Audit::new("user.passkey_added").actor(&ctx).target("passkey", &key.id).ip(&ip).write(&state).await;
    Ok((StatusCode::CREATED, axum::Json(json!(key))))
}

#[utoipa::path(
    get, path = "/auth/mfa/passkeys", tag = tags::AUTH,
    description = "Signed in. The caller's passkeys.",
    responses((status = 200, description = "`{passkeys}`", body = Object), err::Unauthorized, err::Forbidden)
)]
async fn passkey_list(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
) -> Result<axum::Json<Value>, ApiError> {
    let keys = passkeys::passkeys(factors(&state), ctx.require_user()?).await?;
    Ok(axum::Json(json!({ "passkeys": keys })))
}

#[utoipa::path(
    delete, path = "/auth/mfa/passkeys/{id}", tag = tags::AUTH,
    description = "Signed in. Deletes one of the caller's passkeys.",
    params(("id" = uuid::Uuid, Path, description = "passkey id")),
    responses((status = 204, description = "deleted"), err::Unauthorized, err::Forbidden, err::NotFound)
)]
async fn passkey_delete(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
    Path(id): Path<uuid::Uuid>,
) -> Result<StatusCode, ApiError> {
    passkeys::delete_passkey(factors(&state), ctx.require_user()?, id.to_string()).await?;
    Audit::new("user.passkey_removed").actor(&ctx).target("passkey", id).ip(&ip).write(&state).await;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    get, path = "/auth/mfa/remembered-devices", tag = tags::AUTH,
    description = "Signed in. Devices that skip the second factor: `{devices: [{id, device, userAgent, ip, createdAt, lastUsedAt, expiresAt}]}`; `device` is the browser and system in words (\"Chrome on Android\").",
    responses((status = 200, description = "`{devices}`", body = Object), err::Unauthorized, err::Forbidden)
)]
async fn device_list(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
) -> Result<axum::Json<Value>, ApiError> {
    let devices = mfa::devices(factors(&state), ctx.require_user()?).await?;
    let views: Vec<Value> = devices
        .iter()
        .map(|d| {
            let mut v = json!(d);
            v["device"] = json!(crate::domain::user_agent::describe(d.user_agent.as_deref()));
            v
        })
        .collect();
    Ok(axum::Json(json!({ "devices": views })))
}

#[utoipa::path(
    delete, path = "/auth/mfa/remembered-devices/{id}", tag = tags::AUTH,
    description = "Signed in. Forgets a remembered device.",
    params(("id" = uuid::Uuid, Path, description = "remembered device id")),
    responses((status = 204, description = "forgotten"), err::Unauthorized, err::Forbidden, err::NotFound)
)]
async fn device_forget(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
    Path(id): Path<uuid::Uuid>,
) -> Result<StatusCode, ApiError> {
    mfa::forget_device(factors(&state), ctx.require_user()?, id.to_string()).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    post, path = "/auth/mfa/admin/users/{id}/reset", tag = tags::AUTH,
    description = "Platform admin. Removes every second factor of a user.",
    params(("id" = uuid::Uuid, Path, description = "user id")),
    responses((status = 204, description = "reset"), err::Auth, err::NotFound)
)]
async fn admin_reset(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    PlatformAdmin(ctx): PlatformAdmin,
    Path(id): Path<UserId>,
) -> Result<StatusCode, ApiError> {
    mfa::admin_reset(factors(&state), id).await?;
    Audit::new("admin.user_mfa_reset").actor(&ctx).target("user", id).ip(&ip).write(&state).await;
    Ok(StatusCode::NO_CONTENT)
}
