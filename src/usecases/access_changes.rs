//! What follows from a change to who may do what, applied in the change's own transaction.
//!
//! The rule every change keeps: a team API key or a pending invite lives only while its maker
//! could still make it (an unblocked platform admin, or an admin of its team), a share link while
//! its maker is an unblocked member of its team (or platform admin); a person watches
//! live audio only while they are a member (or more) of the satellite's team. [`settle`] applies
//! the first inside the transaction of the change, [`follow_up`] the second (and disconnects
//! released devices) right after its commit.
//!
//! The changes of a whole account live here: block and unblock, deletion, an edit of the profile
//! (by the person, with the current password for a new email, or by a platform admin). Team
//! membership changes are in `membership`, passwords in `passwords`.

use std::collections::HashSet;

use crate::{
    clock::Clock,
    domain::Role,
    events::{Bus, Event},
    ids::{SatelliteId, TenantId, UserId},
    mail::Mailer,
    store::{self, Store, users::User},
    time::Timestamp,
};

use super::satellite_live::{self, LiveContext};

/// The handles a change of access takes.
#[derive(Clone, Copy)]
pub struct Handles<'a> {
    pub store: &'a Store,
    pub clock: &'a Clock,
    /// Where released devices are announced, so the broker drops their sessions.
    pub bus: &'a Bus,
    /// The live-audio sessions, to end the watching of someone who lost the role.
    pub live: LiveContext<'a>,
    /// Notices to the person (the old address, after an email change).
    pub mailer: &'a Mailer,
    /// The hub's one bounded pool of argon2 runs: every hash and verification goes through it.
    pub passwords: &'a crate::auth::password::Passwords,
}

/// What a change ended, for the audit log.
#[derive(Debug, Clone, Default)]
pub struct Ended {
    /// Team API keys revoked, as `(team, key id)`.
    pub keys: Vec<(TenantId, String)>,
    /// Pending invites revoked, as `(team, invite id)`.
    pub invites: Vec<(TenantId, String)>,
    /// Share links the person made that ended (they left the team, or were blocked).
    pub share_links: usize,
    /// Sign-in sessions ended.
    pub sessions: usize,
    /// Remembered devices (that skipped the second factor) forgotten.
    pub remembered_devices: usize,
    /// Unused password-reset links spent.
    pub reset_links: usize,
    /// Devices that became team-owned, by team; disconnected unless `devices_kept`.
    pub released: Vec<(TenantId, Vec<SatelliteId>)>,
    pub devices_kept: bool,
    /// Live-audio sessions that ended because their last watcher lost the role.
    pub live_sessions: usize,
}

impl Ended {
    /// Keys revoked in `tenant`.
    pub fn keys_in(&self, tenant: TenantId) -> usize {
        self.keys.iter().filter(|(t, _)| *t == tenant).count()
    }

    /// Invites revoked in `tenant`.
    pub fn invites_in(&self, tenant: TenantId) -> usize {
        self.invites.iter().filter(|(t, _)| *t == tenant).count()
    }
}

/// Where a person may still watch live audio after a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reach {
    Nowhere,
    Everywhere,
    Teams(HashSet<TenantId>),
}

impl Reach {
    fn allows(&self, tenant: TenantId) -> bool {
        match self {
            Reach::Nowhere => false,
            Reach::Everywhere => true,
            Reach::Teams(teams) => teams.contains(&tenant),
        }
    }
}

/// In the change's transaction, after it wrote: revokes the keys and invites `user` may no longer
/// make, and says where they may still watch live audio.
pub(crate) fn settle(
    tx: &rusqlite::Connection,
    user: UserId,
    now: Timestamp,
    ended: &mut Ended,
) -> store::Result<Reach> {
    ended.keys.extend(store::api_keys::revoke_orphaned(tx, user, now)?);
    ended.invites.extend(store::invites::revoke_orphaned(tx, user, now)?);
    ended.share_links += store::share_links::revoke_orphaned(tx, user, now)?;
    let person = match store::users::get(tx, user) {
        Ok(p) => p,
        Err(store::Error::NotFound) => return Ok(Reach::Nowhere),
        Err(e) => return Err(e),
    };
    Ok(if person.is_blocked {
        Reach::Nowhere
    } else if person.is_platform_admin {
        Reach::Everywhere
    } else {
        let teams = store::tenants::list_for_user(tx, user)?;
        Reach::Teams(teams.into_iter().filter(|(_, role)| *role >= Role::Member).map(|(t, _)| t.id).collect())
    })
}

/// After the commit: the broker drops the released devices (unless kept), and `user` stops
/// watching live audio where they no longer may.
pub(crate) async fn follow_up(h: Handles<'_>, user: UserId, reach: Reach, ended: &mut Ended) {
    if !ended.devices_kept {
        for (tenant, satellites) in &ended.released {
            for satellite_id in satellites {
                h.bus.publish(Event::SatelliteRevoked { tenant_id: *tenant, satellite_id: *satellite_id });
            }
        }
    }
    ended.live_sessions += satellite_live::evict(h.live, user, |tenant| reach.allows(tenant)).await;
}

#[derive(Debug, thiserror::Error)]
pub enum BlockError {
    #[error("you cannot block your own account")]
    CannotBlockSelf,
    #[error("no such user")]
    UserNotFound,
    #[error(transparent)]
    Store(store::Error),
}

super::from_store_error!(BlockError, not_found => UserNotFound);

/// Toggles the block of `user` (by the platform admin `by`). Blocking ends every session, forgets
/// the remembered devices, spends unused reset links, revokes the team keys and pending invites
/// the person made (in every team) and ends their live-audio watching. Their devices keep
/// recording for their teams. Unblocking gives none of it back. Returns whether they are blocked now.
pub async fn toggle_block(h: Handles<'_>, user: UserId, by: Option<UserId>) -> Result<(bool, Ended), BlockError> {
    if by == Some(user) {
        return Err(BlockError::CannotBlockSelf);
    }
    let now = h.clock.stamp();
    let (blocked, reach, mut ended) = super::in_tx(h.store, move |tx| {
        let blocked = !store::users::get(tx, user)?.is_blocked;
        store::users::set_blocked(tx, user, blocked)?;
        let mut ended = Ended::default();
        if blocked {
            ended.sessions = store::sessions::revoke_all(tx, user, None, now)?;
            ended.remembered_devices = store::mfa::forget_all_devices(tx, user)?;
            ended.reset_links = store::resets::spend_all(tx, user, now)?;
        }
        let reach = settle(tx, user, now, &mut ended)?;
        Ok::<_, BlockError>((blocked, reach, ended))
    })
    .await?;
    follow_up(h, user, reach, &mut ended).await;
    Ok((blocked, ended))
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
/// devices in the teams it belonged to become team-owned and are disconnected; the team keys and
/// pending invites it made are revoked everywhere; its sessions and remembered devices go with the
/// row; its live-audio watching ends.
pub async fn delete_account(h: Handles<'_>, id: UserId) -> Result<Ended, DeleteAccountError> {
    let now = h.clock.stamp();
    let mut ended = super::in_tx(h.store, move |tx| {
        let user = store::users::get(tx, id)?;
        let owned = store::tenants::owned_by(tx, id)?;
        if owned.iter().any(|(_, others)| *others > 0) {
            return Err(DeleteAccountError::TransferOwnershipFirst);
        }
        if user.is_platform_admin && store::users::count_platform_admins(tx)? <= 1 {
            return Err(DeleteAccountError::LastPlatformAdmin);
        }
        let mut ended = Ended::default();
        for (tenant, _) in owned {
            store::tenants::delete(tx, tenant)?;
        }
        ended.keys = store::api_keys::revoke_made_by(tx, id, now)?;
        ended.invites = store::invites::revoke_made_by(tx, id, now)?;
        for (tenant, _) in store::tenants::list_for_user(tx, id)? {
            let released = store::satellites::release_registrant_devices(tx, tenant.id, id, false, now)?;
            ended.released.push((tenant.id, released));
        }
        store::users::delete(tx, id)?;
        Ok(ended)
    })
    .await?;
    follow_up(h, id, Reach::Nowhere, &mut ended).await;
    Ok(ended)
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("an account with this email already exists")]
    EmailTaken,
    #[error("the hub needs at least one platform admin")]
    LastPlatformAdmin,
    #[error("changing the email needs the current password (currentPassword)")]
    PasswordRequired,
    #[error("the current password is not correct")]
    WrongPassword,
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

/// What an edit did.
#[derive(Debug, Clone)]
pub struct ProfileChanged {
    pub user: User,
    /// The address before, when the email changed.
    pub old_email: Option<String>,
    pub ended: Ended,
}

/// The person changes their own name and/or email. A new email needs `current_password`
/// (`PasswordRequired`, `WrongPassword`): a stolen session must not be able to point "forgot
/// password" at another mailbox. The old address is told of the change when mail is set up.
pub async fn change_own_profile(
    h: Handles<'_>,
    id: UserId,
    name: Option<String>,
    email: Option<String>,
    current_password: Option<String>,
) -> Result<ProfileChanged, ProfileError> {
    let user = h.store.call(move |c| store::users::get(c, id)).await?;
    let email = email.filter(|e| *e != user.email);
    if email.is_some() {
        let given = current_password.filter(|p| !p.is_empty()).ok_or(ProfileError::PasswordRequired)?;
        if !h.passwords.verify(given, user.password_hash.clone()).await {
            return Err(ProfileError::WrongPassword);
        }
    }
    let changed = edit_account(h, id, ProfileChange { name, email, platform_admin: None }).await?;
    if let Some(old) = &changed.old_email {
        let text = format!(
            "Hello {},\n\nThe email address of your birdhub account was changed to {}.\n\
             Mail about the account, password resets included, now goes there.\n\n\
             If you did not change it, contact the hub's administrator at once.\n",
            changed.user.name, changed.user.email
        );
        h.mailer.send(h.store, h.clock, old, "Your birdhub email address was changed", text, "email_changed").await;
    }
    Ok(changed)
}

/// Applies the change in one transaction (a platform admin's edit, or the person's after
/// [`change_own_profile`]'s checks). A taken email is `EmailTaken`; taking the flag from the hub's
/// last platform admin is `LastPlatformAdmin`. A new email spends unused reset links (they went
/// to the old address); losing the platform-admin flag revokes the keys and invites made in
/// teams the person does not administer, and ends their live-audio watching where they are not
/// a member.
pub async fn edit_account(h: Handles<'_>, id: UserId, change: ProfileChange) -> Result<ProfileChanged, ProfileError> {
    let now = h.clock.stamp();
    let (changed, reach) = super::in_tx(h.store, move |tx| {
        let before = store::users::get(tx, id)?;
        let mut ended = Ended::default();
        let new_email = change.email.filter(|e| *e != before.email);
        if let Some(email) = &new_email
            && store::users::find_by_email(tx, email)?.is_some_and(|other| other.id != id)
        {
            return Err(ProfileError::EmailTaken);
        }
        if change.name.is_some() || new_email.is_some() {
            store::users::update_profile(tx, id, change.name.as_deref(), new_email.as_deref(), now)?;
        }
        if new_email.is_some() {
            ended.reset_links = store::resets::spend_all(tx, id, now)?;
        }
        let mut reach = None;
        if let Some(flag) = change.platform_admin {
            if before.is_platform_admin && !flag && store::users::count_platform_admins(tx)? <= 1 {
                return Err(ProfileError::LastPlatformAdmin);
            }
            store::users::set_platform_admin(tx, id, flag)?;
            reach = Some(settle(tx, id, now, &mut ended)?);
        }
        let user = store::users::get(tx, id)?;
        let old_email = new_email.map(|_| before.email);
        Ok((ProfileChanged { user, old_email, ended }, reach))
    })
    .await?;
    let mut changed = changed;
    if let Some(reach) = reach {
        follow_up(h, id, reach, &mut changed.ended).await;
    }
    Ok(changed)
}
