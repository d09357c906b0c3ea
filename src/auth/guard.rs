//! Route guards as extractors, so a handler's signature reads like the SPEC's tables:
//! `Authenticated`, `Viewer`, `Member`, `Admin`, `PlatformAdmin`. The role guards resolve the
//! tenant from `?tenantId=`, the `X-Tenant-Id` header, the API key's team or the user's default
//! team, and check the caller's role in it. A team the caller cannot see answers 404.
//!
//! Routes that also take a `tenantId` in their JSON body use [`RequestedTenant`] with
//! [`choose_tenant`], so every route picks the team by the same rule.
//!
//! Two gates apply to every credential before any route sees it ([`admit`]): a person whose team
//! requires two-factor sign-in and who has not set it up reaches only the enrolment routes, and a
//! satellite's own key reaches only its allow-list ([`super::satellite_key`]). A satellite key
//! also has no role, so [`access`] refuses it whatever a route asks for.

use axum::{
    extract::FromRequestParts,
    http::{HeaderMap, Method, request::Parts},
};

use super::AuthError;
use super::context::{self, AuthContext, Principal};
use super::satellite_key;
use crate::{domain::Role, ids::TenantId, state::AppState, store};

/// Any signed-in identity.
#[derive(Debug, Clone)]
pub struct Authenticated(pub AuthContext);

/// The caller with their role in the request's team.
#[derive(Debug, Clone)]
pub struct TenantAccess {
    pub ctx: AuthContext,
    pub tenant_id: TenantId,
    /// The caller's effective role (platform admins act as admins everywhere).
    pub role: Role,
}

/// A platform admin (or the internal key).
#[derive(Debug, Clone)]
pub struct PlatformAdmin(pub AuthContext);

/// The team named by the query (`?tenantId=`) or the `X-Tenant-Id` header, if any; for routes
/// that check access themselves after reading a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestedTenant(pub Option<TenantId>);

/// The team a body-carrying route acts in: the body's `tenantId` if present, else the one named by
/// query or header (`None` leaves the choice to [`access`]: the API key's team or the user's
/// default team). A body that names another team than the query or header is refused, rather
/// than silently acting in one of the two.
pub fn choose_tenant(body: Option<TenantId>, requested: Option<TenantId>) -> Result<Option<TenantId>, AuthError> {
    match (body, requested) {
        (Some(b), Some(r)) if b != r => Err(AuthError::TenantMismatch),
        (Some(b), _) => Ok(Some(b)),
        (None, r) => Ok(r),
    }
}

/// What a person whose team requires MFA may reach before setting it up.
const ENROLMENT_ROUTES: &[&str] =
    &["/auth/me", "/auth/logout", "/auth/mfa/totp/begin", "/auth/mfa/totp/confirm", "/auth/mfa/totp/cancel"];

/// The gates every credential passes for the call `method path`, whatever the route asks next.
pub fn gate(ctx: &AuthContext, method: &Method, path: &str) -> Result<(), AuthError> {
    if ctx.mfa_enrollment_due && !ENROLMENT_ROUTES.iter().any(|r| path.ends_with(r)) {
        return Err(AuthError::MfaEnrollmentRequired);
    }
    if let Principal::Satellite { satellite_id, .. } = &ctx.principal
        && !satellite_key::allows(method, path, *satellite_id)
    {
        return Err(AuthError::SatelliteKeyNotAllowed);
    }
    Ok(())
}

/// Resolves the caller of `method path` from `headers` and applies [`gate`]: what the guards do,
/// for callers that are not extractors (the WebSocket at its upgrade and at each re-check).
pub async fn admit(
    state: &AppState,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
) -> Result<AuthContext, AuthError> {
    let ctx = context::resolve(state, headers).await?;
    gate(&ctx, method, path)?;
    Ok(ctx)
}

async fn auth_of(parts: &mut Parts, state: &AppState) -> Result<AuthContext, AuthError> {
    if let Some(ctx) = parts.extensions.get::<AuthContext>() {
        return Ok(ctx.clone());
    }
    let ctx = admit(state, &parts.method, parts.uri.path(), &parts.headers).await?;
    parts.extensions.insert(ctx.clone());
    Ok(ctx)
}

/// The tenant named by the request (query `tenantId` or header `X-Tenant-Id`), if any.
fn requested_tenant(parts: &Parts) -> Result<Option<TenantId>, AuthError> {
    let from_query = parts.uri.query().and_then(|q| {
        q.split('&').filter_map(|kv| kv.split_once('=')).find(|(k, _)| *k == "tenantId").map(|(_, v)| v.to_owned())
    });
    let from_header = parts.headers.get("x-tenant-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    match from_query.or(from_header).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(raw) => raw.parse().map(Some).map_err(|_| AuthError::InvalidTenantId(raw)),
    }
}

/// The caller's access to `requested` (or their default team), requiring at least `min`.
pub async fn access(
    state: &AppState,
    ctx: &AuthContext,
    requested: Option<TenantId>,
    min: Role,
) -> Result<TenantAccess, AuthError> {
    let tenant_id = match (&ctx.principal, requested) {
        // A device's own key has no role in its team (SPEC 5.4): no team route answers it.
        (Principal::Satellite { .. }, _) => return Err(AuthError::SatelliteKeyNotAllowed),
        (Principal::ApiKey { tenant_id, .. }, Some(t)) if *tenant_id != t => return Err(AuthError::TenantNotFound),
        (Principal::ApiKey { tenant_id, .. }, _) => *tenant_id,
        (_, Some(t)) => t,
        (_, None) => ctx.default_tenant.ok_or(AuthError::TenantRequired)?,
    };
    let role = match &ctx.principal {
        Principal::ApiKey { role, .. } => Some(*role),
        _ if ctx.sees_all() => {
            let exists = state.store.call(move |c| Ok(store::tenants::get(c, tenant_id).is_ok())).await?;
            exists.then_some(Role::Admin)
        }
        Principal::User { user_id, .. } => {
            let user = *user_id;
            state.store.call(move |c| store::tenants::role_of(c, tenant_id, user)).await?
        }
        Principal::Internal | Principal::Satellite { .. } => None,
    };
    let role = role.ok_or(AuthError::TenantNotFound)?;
    if !role.at_least(min) {
        return Err(AuthError::InsufficientRole { min });
    }
    Ok(TenantAccess { ctx: ctx.clone(), tenant_id, role })
}

impl FromRequestParts<AppState> for Authenticated {
    type Rejection = AuthError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        auth_of(parts, state).await.map(Self)
    }
}

impl FromRequestParts<AppState> for PlatformAdmin {
    type Rejection = AuthError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let ctx = auth_of(parts, state).await?;
        if ctx.sees_all() { Ok(Self(ctx)) } else { Err(AuthError::PlatformAdminRequired) }
    }
}

impl FromRequestParts<AppState> for RequestedTenant {
    type Rejection = AuthError;
    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Self::Rejection> {
        requested_tenant(parts).map(Self)
    }
}

macro_rules! role_guard {
    ($(#[$doc:meta])* $name:ident, $role:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name(pub TenantAccess);

        impl FromRequestParts<AppState> for $name {
            type Rejection = AuthError;
            async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
                let ctx = auth_of(parts, state).await?;
                let requested = requested_tenant(parts)?;
                access(state, &ctx, requested, $role).await.map(Self)
            }
        }
    };
}

role_guard!(
    /// Viewer or higher in the request's team.
    Viewer,
    Role::Viewer
);
role_guard!(
    /// Member or higher in the request's team.
    Member,
    Role::Member
);
role_guard!(
    /// Admin in the request's team (or a platform admin).
    Admin,
    Role::Admin
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_wins_unless_it_contradicts_the_query_or_header() {
        let (a, b) = (TenantId(uuid::Uuid::from_u128(1)), TenantId(uuid::Uuid::from_u128(2)));
        assert_eq!(choose_tenant(None, None).ok(), Some(None));
        assert_eq!(choose_tenant(Some(a), None).ok(), Some(Some(a)));
        assert_eq!(choose_tenant(None, Some(b)).ok(), Some(Some(b)));
        assert_eq!(choose_tenant(Some(a), Some(a)).ok(), Some(Some(a)));
        assert!(matches!(choose_tenant(Some(a), Some(b)), Err(AuthError::TenantMismatch)));
    }
}
