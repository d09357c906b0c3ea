//! Public account flows of SPEC 4.1: register, login, logout, forgot and reset password.
//! (MFA completions are in their own file when MFA lands; login already answers `mfaRequired`.)

use super::openapi::{err, tags};
use utoipa_axum::{router::OpenApiRouter, routes};

use std::sync::OnceLock;

use axum::{
    extract::State,
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
    domain::validate,
    state::AppState,
    store::{self, login_attempts::Kind},
    usecases::{accounts, mfa},
};

use super::mfa_login::REMEMBER_COOKIE;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(register))
        .routes(routes!(login))
        .routes(routes!(logout))
        .routes(routes!(forgot_password))
        .routes(routes!(reset_password))
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

/// Hashes off the async runtime (argon2 is deliberately slow).
async fn hash(password: String) -> Result<String, ApiError> {
    tokio::task::spawn_blocking(move || password::hash(&password))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)
}

async fn verify(password: String, phc: String) -> Result<bool, ApiError> {
    tokio::task::spawn_blocking(move || password::verify(&password, &phc)).await.map_err(ApiError::internal)
}

/// A hash to verify against when the email is unknown, so the answer takes as long either way.
fn decoy_hash() -> String {
    static DECOY: OnceLock<String> = OnceLock::new();
    DECOY.get_or_init(|| password::hash(&tokens::random_hex(16)).unwrap_or_default()).clone()
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
    description = "Public (when `allow_self_registration` is on, or with an invite token). Creates the account, signs it in (session cookie) and returns `{user, token}`.",
    responses((status = 201, description = "`{user, token}`; the session cookie is set", body = Object), err::Forbidden, err::Conflict, err::Unprocessable),
    security(())
)]
async fn register(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    Json(body): Json<RegisterBody>,
) -> Result<Response, ApiError> {
    let email = validate::email(&body.email).map_err(|e| invalid("invalid_email", e))?;
    let name = validate::name(&body.name, "name").map_err(|e| invalid("invalid_name", e))?;
    password::check_strength(&body.password).map_err(|e| invalid("weak_password", e))?;
    let signup = accounts::SignUp {
        email,
        name,
        password_hash: hash(body.password).await?,
        invite_token_hash: body.invite_token.as_deref().filter(|t| !t.is_empty()).map(tokens::sha256_hex),
    };
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
    description = "Public. Password login: `{user, token}` with the session cookie, or `{mfaRequired: true, mfaToken, hasPasskeys}` when a second factor is due (no cookie yet). `enrollmentRequired: true` when a team demands MFA that is not set up.",
    responses((status = 200, description = "signed in, or a second factor is due", body = Object), err::Unauthorized, err::Forbidden, err::Locked, err::TooManyRequests, err::Unprocessable),
    security(())
)]
async fn login(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    Json(body): Json<LoginBody>,
) -> Result<Response, ApiError> {
    let email = body.email.trim().to_owned();
    let failed = |reason: &str, user: Option<crate::ids::UserId>| {
        let audit = Audit::new("user.login_failed").ip(&ip).details(json!({ "reason": reason, "email": email }));
        match user {
            Some(u) => audit.actor_user(u).target("user", u),
            None => audit,
        }
    };

    if let Err(e) = within_ip_budget(&state, &ip).await {
        failed("rate_limited", None).write(&state).await;
        return Err(e);
    }
    let lookup = email.clone();
    let user = state.store.call(move |c| store::users::find_by_email(c, &lookup)).await?;
    let now = state.clock.stamp();
    let (ip_rec, email_rec, now_rec) = (ip.clone(), email.clone(), now);
    let record = move |ok: bool| {
        let (ip, email, now) = (ip_rec.clone(), email_rec.clone(), now_rec);
        move |c: &mut rusqlite::Connection| store::login_attempts::record(c, Kind::Login, &ip, Some(&email), ok, now)
    };
    let bad_credentials = || ApiError::Unauthorized("invalid_credentials", "wrong email or password".into());

    let Some(user) = user else {
        verify(body.password, decoy_hash()).await?;
        state.store.call(record(false)).await?;
        failed("invalid_credentials", None).write(&state).await;
        return Err(bad_credentials());
    };
    let uid = Some(user.id);
    if user.locked_until.is_some_and(|until| until > state.clock.now()) {
        state.store.call(record(false)).await?;
        failed("locked", uid).write(&state).await;
        return Err(locked());
    }
    if !verify(body.password, user.password_hash.clone()).await? {
        state.store.call(record(false)).await?;
        let (id, until) = (user.id, state.clock.stamp_in(limits::lock_duration()));
        let now_locked = state
            .store
            .call(move |c| store::users::record_failed_login(c, id, limits::FAILURES_BEFORE_LOCK, until))
            .await?;
        if now_locked {
            failed("locked", uid).write(&state).await;
            return Err(locked());
        }
        failed("invalid_credentials", uid).write(&state).await;
        return Err(bad_credentials());
    }
    if user.is_blocked {
        state.store.call(record(false)).await?;
        failed("blocked", uid).write(&state).await;
        return Err(crate::auth::context::blocked().into());
    }
    state.store.call(record(true)).await?;
    let remembered = match (user.mfa_enabled, crate::auth::context::cookie(&headers, REMEMBER_COOKIE)) {
        (true, Some(cookie)) => mfa::is_remembered(super::mfa::factors(&state), user.id, cookie).await?,
        _ => false,
    };
    if user.mfa_enabled && !remembered {
        return mfa_challenge(&state, &user).await;
    }
    let (id, now2, ip2) = (user.id, now, ip.clone());
    let (user, enrolment_due) = state
        .store
        .call(move |c| {
            store::users::record_login(c, id, now2, &ip2)?;
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

/// The address's login attempts (passwords and second factors) in the window: 429 past the limit.
pub(super) async fn within_ip_budget(state: &AppState, ip: &str) -> Result<(), ApiError> {
    let since = state.clock.stamp_in(-limits::login_window());
    let ip_key = ip.to_owned();
    let attempts =
        state.store.call(move |c| store::login_attempts::count_since(c, Kind::Login, &ip_key, since)).await?;
    if attempts >= limits::LOGIN_ATTEMPTS_PER_IP {
        return Err(ApiError::TooManyRequests(
            "too many login attempts from this address; try again in 15 minutes".into(),
        ));
    }
    Ok(())
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
    description = "Public. Mails a reset link when the address is known; always 204, whether or not it exists. Rate-limited per address.",
    responses((status = 204, description = "accepted"), err::Unprocessable),
    security(())
)]
async fn forgot_password(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Json(body): Json<ForgotBody>,
) -> Result<StatusCode, ApiError> {
    let email = body.email.trim().to_owned();
    let since = state.clock.stamp_in(-limits::forgot_window());
    let (ip2, email2, now) = (ip.clone(), email.clone(), state.clock.stamp());
    let (recent, user) = state
        .store
        .call(move |c| {
            let recent = store::login_attempts::count_since(c, Kind::ForgotPassword, &ip2, since)?;
            store::login_attempts::record(c, Kind::ForgotPassword, &ip2, Some(&email2), false, now)?;
            Ok((recent, store::users::find_by_email(c, &email2)?))
        })
        .await?;
    if recent >= limits::FORGOT_PER_IP {
        tracing::warn!(%ip, "forgot-password rate limit reached; request dropped");
        return Ok(StatusCode::NO_CONTENT);
    }
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
    description = "Public. Sets a new password with the token from the mail link; ends every session of the account, forgets its remembered devices (the next sign-in asks for the second factor) and spends its other reset links.",
    responses((status = 204, description = "the password is changed"), err::BadRequest, err::Unprocessable),
    security(())
)]
async fn reset_password(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Json(body): Json<ResetBody>,
) -> Result<StatusCode, ApiError> {
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
