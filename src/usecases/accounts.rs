//! What people do to accounts: sign up (alone or through an invite), change their profile, delete
//! the account, and what a platform admin does to someone else's (edit, add to a team).
//!
//! Each function owns its transaction and names every refusal in its error enum; `api` maps the
//! enums to statuses and codes in one place.

use crate::{
    clock::Clock,
    domain::Role,
    ids::{SatelliteId, TenantId, UserId},
    store::{self, Store, users::User},
    time::Timestamp,
};

/// A new account, already validated (email normalised, strong password hashed).
#[derive(Debug, Clone)]
pub struct SignUp {
    pub email: String,
    pub name: String,
    pub password_hash: String,
    /// The hashed invite token, when the person came through an invite link.
    pub invite_token_hash: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SignUpError {
    #[error("an account with this email already exists")]
    EmailTaken,
    #[error("this hub takes new accounts by invitation only")]
    RegistrationClosed,
    #[error("this invite link is not valid")]
    InviteInvalid,
    #[error("this invite has already been used")]
    InviteUsed,
    #[error("this invite has expired or was revoked")]
    InviteExpired,
    #[error("this invite is for another email address")]
    InviteEmailMismatch,
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// Whether the hub takes this sign-up at all: the invite is valid for this address, or (without
/// one) self registration is on. Read-only and cheap, so the API asks it *before* it spends a
/// password hash on the request; [`sign_up`] asks it again inside its transaction.
pub async fn sign_up_gate(
    store: &Store,
    clock: &Clock,
    email: String,
    invite_token_hash: Option<String>,
) -> Result<(), SignUpError> {
    let now = clock.now();
    store.call(move |c| Ok(gate(c, &email, invite_token_hash.as_deref(), now)?.map(|_| ()))).await?
}

/// The gate of [`sign_up_gate`]: the invite to accept, if any, or the refusal.
fn gate(
    conn: &rusqlite::Connection,
    email: &str,
    invite_token_hash: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
) -> store::Result<Result<Option<store::invites::Invite>, SignUpError>> {
    if let Some(hash) = invite_token_hash {
        let Some(invite) = store::invites::find_by_hash(conn, hash)? else {
            return Ok(Err(SignUpError::InviteInvalid));
        };
        return Ok(check_invite(invite, email, now).map(Some));
    }
    let platform: crate::domain::settings::PlatformSettings = store::settings::load(conn, store::settings::PLATFORM)?;
    Ok(if platform.allow_self_registration { Ok(None) } else { Err(SignUpError::RegistrationClosed) })
}

/// Creates the account: through the invite into its team and role, or (when the hub allows self
/// registration) with a team of its own. The first account on a hub is a platform admin. The invite
/// is checked and consumed in the same transaction, so two people racing for one link cannot both
/// get in: the loser is told `InviteUsed`.
pub async fn sign_up(store: &Store, clock: &Clock, new: SignUp) -> Result<User, SignUpError> {
    let now = clock.now();
    store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let invite = match gate(&tx, &new.email, new.invite_token_hash.as_deref(), now)? {
                Ok(invite) => invite,
                Err(refused) => return Ok(Err(refused)),
            };
            if store::users::find_by_email(&tx, &new.email)?.is_some() {
                return Ok(Err(SignUpError::EmailTaken));
            }
            let first = store::users::count(&tx)? == 0;
            let team = format!("{}'s team", new.name);
            let user = store::users::NewUser {
                email: new.email,
                name: new.name,
                password_hash: new.password_hash,
                is_platform_admin: first,
            };
            let id = match &invite {
                Some(inv) => {
                    let id = store::users::create_in_tenant(&tx, &user, inv.tenant_id, inv.role)?;
                    if !store::invites::accept(&tx, &inv.id, id, Timestamp(now))? {
                        return Ok(Err(SignUpError::InviteUsed));
                    }
                    id
                }
                None => {
                    let id = store::users::create(&tx, &user)?;
                    store::tenants::create(&tx, &team, id)?;
                    id
                }
            };
            let user = store::users::get(&tx, id)?;
            tx.commit()?;
            Ok(Ok(user))
        })
        .await
        .map_err(|e| match e {
            // Two sign-ups with one email at once: the second loses on the UNIQUE index.
            store::Error::Duplicate => SignUpError::EmailTaken,
            other => other.into(),
        })?
}

/// The invite's state as the person sees it when they use the link.
fn check_invite(
    invite: store::invites::Invite,
    email: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<store::invites::Invite, SignUpError> {
    if invite.accepted_at.is_some() {
        return Err(SignUpError::InviteUsed);
    }
    if invite.revoked_at.is_some() || invite.expires_at <= now {
        return Err(SignUpError::InviteExpired);
    }
    if invite.email.as_deref().is_some_and(|e| !e.eq_ignore_ascii_case(email)) {
        return Err(SignUpError::InviteEmailMismatch);
    }
    Ok(invite)
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("an account with this email already exists")]
    EmailTaken,
    #[error("the hub needs at least one platform admin")]
    LastPlatformAdmin,
    #[error("no such user")]
    UserNotFound,
    #[error(transparent)]
    Store(store::Error),
}

super::from_store_error!(ProfileError, not_found => UserNotFound, duplicate => EmailTaken);

/// A change to an account: name and email by the person, plus the platform-admin flag by an admin.
#[derive(Debug, Clone, Default)]
pub struct ProfileChange {
    pub name: Option<String>,
    pub email: Option<String>,
    pub platform_admin: Option<bool>,
}

/// Applies the change in one transaction. A taken email is `EmailTaken`; taking the flag from the
/// hub's last platform admin is `LastPlatformAdmin`.
pub async fn change_profile(
    store: &Store,
    clock: &Clock,
    id: UserId,
    change: ProfileChange,
) -> Result<User, ProfileError> {
    let now = clock.stamp();
    store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let before = store::users::get(&tx, id)?;
            if let Some(email) = &change.email
                && store::users::find_by_email(&tx, email)?.is_some_and(|other| other.id != id)
            {
                return Ok(Err(ProfileError::EmailTaken));
            }
            if change.name.is_some() || change.email.is_some() {
                store::users::update_profile(&tx, id, change.name.as_deref(), change.email.as_deref(), now)?;
            }
            if let Some(flag) = change.platform_admin {
                if before.is_platform_admin && !flag && store::users::count_platform_admins(&tx)? <= 1 {
                    return Ok(Err(ProfileError::LastPlatformAdmin));
                }
                store::users::set_platform_admin(&tx, id, flag)?;
            }
            let after = store::users::get(&tx, id)?;
            tx.commit()?;
            Ok(Ok(after))
        })
        .await?
}

#[derive(Debug, thiserror::Error)]
pub enum DeleteAccountError {
    #[error("the account owns a team with other members; transfer its ownership first")]
    TransferOwnershipFirst,
    #[error("this is the hub's only platform admin; make someone else admin first")]
    LastPlatformAdmin,
    #[error("no such user")]
    UserNotFound,
    #[error(transparent)]
    Store(store::Error),
}

super::from_store_error!(DeleteAccountError, not_found => UserNotFound);

/// Deletes an account in one transaction. Teams it owns alone go with it; a team it owns with
/// other members must be handed over first, and the hub keeps at least one platform admin. Its
/// devices in the teams it belonged to become team-owned and are disconnected; they are returned
/// by team, for the broker to drop their sessions and for the audit log.
pub async fn delete_account(
    store: &Store,
    clock: &Clock,
    id: UserId,
) -> Result<Vec<(TenantId, Vec<SatelliteId>)>, DeleteAccountError> {
    let now = clock.stamp();
    store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let user = store::users::get(&tx, id)?;
            let owned = store::tenants::owned_by(&tx, id)?;
            if owned.iter().any(|(_, others)| *others > 0) {
                return Ok(Err(DeleteAccountError::TransferOwnershipFirst));
            }
            if user.is_platform_admin && store::users::count_platform_admins(&tx)? <= 1 {
                return Ok(Err(DeleteAccountError::LastPlatformAdmin));
            }
            for (tenant, _) in owned {
                store::tenants::delete(&tx, tenant)?;
            }
            let mut released = Vec::new();
            for (tenant, _) in store::tenants::list_for_user(&tx, id)? {
                released
                    .push((tenant.id, store::satellites::release_registrant_devices(&tx, tenant.id, id, false, now)?));
            }
            store::users::delete(&tx, id)?;
            tx.commit()?;
            Ok(Ok(released))
        })
        .await?
}

#[derive(Debug, thiserror::Error)]
pub enum AddMemberError {
    #[error("no such user")]
    UserNotFound,
    #[error("no such team")]
    TenantNotFound,
    #[error("the user is already a member of this team")]
    AlreadyMember,
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// Adds a person to a team with `role` (a platform admin's action); the team becomes their default
/// when they had none. Returns the membership id.
pub async fn add_member(store: &Store, user: UserId, tenant: TenantId, role: Role) -> Result<String, AddMemberError> {
    store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let Some(person) = store::users::get(&tx, user).map(Some).or_else(none_if_missing)? else {
                return Ok(Err(AddMemberError::UserNotFound));
            };
            if store::tenants::get(&tx, tenant).map(Some).or_else(none_if_missing)?.is_none() {
                return Ok(Err(AddMemberError::TenantNotFound));
            }
            if store::tenants::role_of(&tx, tenant, user)?.is_some() {
                return Ok(Err(AddMemberError::AlreadyMember));
            }
            let id = store::tenants::add_member(&tx, tenant, user, role)?;
            if person.default_tenant_id.is_none() {
                store::users::set_default_tenant(&tx, user, Some(tenant))?;
            }
            tx.commit()?;
            Ok(Ok(id))
        })
        .await
        .map_err(|e| match e {
            store::Error::Duplicate => AddMemberError::AlreadyMember,
            other => other.into(),
        })?
}

fn none_if_missing<T>(e: store::Error) -> store::Result<Option<T>> {
    match e {
        store::Error::NotFound => Ok(None),
        other => Err(other),
    }
}
