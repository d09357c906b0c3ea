//! Who is in a team, and as what: add a member, change a role, remove a member, leave, hand the
//! team over, create a team. Each change applies its consequences in its own transaction (see
//! `access_changes`): the keys and invites the person may no longer make are revoked, their
//! devices become team-owned, and their live-audio watching ends where they are no longer a member.

use crate::{
    domain::{Role, settings::PlatformSettings},
    ids::{TenantId, UserId},
    store::{
        self, Store,
        tenants::{Membership, Tenant},
    },
};

use super::access_changes::{Ended, Handles, follow_up, settle};

#[derive(Debug, thiserror::Error)]
pub enum MembershipError {
    #[error("no such membership")]
    MemberNotFound,
    #[error("the user is not a member of this team")]
    NotAMember,
    #[error("no such team")]
    TenantNotFound,
    #[error("no such team, or you are not a member")]
    NotYourTeam,
    #[error("no such user")]
    UserNotFound,
    #[error("the user is already a member of this team")]
    AlreadyMember,
    #[error("the team's owner stays an admin; transfer ownership first")]
    OwnerMustBeAdmin,
    #[error("the owner cannot be removed; transfer ownership first")]
    OwnerCannotBeRemoved,
    #[error("owners cannot leave their team; transfer ownership first")]
    OwnerCannotLeave,
    #[error("creating teams is switched off on this hub")]
    CreationDisabled,
    #[error(transparent)]
    Store(store::Error),
}

super::from_store_error!(MembershipError, not_found => MemberNotFound, duplicate => AlreadyMember);

/// `Ok(None)` for a missing row, so a use case can say which row was missing.
fn found<T>(r: store::Result<T>) -> store::Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(store::Error::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Adds a person to a team with `role` (a platform admin's action); the team becomes their default
/// when they had none. Returns the membership id.
pub async fn add_member(store: &Store, user: UserId, tenant: TenantId, role: Role) -> Result<String, MembershipError> {
    super::in_tx(store, move |tx| {
        let person = found(store::users::get(tx, user))?.ok_or(MembershipError::UserNotFound)?;
        found(store::tenants::get(tx, tenant))?.ok_or(MembershipError::TenantNotFound)?;
        let id = store::tenants::add_member(tx, tenant, user, role)?;
        if person.default_tenant_id.is_none() {
            store::users::set_default_tenant(tx, user, Some(tenant))?;
        }
        Ok(id)
    })
    .await
}

/// What a role change did.
#[derive(Debug, Clone)]
pub struct RoleChanged {
    pub membership: Membership,
    pub from: Role,
    pub ended: Ended,
}

/// Sets the role of membership `id`. The owner stays an admin. Below admin, the person's keys and
/// pending invites in the team are revoked; below member, their live-audio watching there ends.
pub async fn change_role(h: Handles<'_>, id: String, role: Role) -> Result<RoleChanged, MembershipError> {
    let now = h.clock.stamp();
    let (changed, reach) = super::in_tx(h.store, move |tx| {
        let m = store::tenants::membership(tx, &id)?;
        if m.is_owner && role != Role::Admin {
            return Err(MembershipError::OwnerMustBeAdmin);
        }
        store::tenants::set_role(tx, m.tenant_id, m.user_id, role)?;
        let mut ended = Ended::default();
        let reach = settle(tx, m.user_id, now, &mut ended)?;
        let membership = store::tenants::membership(tx, &id)?;
        Ok((RoleChanged { membership, from: m.role, ended }, reach))
    })
    .await?;
    let mut changed = changed;
    follow_up(h, changed.membership.user_id, reach, &mut changed.ended).await;
    Ok(changed)
}

/// Who ends a membership: a platform admin removing someone, or the person leaving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Departure {
    Removed,
    Left,
}

/// Takes `user` out of `tenant` (never its owner): their devices there become team-owned and,
/// unless `keep_devices`, are disconnected; the keys and pending invites they made in the team
/// are revoked; their live-audio watching there ends. Their sign-in sessions go on (other teams).
pub async fn remove(
    h: Handles<'_>,
    tenant: TenantId,
    user: UserId,
    keep_devices: bool,
    how: Departure,
) -> Result<Ended, MembershipError> {
    let now = h.clock.stamp();
    let (reach, mut ended) = super::in_tx(h.store, move |tx| {
        let missing = match how {
            Departure::Removed => MembershipError::TenantNotFound,
            Departure::Left => MembershipError::NotYourTeam,
        };
        let team: Tenant = found(store::tenants::get(tx, tenant))?.ok_or(missing)?;
        if store::tenants::role_of(tx, tenant, user)?.is_none() {
            return Err(match how {
                Departure::Removed => MembershipError::NotAMember,
                Departure::Left => MembershipError::NotYourTeam,
            });
        }
        if team.owner_user_id == Some(user) {
            return Err(match how {
                Departure::Removed => MembershipError::OwnerCannotBeRemoved,
                Departure::Left => MembershipError::OwnerCannotLeave,
            });
        }
        store::tenants::remove_member(tx, tenant, user)?;
        let mut ended = Ended { devices_kept: keep_devices, ..Ended::default() };
        let released = store::satellites::release_registrant_devices(tx, tenant, user, keep_devices, now)?;
        ended.released.push((tenant, released));
        let reach = settle(tx, user, now, &mut ended)?;
        Ok((reach, ended))
    })
    .await?;
    follow_up(h, user, reach, &mut ended).await;
    Ok(ended)
}

/// Renames `tenant` (its admins' action); the name is checked by the caller.
pub async fn rename_team(store: &Store, tenant: TenantId, name: String) -> Result<Tenant, MembershipError> {
    super::in_tx(store, move |tx| {
        found(store::tenants::get(tx, tenant))?.ok_or(MembershipError::TenantNotFound)?;
        store::tenants::rename(tx, tenant, &name)?;
        Ok(store::tenants::get(tx, tenant)?)
    })
    .await
}

/// The membership `id` when it is one of `tenant`'s (a team admin acts on their own team only).
pub async fn membership_in(store: &Store, tenant: TenantId, id: String) -> Result<Membership, MembershipError> {
    let m = store.call(move |c| store::tenants::membership(c, &id)).await?;
    if m.tenant_id == tenant { Ok(m) } else { Err(MembershipError::MemberNotFound) }
}

/// Makes the member of membership `id` the owner (and an admin) of its team; returns the team and
/// the previous owner. Nobody loses a right, so nothing else changes.
pub async fn transfer_ownership(store: &Store, id: String) -> Result<(Membership, Option<UserId>), MembershipError> {
    super::in_tx(store, move |tx| {
        let m = store::tenants::membership(tx, &id)?;
        let before = store::tenants::get(tx, m.tenant_id)?.owner_user_id;
        store::tenants::transfer_ownership(tx, m.tenant_id, m.user_id)?;
        Ok((store::tenants::membership(tx, &id)?, before))
    })
    .await
}

/// Creates a team owned and administered by `owner`; only platform admins may while the hub's
/// `allow_tenant_creation` is off.
pub async fn create_team(
    store: &Store,
    owner: UserId,
    owner_is_platform_admin: bool,
    name: String,
) -> Result<Tenant, MembershipError> {
    super::in_tx(store, move |tx| {
        let platform: PlatformSettings = store::settings::load(tx, store::settings::PLATFORM)?;
        if !owner_is_platform_admin && !platform.allow_tenant_creation {
            return Err(MembershipError::CreationDisabled);
        }
        let id = store::tenants::create(tx, &name, owner)?;
        Ok(store::tenants::get(tx, id)?)
    })
    .await
}
