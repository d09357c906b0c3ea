//! JSON shapes shared by several resource files.

use serde::Serialize;

use crate::{
    domain::Role,
    ids::{TenantId, UserId},
    store::{tenants::Tenant, users::User},
    time::Timestamp,
};

/// A user as the API shows it (never the password hash).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    pub id: UserId,
    pub email: String,
    pub name: String,
    pub is_platform_admin: bool,
    pub is_blocked: bool,
    pub default_tenant_id: Option<TenantId>,
    pub created_at: Timestamp,
    pub last_login_at: Option<Timestamp>,
    pub last_login_ip: Option<String>,
}

impl From<&User> for UserView {
    fn from(u: &User) -> Self {
        Self {
            id: u.id,
            email: u.email.clone(),
            name: u.name.clone(),
            is_platform_admin: u.is_platform_admin,
            is_blocked: u.is_blocked,
            default_tenant_id: u.default_tenant_id,
            created_at: u.created_at,
            last_login_at: u.last_login_at,
            last_login_ip: u.last_login_ip.clone(),
        }
    }
}

/// A team with the caller's role in it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TenantView {
    pub id: TenantId,
    pub name: String,
    pub role: Role,
    pub is_owner: bool,
    pub created_at: Timestamp,
}

impl TenantView {
    pub fn new(t: &Tenant, role: Role, me: Option<UserId>) -> Self {
        Self {
            id: t.id,
            name: t.name.clone(),
            role,
            is_owner: me.is_some() && t.owner_user_id == me,
            created_at: t.created_at,
        }
    }
}

/// Checks the optional `name` and `email` of a profile change (own or by an admin); an email over
/// 254 bytes is 400 `input_too_long` before anything else.
pub fn profile_fields(
    name: Option<String>,
    email: Option<String>,
) -> Result<(Option<String>, Option<String>), super::ApiError> {
    use crate::domain::validate;
    if let Some(e) = &email {
        validate::within("email", e, validate::EMAIL_MAX)?;
    }
    let name = name
        .map(|n| validate::name(&n, "name"))
        .transpose()
        .map_err(|e| super::ApiError::Unprocessable("invalid_name", e))?;
    let email = email
        .map(|e| validate::email(&e))
        .transpose()
        .map_err(|e| super::ApiError::Unprocessable("invalid_email", e))?;
    Ok((name, email))
}

/// `limit`/`offset` of list endpoints: default 50, at most 500.
#[derive(Debug, Clone, Copy, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Page {
    #[serde(default = "default_limit")]
    pub limit: u32,
    #[serde(default)]
    pub offset: u32,
}

fn default_limit() -> u32 {
    50
}

pub const MAX_LIMIT: u32 = 500;

impl Page {
    pub fn checked(self) -> Result<Self, super::ApiError> {
        if self.limit == 0 || self.limit > MAX_LIMIT {
            return Err(super::ApiError::BadRequest("invalid_limit", format!("limit must be 1 to {MAX_LIMIT}")));
        }
        Ok(self)
    }
}
