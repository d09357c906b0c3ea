//! Public account flows of SPEC 4.1: register, login, logout, forgot and reset password.
//! (The second step of a login is in `mfa_login.rs`.)
//!
//! Every route here is public, so each one bounds its input at the edge (a 16 KiB body; emails,
//! passwords and tokens by length, 400 `input_too_long`), takes its budget before it writes or
//! hashes anything (`usecases::sign_in`), and hashes only through the hub's bounded pool
//! (`state.passwords`).

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{
    extract::{DefaultBodyLimit, State},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use serde_json::json;

use super::{ApiError, Json, session, views::UserView};
use crate::{
    auth::{
        Audit, Authenticated, ClientIp, Principal, limits, password,
        tokens::{self, Claims, MFA_TOKEN_MINUTES, TokenKind},
    },
    domain::validate::{self, EMAIL_MAX, TOKEN_MAX, within},
    state::AppState,
    store,
    usecases::{
        accounts, mfa,
        sign_in::{self, BudgetError},
    },
};

use super::mfa_login::REMEMBER_COOKIE;

/// The largest body a public account route reads (a passkey answer is a few KiB; the rest less).
pub const PUBLIC_BODY_MAX: usize = 16 * 1024;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(register))
        .routes(routes!(login))
        .routes(routes!(logout))
        .routes(routes!(forgot_password))
        .routes(routes!(reset_password))
        .layer(DefaultBodyLimit::max(PUBLIC_BODY_MAX))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct RegisterBody {
    email: String,
    name: String,
    password: String,
    invite_token: Option<String>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct LoginBody {
    email: String,
    password: String,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct ForgotBody {
    email: String,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct ResetBody {
    token: String,
    password: String,
}

fn invalid(code: &'static str, e: impl ToString) -> ApiError {
    ApiError::Unprocessable(code, e.to_string())
}

/// Hashes through the hub's bounded pool (argon2 is deliberately slow and takes 19 MiB).
async fn hash(state: &AppState, password: String) -> Result<String, ApiError> {
    state.passwords.hash(password).await.map_err(|e| match e {
        password::HashError::TooLong => validate::TooLong { field: "password", max: password::MAX_BYTES }.into(),
        password::HashError::Failed(m) => ApiError::internal(anyhow::anyhow!(m)),
    })
}

/// The password field of a request, refused at the edge when it is longer than any password.
fn bounded_password(raw: &str) -> Result<&str, ApiError> {
    Ok(within("password", raw, password::MAX_BYTES)?)
}

/// `{user, token}` with the session cookie set.
async fn signed_in(
    state: &AppState,
    user: &store::users::User,
    ip: &str,
    headers: &HeaderMap,
    status: StatusCode,
) -> Result<Response, ApiError> {
    let (token, cookie) = session::start(state, user.id, ip, headers).await?;
    let body = json!({ "user": UserView::from(user), "token": token });
    Ok((status, [(header::SET_COOKIE, cookie)], axum::Json(body)).into_response())
}

#[utoipa::path(
    post, path = "/auth/register", tag = tags::AUTH,
    description = "Public (when `allow_self_registration` is on, or with an invite token). Creates the account, signs it in (session cookie) and returns `{user, token}`. The gate is checked before the password is hashed; 429 past 10 registrations an hour from one address; 400 `input_too_long` for an email over 254 bytes, a password over 1024 or a token over 512.",
    responses((status = 201, description = "`{user, token}`; the session cookie is set", body = Object), err::BadRequest, err::Forbidden, err::Conflict, err::Unprocessable, err::TooManyRequests),
    security(())
)]
async fn register(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    Json(body): Json<RegisterBody>,
) -> Result<Response, ApiError> {
    within("email", &body.email, EMAIL_MAX)?;
    bounded_password(&body.password)?;
    let invite = body.invite_token.as_deref().map(|t| within("inviteToken", t, TOKEN_MAX)).transpose()?;
    let email = validate::email(&body.email).map_err(|e| invalid("invalid_email", e))?;
    let name = validate::name(&body.name, "name").map_err(|e| invalid("invalid_name", e))?;
    password::check_strength(&body.password).map_err(|e| invalid("weak_password", e))?;
    let invite_token_hash = invite.filter(|t| !t.is_empty()).map(tokens::sha256_hex);
    // The gate first: a closed hub or a bad invite costs a read, never a hash or a place in the budget.
    accounts::sign_up_gate(&state.store, &state.clock, email.clone(), invite_token_hash.clone()).await?;
    let key = sign_in::budget_key(&ip);
    if !sign_in::take(&state.cache, "register", &key, limits::REGISTER_PER_IP, limits::register_window()).await {
        return Err(BudgetError::RateLimited.into());
    }
    let signup = accounts::SignUp { email, name, password_hash: hash(&state, body.password).await?, invite_token_hash };
    let user = accounts::sign_up(&state.store, &state.clock, signup).await?;
    Audit::new("user.register")
        .actor_user(user.id)
        .tenant(user.default_tenant_id)
        .target("user", user.id)
        .ip(&ip)
        .write(&state)
        .await;
    signed_in(&state, &user, &ip, &headers, StatusCode::CREATED).await
}

#[utoipa::path(
    post, path = "/auth/login", tag = tags::AUTH,
    description = "Public. Password login: `{user, token}` with the session cookie, or `{mfaRequired: true, mfaToken, hasPasskeys}` when a second factor is due (no cookie yet). `enrollmentRequired: true` when a team demands MFA that is not set up. 429 past 20 attempts in 15 minutes from one address (second steps included), 423 after 5 failures in a row; both are counted before the password is checked. 400 `input_too_long` for an email over 254 bytes or a password over 1024.",
    responses((status = 200, description = "signed in, or a second factor is due", body = Object), err::BadRequest, err::Unauthorized, err::Forbidden, err::Locked, err::TooManyRequests, err::Unprocessable),
    security(())
)]
async fn login(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    Json(body): Json<LoginBody>,
) -> Result<Response, ApiError> {
    let email = within("email", &body.email, EMAIL_MAX)?.trim().to_owned();
    bounded_password(&body.password)?;
    let failed = |reason: &str, user: Option<crate::ids::UserId>| {
        let audit = Audit::new("user.login_failed").ip(&ip).details(json!({ "reason": reason, "email": email }));
        match user {
            Some(u) => audit.actor_user(u).target("user", u),
            None => audit,
        }
    };

    let lookup = email.clone();
    let user = state.store.call(move |c| store::users::find_by_email(c, &lookup)).await?;
    let uid = user.as_ref().map(|u| u.id);
    // The attempt takes its place (address budget, account guess) before the password is checked.
    let attempt = match sign_in::reserve_login(&state.store, &state.clock, &ip, &email, uid).await {
        Ok(attempt) => attempt,
        Err(BudgetError::RateLimited) => {
            if over_budget_first_time(&state, &ip).await {
                failed("rate_limited", None).write(&state).await;
            }
            return Err(BudgetError::RateLimited.into());
        }
        Err(BudgetError::Locked) => {
            failed("locked", uid).write(&state).await;
            return Err(locked());
        }
        Err(e) => return Err(e.into()),
    };
    let bad_credentials = || ApiError::Unauthorized("invalid_credentials", "wrong email or password".into());

    let Some(user) = user else {
        state.passwords.verify_decoy(body.password).await;
        failed("invalid_credentials", None).write(&state).await;
        return Err(bad_credentials());
    };
    if !state.passwords.verify(body.password, user.password_hash.clone()).await {
        if attempt.locks_if_wrong() {
            failed("locked", uid).write(&state).await;
            return Err(locked());
        }
        failed("invalid_credentials", uid).write(&state).await;
        return Err(bad_credentials());
    }
    if user.is_blocked {
        sign_in::release(&state.store, attempt).await?;
        failed("blocked", uid).write(&state).await;
        return Err(crate::auth::context::blocked().into());
    }
    let remembered = match (user.mfa_enabled, crate::auth::context::cookie(&headers, REMEMBER_COOKIE)) {
        (true, Some(cookie)) => mfa::is_remembered(super::mfa::factors(&state), user.id, cookie).await?,
        _ => false,
    };
    if user.mfa_enabled && !remembered {
        // The password was right: not a failure, but no sign-in yet either.
        sign_in::release(&state.store, attempt).await?;
        return mfa_challenge(&state, &user).await;
    }
    sign_in::signed_in(&state.store, &state.clock, attempt, user.id, &ip).await?;
    let id = user.id;
    let (user, enrolment_due) = state
        .store
        .call(move |c| {
            let user = store::users::get(c, id)?;
            let due = !user.mfa_enabled && store::mfa::required_by_a_team(c, id)?;
            Ok((user, due))
        })
        .await?;
    Audit::new("user.login")
        .actor_user(user.id)
        .tenant(user.default_tenant_id)
        .ip(&ip)
        .details(json!({ "rememberedDevice": remembered }))
        .write(&state)
        .await;
    let (token, cookie) = session::start(&state, user.id, &ip, &headers).await?;
    let mut body = json!({ "user": UserView::from(&user), "token": token });
    if enrolment_due {
        // A team requires a second factor: until it is set up, only the enrolment routes answer.
        body["enrollmentRequired"] = json!(true);
    }
    Ok((StatusCode::OK, [(header::SET_COOKIE, cookie)], axum::Json(body)).into_response())
}

/// Password accepted, second factor due: no session yet, just a short-lived challenge token
/// (5 minutes, single use, bound to this person).
async fn mfa_challenge(state: &AppState, user: &store::users::User) -> Result<Response, ApiError> {
    let now = state.clock.now();
    let claims = Claims {
        sub: user.id,
        sid: uuid::Uuid::new_v4().to_string(),
        typ: TokenKind::Mfa,
        iat: now.timestamp(),
        exp: now.timestamp() + MFA_TOKEN_MINUTES * 60,
    };
    let token = tokens::sign(state.settings.security.jwt_secret.expose(), &claims).map_err(ApiError::internal)?;
    let id = user.id;
    let has_passkeys = !state.store.call(move |c| store::mfa::passkeys(c, id)).await?.is_empty();
    Ok(axum::Json(json!({ "mfaRequired": true, "mfaToken": token, "hasPasskeys": has_passkeys })).into_response())
}

/// Whether this is the address's first refused login in the window: only that one is audited, so
/// a flood of refused requests cannot grow the audit log.
pub(super) async fn over_budget_first_time(state: &AppState, ip: &str) -> bool {
    let key = format!("audit:login-limited:{}", sign_in::budget_key(ip));
    let window = limits::login_window().to_std().unwrap_or_default();
    state.cache.once_per(&key, state.clock.now(), window).await
}

pub(super) fn locked() -> ApiError {
    ApiError::Locked("too many failed logins: the account is locked for 15 minutes (or until a password reset)".into())
}

#[utoipa::path(
    post, path = "/auth/logout", tag = tags::AUTH,
    description = "Signed in. Ends this session and clears the cookie (the `mfa-remember` cookie stays).",
    responses((status = 204, description = "signed out"), err::Unauthorized)
)]
async fn logout(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Authenticated(ctx): Authenticated,
) -> Result<Response, ApiError> {
    if let Principal::User { session_id, .. } = &ctx.principal {
        crate::usecases::sign_in::end_session(&state.store, &state.clock, session_id.clone()).await?;
        Audit::new("user.logout").actor(&ctx).ip(&ip).write(&state).await;
    }
    Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, session::clear_cookie(&state))]).into_response())
}

#[utoipa::path(
    post, path = "/auth/forgot-password", tag = tags::AUTH,
    description = "Public. Mails a reset link when the address is known; always 204, whether or not it exists. Past 5 requests in 15 minutes from one address nothing is looked up, written or sent. 400 `input_too_long` for an email over 254 bytes.",
    responses((status = 204, description = "accepted"), err::BadRequest, err::Unprocessable),
    security(())
)]
async fn forgot_password(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Json(body): Json<ForgotBody>,
) -> Result<StatusCode, ApiError> {
    let email = within("email", &body.email, EMAIL_MAX)?.trim().to_owned();
    // The budget before anything else: past it, the request is answered alike and writes nothing.
    if !sign_in::reserve_forgot(&state.store, &state.clock, &ip, &email).await? {
        tracing::warn!(%ip, "forgot-password rate limit reached; request dropped");
        return Ok(StatusCode::NO_CONTENT);
    }
    let user = state.store.call(move |c| store::users::find_by_email(c, &email)).await?;
    let Some(user) = user.filter(|u| !u.is_blocked) else {
        return Ok(StatusCode::NO_CONTENT); // same answer whether or not the address exists
    };
    let token = session::issue_reset_token(&state, user.id, &ip).await?;
    let link = format!("{}/reset-password?token={token}", session::base_url(&state));
    let text = format!(
        "Hello {},\n\nSomeone (hopefully you) asked to reset your birdhub password.\n\
         Open this link within 60 minutes to choose a new one:\n\n{link}\n\n\
         If you did not ask, ignore this mail; your password stays as it is.\n",
        user.name
    );
    state
        .mailer
        .send(&state.store, &state.clock, &user.email, "Reset your birdhub password", text, "password_reset")
        .await;
    Audit::new("user.password_reset_requested").actor_user(user.id).target("user", user.id).ip(&ip).write(&state).await;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    post, path = "/auth/reset-password", tag = tags::AUTH,
    description = "Public. Sets a new password with the token from the mail link; ends every session of the account, forgets its remembered devices (the next sign-in asks for the second factor) and spends its other reset links. 429 past 20 attempts in 15 minutes from one address.",
    responses((status = 204, description = "the password is changed"), err::BadRequest, err::Unprocessable, err::TooManyRequests),
    security(())
)]
async fn reset_password(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Json(body): Json<ResetBody>,
) -> Result<StatusCode, ApiError> {
    within("token", &body.token, TOKEN_MAX)?;
    bounded_password(&body.password)?;
    password::check_strength(&body.password).map_err(|e| invalid("weak_password", e))?;
    let key = sign_in::budget_key(&ip);
    if !sign_in::take(&state.cache, "reset", &key, limits::RESETS_PER_IP, limits::reset_window()).await {
        return Err(BudgetError::RateLimited.into());
    }
    match crate::usecases::passwords::reset_password(state.access_ctx(), &body.token, body.password).await {
        Ok((user, ended)) => {
            let details = json!({ "endedSessions": ended.sessions, "forgottenDevices": ended.remembered_devices });
            Audit::new("user.password_reset_completed")
                .actor_user(user)
                .target("user", user)
                .ip(&ip)
                .details(details)
                .write(&state)
                .await;
            Ok(StatusCode::NO_CONTENT)
        }
        Err(e) => {
            if e.user().is_some() || matches!(e, crate::usecases::passwords::ResetError::InvalidToken) {
                let mut a =
                    Audit::new("user.password_reset_failed").ip(&ip).details(json!({ "reason": e.audit_reason() }));
                if let Some(u) = e.user() {
                    a = a.actor_user(u).target("user", u);
                }
                a.write(&state).await;
            }
            Err(e.into())
        }
    }
}
