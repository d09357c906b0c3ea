//! `AuthError`: everything the credential resolver, the guards and the device rule can refuse.
//! `auth` says what went wrong; the HTTP layer alone decides the status and the wire code, so this
//! module depends on nothing above it.

use crate::{domain::Role, store};

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// No credential at all.
    #[error("log in or send an API key")]
    Unauthenticated,
    /// A credential was sent but is not valid (bad signature, unknown key).
    #[error("the credentials are not valid")]
    InvalidCredentials,
    /// A well-signed session that was ended (logout, password change) or expired.
    #[error("the session has ended; log in again")]
    SessionExpired,
    /// The account is blocked by a platform admin.
    #[error("this account is blocked; contact the hub's administrator")]
    UserBlocked,
    /// The team does not exist or the caller is not in it (both answer the same, on purpose).
    #[error("no such team, or you are not a member")]
    TenantNotFound,
    /// No team named and none to default to.
    #[error("name the team with ?tenantId=; you have no default team")]
    TenantRequired,
    /// `tenantId` / `X-Tenant-Id` is not a UUID.
    #[error("tenantId {0:?} is not a UUID")]
    InvalidTenantId(String),
    /// The body names one team and the query or header another.
    #[error("the body's tenantId contradicts the tenant named by ?tenantId= or X-Tenant-Id")]
    TenantMismatch,
    /// The caller's role in the team is below what the route needs.
    #[error("this needs the {min} role or higher in the team")]
    InsufficientRole { min: Role },
    #[error("this needs a platform admin")]
    PlatformAdminRequired,
    /// An API key called a route that only a person may use.
    #[error("this endpoint needs a signed-in person, not a key")]
    UserRequired,
    /// The device is unknown or invisible to the caller.
    #[error("There is no such satellite in this team.")]
    SatelliteNotFound,
    /// The device is visible but the caller may not change it (SPEC 5.4).
    #[error("you may see this satellite but not change it")]
    DeviceNotManageable,
    /// A team requires two-factor sign-in and this person has not set it up yet.
    #[error("a team of yours requires two-factor sign-in: set it up first (POST /auth/mfa/totp/begin, then confirm)")]
    MfaEnrollmentRequired,
    /// A satellite's own key called something outside its allow-list (`auth::satellite_key`).
    #[error("a satellite's own key may only rename its device, rotate its key and read or push its config")]
    SatelliteKeyNotAllowed,
    #[error(transparent)]
    Store(#[from] store::Error),
}
