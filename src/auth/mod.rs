//! Who the caller is and what they may do: passwords (argon2id), tokens and JWTs, the credential
//! resolver and auth context, the route guards, the client IP, login limits and the audit log.

pub mod audit;
pub mod context;
pub mod device_rule;
pub mod error;
pub mod guard;
pub mod ip;
pub mod limits;
pub mod passkeys;
pub mod password;
pub mod satellite_key;
pub mod secretbox;
pub mod share;
pub mod tokens;
pub mod totp;

pub use audit::Audit;
pub use context::{AuthContext, Principal};
pub use error::AuthError;
pub use guard::{Admin, Authenticated, Member, PlatformAdmin, RequestedTenant, TenantAccess, Viewer, choose_tenant};
pub use ip::ClientIp;
