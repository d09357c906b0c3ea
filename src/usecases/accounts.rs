//! Signing up: alone (with a team of one's own, when the hub allows it) or through an invite link
//! (accepting the invite). What changes an account afterwards, and what follows from it, is in
//! `access_changes`, `membership` and `passwords`.
//!
//! Each function owns its transaction and names every refusal in its error enum; `api` maps the
//! enums to statuses and codes in one place.

use crate::{
    clock::Clock,
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

/// What the sign-up page may offer: an account of one's own (self registration on), and the
/// invite of the link, if any, with the team it joins.
#[derive(Debug, Clone)]
pub struct SignUpOptions {
    pub open: bool,
    pub invite: Option<InviteOffer>,
}

/// An invite as its holder sees it: which team, as what, for which address.
#[derive(Debug, Clone)]
pub struct InviteOffer {
    pub team_name: String,
    pub role: crate::domain::Role,
    pub email: Option<String>,
    pub expires_at: Timestamp,
}

/// The sign-up page's options; a used, expired or unknown invite is refused as sign-up would.
pub async fn sign_up_options(
    store: &Store,
    clock: &Clock,
    invite_token_hash: Option<String>,
) -> Result<SignUpOptions, SignUpError> {
    let now = clock.now();
    store
        .call(move |c| {
            let platform: crate::domain::settings::PlatformSettings =
                store::settings::load(c, store::settings::PLATFORM)?;
            let Some(hash) = invite_token_hash else {
                return Ok(Ok(SignUpOptions { open: platform.allow_self_registration, invite: None }));
            };
            let Some(invite) = store::invites::find_by_hash(c, &hash)? else {
                return Ok(Err(SignUpError::InviteInvalid));
            };
            // The address is the invite's own, so only "used" and "expired" can refuse here.
            let email = invite.email.clone().unwrap_or_default();
            let invite = match check_invite(invite, &email, now) {
                Ok(i) => i,
                Err(e) => return Ok(Err(e)),
            };
            let team = store::tenants::get(c, invite.tenant_id)?;
            let offer = InviteOffer {
                team_name: team.name,
                role: invite.role,
                email: invite.email,
                expires_at: invite.expires_at,
            };
            Ok(Ok(SignUpOptions { open: platform.allow_self_registration, invite: Some(offer) }))
        })
        .await?
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

/// Stores the person's preferences (already validated, as JSON).
pub async fn save_preferences(
    store: &Store,
    clock: &Clock,
    id: crate::ids::UserId,
    json: String,
) -> Result<(), store::Error> {
    let now = clock.stamp();
    store.call(move |c| store::users::set_preferences(c, id, &json, now)).await
}
