//! Passwords: the person changes theirs (with the current one), a reset link is issued (by the
//! person through "forgot password", or by a platform admin), and a link sets a new one.
//!
//! A new password ends what the old one let in: the other sessions (every session, after a
//! reset), the remembered devices that skipped the second factor, and any other unused reset
//! link. Each happens in the transaction that stores the new hash.

use crate::{
    auth::{limits, password, tokens},
    clock::Clock,
    ids::UserId,
    store::{self, Store},
};

use super::access_changes::{Ended, Handles};

#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    #[error("{0}")]
    Weak(String),
    #[error("the current password is not correct")]
    WrongPassword,
    #[error("no such user")]
    UserNotFound,
    #[error("could not hash the password")]
    Hashing,
    #[error(transparent)]
    Store(store::Error),
}

super::from_store_error!(PasswordError, not_found => UserNotFound);

/// The person changes their password after proving the current one. Every other session ends
/// (`keep_session` is the caller's own), remembered devices are forgotten and unused reset links
/// are spent.
pub async fn change_password(
    h: Handles<'_>,
    user: UserId,
    current: String,
    new: String,
    keep_session: Option<String>,
) -> Result<Ended, PasswordError> {
    password::check_strength(&new).map_err(|e| PasswordError::Weak(e.to_string()))?;
    let person = h.store.call(move |c| store::users::get(c, user)).await?;
    // Both runs go through the hub's bounded pool of argon2 runs.
    if !h.passwords.verify(current, person.password_hash).await {
        return Err(PasswordError::WrongPassword);
    }
    let hash = h.passwords.hash(new).await.map_err(|_| PasswordError::Hashing)?;
    let now = h.clock.stamp();
    super::in_tx(h.store, move |tx| {
        store::users::set_password(tx, user, &hash, now)?;
        Ok(Ended {
            sessions: store::sessions::revoke_all(tx, user, keep_session.as_deref(), now)?,
            remembered_devices: store::mfa::forget_all_devices(tx, user)?,
            reset_links: store::resets::spend_all(tx, user, now)?,
            ..Ended::default()
        })
    })
    .await
}

/// A fresh single-use reset token for `user` (60 minutes), from `ip`; returns the raw token.
pub async fn issue_reset_token(store: &Store, clock: &Clock, user: UserId, ip: &str) -> Result<String, store::Error> {
    let token = tokens::random_hex(32);
    let (hash, ip, expires) = (tokens::sha256_hex(&token), ip.to_owned(), clock.stamp_in(limits::reset_token_ttl()));
    store.call(move |c| store::resets::create(c, user, &hash, expires, &ip)).await?;
    Ok(token)
}

#[derive(Debug, thiserror::Error)]
pub enum ResetError {
    #[error("{0}")]
    Weak(String),
    #[error("this reset link is not valid")]
    InvalidToken,
    #[error("this reset link has already been used")]
    TokenUsed(UserId),
    #[error("this reset link has expired; ask for a new one")]
    TokenExpired(UserId),
    #[error("this account is blocked; contact the hub's administrator")]
    UserBlocked(UserId),
    #[error("could not hash the password")]
    Hashing,
    #[error(transparent)]
    Store(#[from] store::Error),
}

impl ResetError {
    /// The account the link belonged to, when it named one.
    pub fn user(&self) -> Option<UserId> {
        match self {
            Self::TokenUsed(u) | Self::TokenExpired(u) | Self::UserBlocked(u) => Some(*u),
            _ => None,
        }
    }
}

/// Sets a new password with the raw token of a reset link. Every session of the account ends,
/// its remembered devices are forgotten and its other reset links are spent; a lock from failed
/// logins is lifted. Returns the account and what ended.
pub async fn reset_password(h: Handles<'_>, token: &str, new: String) -> Result<(UserId, Ended), ResetError> {
    password::check_strength(&new).map_err(|e| ResetError::Weak(e.to_string()))?;
    let hash_of_token = tokens::sha256_hex(token.trim());
    let found = h
        .store
        .call(move |c| {
            let Some(t) = store::resets::find(c, &hash_of_token)? else { return Ok(None) };
            let user = store::users::get(c, t.user_id)?;
            Ok(Some((t, user)))
        })
        .await?;
    let (token, user) = found.ok_or(ResetError::InvalidToken)?;
    // Blocking spends the links too; the person is told why, rather than "already used".
    if user.is_blocked {
        return Err(ResetError::UserBlocked(user.id));
    }
    if token.used_at.is_some() {
        return Err(ResetError::TokenUsed(user.id));
    }
    if token.expires_at <= h.clock.now() {
        return Err(ResetError::TokenExpired(user.id));
    }
    let new_hash = h.passwords.hash(new).await.map_err(|_| ResetError::Hashing)?;
    let (id, now) = (user.id, h.clock.stamp());
    let ended = super::in_tx(h.store, move |tx| {
        if !store::resets::mark_used(tx, &token.id, now)? {
            return Err(ResetError::TokenUsed(id));
        }
        store::users::set_password(tx, id, &new_hash, now)?;
        Ok(Ended {
            sessions: store::sessions::revoke_all(tx, id, None, now)?,
            remembered_devices: store::mfa::forget_all_devices(tx, id)?,
            reset_links: store::resets::spend_all(tx, id, now)?,
            ..Ended::default()
        })
    })
    .await?;
    Ok((id, ended))
}
