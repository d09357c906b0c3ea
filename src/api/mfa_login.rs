//! The second step of signing in (SPEC 4.1): after the password, `POST /auth/login` answers
//! `{mfaRequired, mfaToken, hasPasskeys}`; one of these four completes it. The `mfaToken` lasts
//! 5 minutes, belongs to one person and works once. Wrong codes count like wrong passwords: 5 in a
//! row lock the account for 15 minutes, and each is audited as `user.login_failed` (`invalid_mfa`).
//! One step takes at most 5 codes. Every guess takes its places (the step's guesses, the address's
//! login budget, the account's guesses) *before* the code is checked, so guesses sent all at once
//! get no more tries than guesses sent one by one.
//! Success sets the session cookie and, with `rememberDevice`, the 30-day `mfa-remember` cookie.

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{
    extract::{DefaultBodyLimit, State},
    http::{HeaderMap, HeaderValue, header},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use serde_json::{Value, json};
use webauthn_rs::prelude::PublicKeyCredential;

use super::{
    ApiError, Json,
    auth::{PUBLIC_BODY_MAX, locked, over_budget_first_time},
    mfa::{factors, relying_party},
    session,
    views::UserView,
};
use crate::{
    auth::{
        Audit, ClientIp, limits,
        tokens::{self, Claims, MFA_TOKEN_MINUTES, TokenKind},
    },
    domain::{
        mfa::{self as rules, REMEMBER_DAYS},
        validate::{TOKEN_MAX, within},
    },
    state::AppState,
    store::{self, users::User},
    usecases::{
        mfa::{self, MfaError},
        passkeys,
        sign_in::{self, Attempt, BudgetError},
    },
};

/// The cookie that lets a remembered browser skip the second factor.
pub const REMEMBER_COOKIE: &str = "mfa-remember";

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(totp))
        .routes(routes!(backup))
        .routes(routes!(passkey_begin))
        .routes(routes!(passkey_finish))
        .layer(DefaultBodyLimit::max(PUBLIC_BODY_MAX))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct CodeBody {
    mfa_token: String,
    code: String,
    #[serde(default)]
    remember_device: bool,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct TokenBody {
    mfa_token: String,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct PasskeyBody {
    mfa_token: String,
    response: Value,
    #[serde(default)]
    remember_device: bool,
}

/// The challenge behind an `mfaToken`, and its person, checked as far as the token goes.
struct Challenge {
    claims: Claims,
    user: User,
}

fn used_key(claims: &Claims) -> String {
    format!("mfa:token-used:{}", claims.sid)
}

/// Checks the token (signature, kind, expiry, not used), the address's attempt budget and the
/// account (not blocked, not locked). Takes no place in a budget: [`reserve_guess`] does that.
async fn challenge(state: &AppState, token: &str, ip: &str) -> Result<Challenge, ApiError> {
    within("mfaToken", token, TOKEN_MAX)?;
    let claims = tokens::verify(state.settings.security.jwt_secret.expose(), token, TokenKind::Mfa, state.clock.now())
        .ok_or_else(|| {
            ApiError::Unauthorized(
                "invalid_mfa_token",
                "the sign-in step has expired or is not valid; log in again".into(),
            )
        })?;
    if state.cache.count(&used_key(&claims)).await > 0 {
        return Err(ApiError::Unauthorized(
            "mfa_token_used",
            "this sign-in step was already completed; log in again".into(),
        ));
    }
    sign_in::within_login_budget(&state.store, &state.clock, ip).await?;
    let id = claims.sub;
    let user = state.store.call(move |c| store::users::get(c, id)).await.map_err(|_| {
        ApiError::Unauthorized("invalid_mfa_token", "the sign-in step has expired or is not valid; log in again".into())
    })?;
    if user.is_blocked {
        return Err(crate::auth::context::blocked().into());
    }
    if user.locked_until.is_some_and(|until| until > state.clock.now()) {
        return Err(locked());
    }
    if !user.mfa_enabled {
        // Turned off (or reset by an admin) since the password step.
        return Err(ApiError::Unauthorized(
            "invalid_mfa_token",
            "two-factor sign-in is no longer on; log in again".into(),
        ));
    }
    Ok(Challenge { claims, user })
}

/// Takes a guess's places before the factor is checked: one of the step's guesses, a place in the
/// address's login budget and one of the account's guesses (429 or 423 when one is spent).
async fn reserve_guess(state: &AppState, c: &Challenge, ip: &str) -> Result<Attempt, ApiError> {
    let window = std::time::Duration::from_secs(MFA_TOKEN_MINUTES as u64 * 60);
    if !sign_in::take(&state.cache, "mfa-guesses", &c.claims.sid, limits::MFA_GUESSES_PER_TOKEN, window).await {
        return Err(ApiError::TooManyRequests("too many codes for this sign-in step; log in again".into()));
    }
    match sign_in::reserve_login(&state.store, &state.clock, ip, &c.user.email, Some(c.user.id)).await {
        Ok(attempt) => Ok(attempt),
        Err(BudgetError::RateLimited) => {
            if over_budget_first_time(state, ip).await {
                let details = json!({ "reason": "rate_limited", "email": c.user.email });
                Audit::new("user.login_failed").actor_user(c.user.id).ip(ip).details(details).write(state).await;
            }
            Err(BudgetError::RateLimited.into())
        }
        Err(e) => Err(e.into()),
    }
}

/// A wrong factor: already counted like a wrong password (its guess was taken), audited, and the
/// lock when it was the last guess. An answer that could not be checked gives its guess back.
async fn refused(state: &AppState, c: &Challenge, ip: &str, method: &str, e: MfaError, attempt: Attempt) -> ApiError {
    let counts = matches!(
        e,
        MfaError::InvalidCode | MfaError::Replayed | MfaError::BackupCodeUsed | MfaError::InvalidPasskey(_)
    );
    if !counts {
        if let Err(store_error) = sign_in::release(&state.store, attempt).await {
            return store_error.into();
        }
        return e.into();
    }
    let id = c.user.id;
    Audit::new("user.login_failed")
        .actor_user(id)
        .target("user", id)
        .ip(ip)
        .details(json!({ "reason": "invalid_mfa", "method": method, "email": c.user.email }))
        .write(state)
        .await;
    if attempt.locks_if_wrong() { locked() } else { e.into() }
}

/// The factor was right: the token is spent, the session starts, the device is remembered if asked.
async fn complete(
    state: &AppState,
    c: Challenge,
    ip: &str,
    headers: &HeaderMap,
    (method, remember): (&str, bool),
    attempt: Attempt,
) -> Result<Response, ApiError> {
    let window = std::time::Duration::from_secs(MFA_TOKEN_MINUTES as u64 * 60);
    if state.cache.incr(&used_key(&c.claims), window).await > 1 {
        sign_in::release(&state.store, attempt).await?;
        return Err(ApiError::Unauthorized(
            "mfa_token_used",
            "this sign-in step was already completed; log in again".into(),
        ));
    }
    let id = c.user.id;
    sign_in::signed_in(&state.store, &state.clock, attempt, id, ip).await?;
    let user = state.store.call(move |conn| store::users::get(conn, id)).await?;
    let mut cookies = Vec::new();
    if remember {
        let agent =
            headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).map(|s| s.chars().take(200).collect());
        let token = mfa::remember_device(factors(state), user.id, agent, ip.to_owned()).await?;
        cookies.push(remember_cookie(state, &token)?);
    }
    let (token, session_cookie) = session::start(state, user.id, ip, headers).await?;
    cookies.push(session_cookie);
    Audit::new("user.login")
        .actor_user(user.id)
        .tenant(user.default_tenant_id)
        .ip(ip)
        .details(json!({ "mfa": method, "rememberDevice": remember }))
        .write(state)
        .await;
    let mut response = axum::Json(json!({ "user": UserView::from(&user), "token": token })).into_response();
    for cookie in cookies {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    Ok(response)
}

/// `mfa-remember=<token>`: HttpOnly, SameSite=Lax, 30 days, Secure when the hub is on https.
pub fn remember_cookie(state: &AppState, token: &str) -> Result<HeaderValue, ApiError> {
    let secure = if state.settings.http.public_url.starts_with("https://") { "; Secure" } else { "" };
    let cookie = format!(
        "{REMEMBER_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
        REMEMBER_DAYS * 86_400
    );
    HeaderValue::from_str(&cookie).map_err(ApiError::internal)
}

/// Which code a completion carries.
#[derive(Clone, Copy)]
enum CodeKind {
    Totp,
    Backup,
}

async fn with_code(
    state: &AppState,
    ip: &str,
    headers: &HeaderMap,
    body: CodeBody,
    kind: CodeKind,
) -> Result<Response, ApiError> {
    let c = challenge(state, &body.mfa_token, ip).await?;
    within("code", &body.code, TOKEN_MAX)?;
    // A code that cannot be one is refused before it takes a guess.
    let shape = match kind {
        CodeKind::Totp => rules::totp_code(&body.code),
        CodeKind::Backup => rules::backup_code(&body.code),
    };
    shape.map_err(MfaError::from)?;
    let attempt = reserve_guess(state, &c, ip).await?;
    let (method, checked) = match kind {
        CodeKind::Totp => ("totp", mfa::verify_totp(factors(state), c.user.id, &body.code).await),
        CodeKind::Backup => ("backup_code", mfa::verify_backup(factors(state), c.user.id, &body.code).await),
    };
    if let Err(e) = checked {
        return Err(refused(state, &c, ip, method, e, attempt).await);
    }
    complete(state, c, ip, headers, (method, body.remember_device), attempt).await
}

#[utoipa::path(
    post, path = "/auth/login/mfa/totp", tag = tags::AUTH,
    description = "Public (with the `mfaToken` of the login). Completes the login with a 6-digit TOTP code: `{user, token}` and the session cookie.",
    responses((status = 200, description = "`{user, token}`; the session cookie is set", body = Object), err::BadRequest, err::Unauthorized, err::Forbidden, err::Locked, err::TooManyRequests),
    security(())
)]
async fn totp(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    Json(body): Json<CodeBody>,
) -> Result<Response, ApiError> {
    with_code(&state, &ip, &headers, body, CodeKind::Totp).await
}

#[utoipa::path(
    post, path = "/auth/login/mfa/backup", tag = tags::AUTH,
    description = "Public (with the `mfaToken` of the login). Completes the login with a single-use backup code.",
    responses((status = 200, description = "`{user, token}`; the session cookie is set", body = Object), err::BadRequest, err::Unauthorized, err::Forbidden, err::Locked, err::TooManyRequests),
    security(())
)]
async fn backup(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    Json(body): Json<CodeBody>,
) -> Result<Response, ApiError> {
    with_code(&state, &ip, &headers, body, CodeKind::Backup).await
}

#[utoipa::path(
    post, path = "/auth/login/mfa/passkey/begin", tag = tags::AUTH,
    description = "Public (with the `mfaToken` of the login). WebAuthn request options.",
    responses((status = 200, description = "WebAuthn request options", body = Object), err::BadRequest, err::Unauthorized, err::Forbidden, err::TooManyRequests, err::Unavailable),
    security(())
)]
async fn passkey_begin(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Json(body): Json<TokenBody>,
) -> Result<axum::Json<Value>, ApiError> {
    let c = challenge(&state, &body.mfa_token, &ip).await?;
    let rp = relying_party(&state)?;
    let options = passkeys::passkey_login_begin(factors(&state), &rp, c.user.id, &c.claims.sid).await?;
    Ok(axum::Json(json!(options)))
}

#[utoipa::path(
    post, path = "/auth/login/mfa/passkey/finish", tag = tags::AUTH,
    description = "Public (with the `mfaToken` of the login). Completes the login with the authenticator response.",
    responses((status = 200, description = "`{user, token}`; the session cookie is set", body = Object), err::BadRequest, err::Unauthorized, err::Forbidden, err::Locked, err::TooManyRequests),
    security(())
)]
async fn passkey_finish(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    Json(body): Json<PasskeyBody>,
) -> Result<Response, ApiError> {
    let c = challenge(&state, &body.mfa_token, &ip).await?;
    let response: PublicKeyCredential = serde_json::from_value(body.response).map_err(|e| {
        ApiError::Unprocessable("invalid_passkey_response", format!("response is not a WebAuthn assertion: {e}"))
    })?;
    let rp = relying_party(&state)?;
    let attempt = reserve_guess(&state, &c, &ip).await?;
    if let Err(e) = passkeys::passkey_login_finish(factors(&state), &rp, c.user.id, &c.claims.sid, &response).await {
        return Err(refused(&state, &c, &ip, "passkey", e, attempt).await);
    }
    complete(&state, c, &ip, &headers, ("passkey", body.remember_device), attempt).await
}
