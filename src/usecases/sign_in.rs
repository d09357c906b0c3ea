//! The budgets of the public account routes, each taken *before* the work it pays for, so that
//! requests sent all at once cannot slip under a limit together:
//! - a login (password or second factor) takes a place in its address's budget and, for a known
//!   account, one of the account's guesses before its lock, in one transaction ([`reserve_login`]);
//! - forgot-password takes a place in its address's budget before it looks anything up or writes;
//! - register and reset-password take a place in an in-memory per-address budget ([`take`]).
//!
//! A refused request writes nothing but, at most once per window and address, one audit entry.

use std::net::IpAddr;

use crate::{
    auth::{limits, tokens},
    cache::Cache,
    clock::Clock,
    ids::UserId,
    store::{self, Store, login_attempts::Kind},
};

#[derive(Debug, thiserror::Error)]
pub enum BudgetError {
    #[error("too many attempts from this address; try again in 15 minutes")]
    RateLimited,
    #[error("too many failed logins: the account is locked for 15 minutes (or until a password reset)")]
    Locked,
    #[error(transparent)]
    Store(#[from] store::Error),
}

/// The key an address's budgets count under: the address, or for IPv6 its /64 (one household or
/// one machine holds a whole /64, so single IPv6 addresses would be no limit at all).
pub fn budget_key(ip: &str) -> String {
    match ip.parse::<IpAddr>() {
        Ok(IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none() => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
        Ok(IpAddr::V6(v6)) => v6.to_ipv4_mapped().map_or_else(|| ip.to_owned(), |v4| v4.to_string()),
        _ => ip.to_owned(),
    }
}

/// What the ledger keeps of the address a stranger typed: a fixed-length hash, never the text.
pub fn ledger_ident(email: &str) -> String {
    tokens::sha256_hex(&email.trim().to_lowercase())
}

/// A reserved login attempt: its ledger row and, for a known account, the guess it holds.
#[derive(Debug, Clone, Copy)]
#[must_use = "settle the attempt: it holds one of the account's guesses"]
pub struct Attempt {
    row: i64,
    guess: Option<(UserId, bool)>,
}

impl Attempt {
    /// Whether this attempt's guess was the last before the lock (a wrong answer now is 423).
    pub fn locks_if_wrong(&self) -> bool {
        self.guess.is_some_and(|(_, set_lock)| set_lock)
    }
}

/// Reserves a login attempt from `ip`: a place in the address's budget (429 past it) and, when
/// `user` is known, one of the account's guesses (423 while it is locked; the place in the budget
/// is still spent). One IMMEDIATE transaction, before the password or code is checked.
pub async fn reserve_login(
    store: &Store,
    clock: &Clock,
    ip: &str,
    email: &str,
    user: Option<UserId>,
) -> Result<Attempt, BudgetError> {
    let (key, ident) = (budget_key(ip), ledger_ident(email));
    let (since, now) = (clock.stamp_in(-limits::login_window()), clock.stamp());
    let until = clock.stamp_in(limits::lock_duration());
    store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let limit = limits::LOGIN_ATTEMPTS_PER_IP;
            let Some(row) = store::login_attempts::reserve(&tx, Kind::Login, &key, Some(&ident), since, limit, now)?
            else {
                return Ok(Err(BudgetError::RateLimited));
            };
            let guess = match user {
                Some(id) => match store::users::reserve_guess(&tx, id, limits::FAILURES_BEFORE_LOCK, now, until)? {
                    Some(set_lock) => Some((id, set_lock)),
                    None => {
                        tx.commit()?;
                        return Ok(Err(BudgetError::Locked));
                    }
                },
                None => None,
            };
            tx.commit()?;
            Ok(Ok(Attempt { row, guess }))
        })
        .await?
}

/// The address's login budget without taking a place in it (a step that checks no secret).
pub async fn within_login_budget(store: &Store, clock: &Clock, ip: &str) -> Result<(), BudgetError> {
    let (key, since) = (budget_key(ip), clock.stamp_in(-limits::login_window()));
    let used = store.call(move |c| store::login_attempts::count_since(c, Kind::Login, &key, since)).await?;
    if used >= limits::LOGIN_ATTEMPTS_PER_IP { Err(BudgetError::RateLimited) } else { Ok(()) }
}

/// The password or code was right and the person is signed in: the attempt is a success and the
/// account's failures in a row (and any lock) are cleared.
pub async fn signed_in(store: &Store, clock: &Clock, attempt: Attempt, user: UserId, ip: &str) -> store::Result<()> {
    let (now, ip) = (clock.stamp(), ip.to_owned());
    store
        .call(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            store::login_attempts::succeeded(&tx, attempt.row)?;
            store::users::record_login(&tx, user, now, &ip)?;
            tx.commit()?;
            Ok(())
        })
        .await
}

/// The attempt was no failure but did not sign in either (a right password with a second factor
/// due, a blocked account, a factor that could not be checked): its guess is given back.
pub async fn release(store: &Store, attempt: Attempt) -> store::Result<()> {
    let Some((id, set_lock)) = attempt.guess else { return Ok(()) };
    store.call(move |c| store::users::release_guess(c, id, set_lock)).await
}

/// Takes a place in the forgot-password budget of `ip` before anything is looked up; `false`
/// (and nothing written) past it.
pub async fn reserve_forgot(store: &Store, clock: &Clock, ip: &str, email: &str) -> store::Result<bool> {
    let (key, ident) = (budget_key(ip), ledger_ident(email));
    let (since, now) = (clock.stamp_in(-limits::forgot_window()), clock.stamp());
    let row = store
        .call(move |c| {
            store::login_attempts::reserve(
                c,
                Kind::ForgotPassword,
                &key,
                Some(&ident),
                since,
                limits::FORGOT_PER_IP,
                now,
            )
        })
        .await?;
    Ok(row.is_some())
}

/// Takes one place in an in-memory budget of `limit` per `window` (registrations, reset attempts,
/// second-factor guesses of one step). The count is taken and checked in one step.
pub async fn take(cache: &Cache, budget: &str, key: &str, limit: u64, window: std::time::Duration) -> bool {
    cache.incr(&format!("budget:{budget}:{key}"), window).await <= limit
}

/// A new session row for `user` from `ip`, valid until `expires_at`; returns its id. (A session
/// row is started for each sign-in and ended at sign-out, so a session can end before its token
/// expires.)
pub async fn start_session(
    store: &Store,
    user: UserId,
    ip: String,
    user_agent: Option<String>,
    expires_at: crate::time::Timestamp,
) -> Result<String, store::Error> {
    store.call(move |c| store::sessions::create(c, user, &ip, user_agent.as_deref(), expires_at)).await
}

/// Ends session `id` (sign-out).
pub async fn end_session(store: &Store, clock: &Clock, id: String) -> Result<(), store::Error> {
    let now = clock.stamp();
    store.call(move |c| store::sessions::revoke(c, &id, now)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_count_ipv6_by_its_64() {
        assert_eq!(budget_key("192.168.1.7"), "192.168.1.7");
        assert_eq!(budget_key("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
        assert_eq!(budget_key("2001:db8:1:2:bbbb::9"), "2001:db8:1:2::/64");
        assert_eq!(budget_key("::ffff:10.0.0.1"), "10.0.0.1");
        assert_eq!(budget_key("unknown"), "unknown");
        assert_eq!(ledger_ident(" Ada@Example.org "), ledger_ident("ada@example.org"));
        assert_eq!(ledger_ident(&"x".repeat(300)).len(), 64);
    }
}
