//! The mapping of the errors of the changes to who may do what (`usecases::access_changes`,
//! `membership`, `passwords`, `team_credentials`) to an HTTP status and code. Messages are the
//! enums' own `Display` text.

use super::ApiError;
use crate::usecases::{
    access_changes::{BlockError, DeleteAccountError, ProfileError},
    membership::MembershipError,
    passwords::{PasswordError, ResetError},
    team_credentials::CredentialError,
};

impl From<ProfileError> for ApiError {
    fn from(e: ProfileError) -> Self {
        let m = e.to_string();
        match e {
            ProfileError::EmailTaken => Self::Conflict("email_taken", m),
            ProfileError::LastPlatformAdmin => Self::Conflict("last_platform_admin", m),
            ProfileError::PasswordRequired => Self::Forbidden("current_password_required", m),
            ProfileError::WrongPassword => Self::Forbidden("wrong_password", m),
            ProfileError::UserNotFound => Self::NotFound("user_not_found", m),
            ProfileError::Store(e) => e.into(),
        }
    }
}

impl From<DeleteAccountError> for ApiError {
    fn from(e: DeleteAccountError) -> Self {
        let m = e.to_string();
        match e {
            DeleteAccountError::TransferOwnershipFirst => Self::Conflict("transfer_ownership_first", m),
            DeleteAccountError::LastPlatformAdmin => Self::Conflict("last_platform_admin", m),
            DeleteAccountError::UserNotFound => Self::NotFound("user_not_found", m),
            DeleteAccountError::Store(e) => e.into(),
        }
    }
}

impl From<BlockError> for ApiError {
    fn from(e: BlockError) -> Self {
        let m = e.to_string();
        match e {
            BlockError::CannotBlockSelf => Self::BadRequest("cannot_block_self", m),
            BlockError::UserNotFound => Self::NotFound("user_not_found", m),
            BlockError::Store(e) => e.into(),
        }
    }
}

impl From<MembershipError> for ApiError {
    fn from(e: MembershipError) -> Self {
        let m = e.to_string();
        match e {
            MembershipError::MemberNotFound | MembershipError::NotAMember => Self::NotFound("member_not_found", m),
            MembershipError::TenantNotFound | MembershipError::NotYourTeam => Self::NotFound("tenant_not_found", m),
            MembershipError::UserNotFound => Self::NotFound("user_not_found", m),
            MembershipError::AlreadyMember => Self::Conflict("already_member", m),
            MembershipError::OwnerMustBeAdmin => Self::BadRequest("owner_must_be_admin", m),
            MembershipError::OwnerCannotBeRemoved | MembershipError::OwnerCannotLeave => {
                Self::BadRequest("OWNER_CANNOT_LEAVE", m)
            }
            MembershipError::CreationDisabled => Self::Forbidden("tenant_creation_disabled", m),
            MembershipError::Store(e) => e.into(),
        }
    }
}

impl From<PasswordError> for ApiError {
    fn from(e: PasswordError) -> Self {
        let m = e.to_string();
        match e {
            PasswordError::Weak(_) => Self::Unprocessable("weak_password", m),
            PasswordError::WrongPassword => Self::BadRequest("wrong_password", m),
            PasswordError::UserNotFound => Self::NotFound("user_not_found", m),
            PasswordError::Hashing => Self::internal(anyhow::anyhow!(m)),
            PasswordError::Store(e) => e.into(),
        }
    }
}

impl From<ResetError> for ApiError {
    fn from(e: ResetError) -> Self {
        let m = e.to_string();
        match e {
            ResetError::Weak(_) => Self::Unprocessable("weak_password", m),
            ResetError::InvalidToken => Self::BadRequest("invalid_token", m),
            ResetError::TokenUsed(_) => Self::BadRequest("token_used", m),
            ResetError::TokenExpired(_) => Self::BadRequest("token_expired", m),
            ResetError::UserBlocked(_) => Self::BadRequest("user_blocked", m),
            ResetError::Hashing => Self::internal(anyhow::anyhow!(m)),
            ResetError::Store(e) => e.into(),
        }
    }
}

impl From<CredentialError> for ApiError {
    fn from(e: CredentialError) -> Self {
        let m = e.to_string();
        match e {
            CredentialError::KeyNotFound => Self::NotFound("api_key_not_found", m),
            CredentialError::InviteNotFound => Self::NotFound("invite_not_found", m),
            CredentialError::Store(e) => e.into(),
        }
    }
}

impl ResetError {
    /// The code a refused reset is audited with (`user.password_reset_failed`).
    pub fn audit_reason(&self) -> &'static str {
        match self {
            ResetError::Weak(_) => "weak_password",
            ResetError::InvalidToken => "invalid_token",
            ResetError::TokenUsed(_) => "token_used",
            ResetError::TokenExpired(_) => "token_expired",
            ResetError::UserBlocked(_) => "user_blocked",
            ResetError::Hashing | ResetError::Store(_) => "error",
        }
    }
}
