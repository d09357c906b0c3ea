//! Who is calling: the credential resolver (SPEC 5.1) and the auth context it yields.
//!
//! Order: the internal key (`HUB_INTERNAL_API_KEY`), the session cookie, a bearer JWT, a bearer API
//! key. The platform-admin flag and the blocked flag are read from the database on every request.

use axum::http::{HeaderMap, header};

use super::{
    AuthError,
    tokens::{self, SESSION_COOKIE, TokenKind},
};
use crate::{
    domain::Role,
    ids::{SatelliteId, TenantId, UserId},
    state::AppState,
    store,
    time::Timestamp,
};

/// The identity behind a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// The reverse proxy or another trusted internal caller; acts as a platform admin.
    Internal,
    /// A person, signed in with a session (cookie or bearer JWT).
    User { user_id: UserId, session_id: String },
    /// A team API key: acts with its role in its one team.
    ApiKey { key_id: String, tenant_id: TenantId, role: Role },
    /// A satellite's own key (minted at registration): no role in any team. It reaches only the
    /// calls of [`super::satellite_key`] on its own device; every guard refuses it elsewhere.
    Satellite { key_id: String, tenant_id: TenantId, satellite_id: SatelliteId },
}

/// The resolved caller of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthContext {
    pub principal: Principal,
    /// Read from the database for this request, never from the token.
    pub is_platform_admin: bool,
    /// The user's default team, where no `tenantId` is given.
    pub default_tenant: Option<TenantId>,
    /// A team of this person requires a second factor and none is set up: until it is, only the
    /// enrolment routes answer (see `guard`).
    pub mfa_enrollment_due: bool,
}

impl AuthContext {
    pub fn user_id(&self) -> Option<UserId> {
        match &self.principal {
            Principal::User { user_id, .. } => Some(*user_id),
            _ => None,
        }
    }

    pub fn api_key_id(&self) -> Option<&str> {
        match &self.principal {
            Principal::ApiKey { key_id, .. } | Principal::Satellite { key_id, .. } => Some(key_id),
            _ => None,
        }
    }

    /// The device whose own key made the request.
    pub fn satellite_id(&self) -> Option<SatelliteId> {
        match &self.principal {
            Principal::Satellite { satellite_id, .. } => Some(*satellite_id),
            _ => None,
        }
    }

    /// Platform admins and the internal key see every team.
    pub fn sees_all(&self) -> bool {
        self.is_platform_admin || self.principal == Principal::Internal
    }

    /// The signed-in person, or 403 for keys.
    pub fn require_user(&self) -> Result<UserId, AuthError> {
        self.user_id().ok_or(AuthError::UserRequired)
    }
}

/// The token of `Authorization: Bearer`, if any.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let token = value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer "))?;
    Some(token.trim()).filter(|t| !t.is_empty())
}

/// The value of cookie `name`, if sent.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Resolves the caller, or 401 when no credential is valid.
pub async fn resolve(state: &AppState, headers: &HeaderMap) -> Result<AuthContext, AuthError> {
    let bearer = bearer(headers);
    let sec = &state.settings.security;
    if bearer.is_some_and(|b| sec.internal_api_key.matches(b)) {
        return Ok(AuthContext {
            principal: Principal::Internal,
            is_platform_admin: true,
            default_tenant: None,
            mfa_enrollment_due: false,
        });
    }
    let jwt_secret = sec.jwt_secret.expose();
    let now = state.clock.now();
    let session =
        cookie(headers, SESSION_COOKIE).and_then(|t| tokens::verify(jwt_secret, t, TokenKind::Session, now)).or_else(
            || bearer.filter(|b| b.contains('.')).and_then(|t| tokens::verify(jwt_secret, t, TokenKind::Session, now)),
        );
    if let Some(claims) = session {
        let now = state.clock.stamp();
        let (user, active) = state
            .store
            .call(move |c| {
                let active = store::sessions::is_active(c, &claims.sid, claims.sub, now)?;
                let user = store::users::get(c, claims.sub).ok();
                let due = match &user {
                    Some(u) if !u.mfa_enabled => store::mfa::required_by_a_team(c, u.id)?,
                    _ => false,
                };
                Ok((user.map(|u| (u, due)), active.then_some(claims.sid)))
            })
            .await?;
        return match (user, active) {
            (Some((u, due)), Some(sid)) if !u.is_blocked => Ok(AuthContext {
                principal: Principal::User { user_id: u.id, session_id: sid },
                is_platform_admin: u.is_platform_admin,
                default_tenant: u.default_tenant_id,
                mfa_enrollment_due: due,
            }),
            (Some((u, _)), Some(_)) if u.is_blocked => Err(AuthError::UserBlocked),
            _ => Err(AuthError::SessionExpired),
        };
    }
    if let Some(raw) = bearer.filter(|b| !b.contains('.')) {
        let hash = tokens::sha256_hex(raw);
        let now = state.clock.stamp();
        let key = state.store.call(move |c| store::api_keys::find_active(c, &hash, now)).await?;
        if let Some(k) = key {
            mark_used(state, &k.id).await;
            // A satellite's key keeps no role: the `member` stored with it is the SPEC's label.
            let (principal, default_tenant) = match k.satellite_id {
                Some(satellite_id) => {
                    (Principal::Satellite { key_id: k.id, tenant_id: k.tenant_id, satellite_id }, None)
                }
                None => (Principal::ApiKey { key_id: k.id, tenant_id: k.tenant_id, role: k.role }, Some(k.tenant_id)),
            };
            return Ok(AuthContext { principal, is_platform_admin: false, default_tenant, mfa_enrollment_due: false });
        }
    }
    if bearer.is_some() || cookie(headers, SESSION_COOKIE).is_some() {
        return Err(AuthError::InvalidCredentials);
    }
    Err(AuthError::Unauthenticated)
}

/// How often at most a key's `last_used_at` is written: a script polling every second must not
/// turn each read into a write that competes with ingest.
pub const KEY_USE_RESOLUTION: std::time::Duration = std::time::Duration::from_secs(60);

/// Records the key's use, at most once per [`KEY_USE_RESOLUTION`]. A failed write only costs
/// the timestamp, never the request.
async fn mark_used(state: &AppState, key_id: &str) {
    let now = state.clock.now();
    if !state.cache.once_per(&format!("api_key:used:{key_id}"), now, KEY_USE_RESOLUTION).await {
        return;
    }
    let (id, now) = (key_id.to_owned(), Timestamp(now));
    if let Err(e) = state.store.call(move |c| store::api_keys::touch(c, &id, now)).await {
        tracing::warn!(error = %e, "could not record an API key's last use");
    }
}

/// The refusal for a blocked account (also used by the login route).
pub fn blocked() -> AuthError {
    AuthError::UserBlocked
}
