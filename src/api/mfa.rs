//! Two-factor sign-in, the account's side (SPEC 4.1 MFA rows): enrol the authenticator app, backup
//! codes, passkeys, remembered devices, turning it off, and a platform admin's reset.
//! The sign-in completions are in `mfa_login.rs`.

use axum::{
    Router,
    extract::State,
    http::StatusCode,
    routing::{delete, get, post},
};
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

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/auth/mfa/totp/begin", post(totp_begin))
        .route("/auth/mfa/totp/confirm", post(totp_confirm))
        .route("/auth/mfa/totp/cancel", post(totp_cancel))
        .route("/auth/mfa/disable", post(disable))
        .route("/auth/mfa/backup-codes/regenerate", post(regenerate))
        .route("/auth/mfa/passkeys/register/begin", post(passkey_begin))
        .route("/auth/mfa/passkeys/register/finish", post(passkey_finish))
        .route("/auth/mfa/passkeys", get(passkey_list))
        .route("/auth/mfa/passkeys/{id}", delete(passkey_delete))
        .route("/auth/mfa/remembered-devices", get(device_list))
        .route("/auth/mfa/remembered-devices/{id}", delete(device_forget))
        .route("/auth/mfa/admin/users/{id}/reset", post(admin_reset))
}

/// The handles second factors use.
pub fn factors(state: &AppState) -> Factors<'_> {
    Factors { store: &state.store, cache: &state.cache, clock: &state.clock, secrets: &state.secrets }
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

async fn totp_begin(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
) -> Result<axum::Json<Value>, ApiError> {
    let user = me(&state, &ctx).await?;
    let setup = mfa::begin_totp(factors(&state), &user).await?;
    Ok(axum::Json(json!(setup)))
}

#[derive(Debug, Deserialize)]
struct CodeBody {
    code: String,
}

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

async fn totp_cancel(State(state): State<AppState>, Authenticated(ctx): Authenticated) -> Result<StatusCode, ApiError> {
    mfa::cancel_totp(factors(&state), ctx.require_user()?).await;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Deserialize)]
struct PasswordBody {
    password: String,
}

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

async fn passkey_begin(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
) -> Result<axum::Json<Value>, ApiError> {
    let user = me(&state, &ctx).await?;
    let rp = relying_party(&state)?;
    let options = passkeys::passkey_register_begin(factors(&state), &rp, &user).await?;
    Ok(axum::Json(json!(options)))
}

#[derive(Debug, Deserialize)]
struct PasskeyBody {
    response: Value,
    name: Option<String>,
}

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

async fn passkey_list(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
) -> Result<axum::Json<Value>, ApiError> {
    let keys = passkeys::passkeys(factors(&state), ctx.require_user()?).await?;
    Ok(axum::Json(json!({ "passkeys": keys })))
}

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

async fn device_list(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
) -> Result<axum::Json<Value>, ApiError> {
    let devices = mfa::devices(factors(&state), ctx.require_user()?).await?;
    Ok(axum::Json(json!({ "devices": devices })))
}

async fn device_forget(
    State(state): State<AppState>,
    Authenticated(ctx): Authenticated,
    Path(id): Path<uuid::Uuid>,
) -> Result<StatusCode, ApiError> {
    mfa::forget_device(factors(&state), ctx.require_user()?, id.to_string()).await?;
    Ok(StatusCode::NO_CONTENT)
}

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
