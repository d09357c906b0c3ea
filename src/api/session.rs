//! Starting and ending login sessions: the session row, the JWT and the cookie.

use axum::http::{HeaderMap, HeaderValue, header};
use chrono::Duration;

use super::ApiError;
use crate::{
    auth::tokens::{self, Claims, SESSION_COOKIE, SESSION_DAYS, TokenKind},
    ids::UserId,
    state::AppState,
    time::Timestamp,
    usecases::{passwords, sign_in},
};

/// A new session for `user`: its JWT and the `Set-Cookie` value carrying it.
pub async fn start(
    state: &AppState,
    user: UserId,
    ip: &str,
    headers: &HeaderMap,
) -> Result<(String, HeaderValue), ApiError> {
    let now = state.clock.now();
    let expires = now + Duration::days(SESSION_DAYS);
    let agent =
        headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).map(|s| s.chars().take(200).collect::<String>());
    let sid = sign_in::start_session(&state.store, user, ip.to_owned(), agent, Timestamp(expires)).await?;
    let claims = Claims { sub: user, sid, typ: TokenKind::Session, iat: now.timestamp(), exp: expires.timestamp() };
    let token = tokens::sign(state.settings.security.jwt_secret.expose(), &claims).map_err(ApiError::internal)?;
    let cookie = format!(
        "{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{}",
        SESSION_DAYS * 86_400,
        secure_suffix(state)
    );
    Ok((token, HeaderValue::from_str(&cookie).map_err(ApiError::internal)?))
}

/// The `Set-Cookie` value that removes the session cookie.
pub fn clear_cookie(state: &AppState) -> HeaderValue {
    let cookie = format!("{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{}", secure_suffix(state));
    HeaderValue::from_str(&cookie).unwrap_or_else(|_| HeaderValue::from_static("birdhub_session=; Max-Age=0"))
}

fn secure_suffix(state: &AppState) -> &'static str {
    if state.settings.http.public_url.starts_with("https://") { "; Secure" } else { "" }
}

/// The hub's base URL for links in mail and responses ([`crate::links`]): never the request's
/// `Host`, which a caller chooses.
pub fn base_url(state: &AppState) -> String {
    state.links().http_base.clone()
}

/// A fresh single-use password-reset token for `user` (60 minutes); returns the raw token.
pub async fn issue_reset_token(state: &AppState, user: UserId, ip: &str) -> Result<String, ApiError> {
    Ok(passwords::issue_reset_token(&state.store, &state.clock, user, ip).await?)
}
