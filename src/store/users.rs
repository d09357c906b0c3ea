//! Accounts: creation with a first team, lookups, login bookkeeping, profile and admin changes.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{Error, Result};
use crate::{
    domain::Role,
    ids::{TenantId, UserId},
    time::Timestamp,
};

/// An account to create, with its password already hashed.
#[derive(Debug, Clone)]
pub struct NewUser {
    pub email: String,
    pub name: String,
    pub password_hash: String,
    pub is_platform_admin: bool,
}

/// What [`create_with_team`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    pub user_id: UserId,
    pub tenant_id: TenantId,
}

/// A user row.
#[derive(Debug, Clone)]
pub struct User {
    pub id: UserId,
    pub email: String,
    pub name: String,
    pub password_hash: String,
    pub is_platform_admin: bool,
    pub is_blocked: bool,
    pub failed_login_attempts: u32,
    pub locked_until: Option<Timestamp>,
    pub last_login_at: Option<Timestamp>,
    pub last_login_ip: Option<String>,
    pub default_tenant_id: Option<TenantId>,
    pub preferences_json: String,
    pub mfa_enabled: bool,
    pub mfa_enrolled_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

const COLS: &str = "id, email, name, password_hash, is_platform_admin, is_blocked, failed_login_attempts, \
     locked_until, last_login_at, last_login_ip, default_tenant_id, preferences_json, mfa_enabled, mfa_enrolled_at, created_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<User> {
    Ok(User {
        id: r.get(0)?,
        email: r.get(1)?,
        name: r.get(2)?,
        password_hash: r.get(3)?,
        is_platform_admin: r.get(4)?,
        is_blocked: r.get(5)?,
        failed_login_attempts: r.get(6)?,
        locked_until: r.get(7)?,
        last_login_at: r.get(8)?,
        last_login_ip: r.get(9)?,
        default_tenant_id: r.get(10)?,
        preferences_json: r.get(11)?,
        mfa_enabled: r.get(12)?,
        mfa_enrolled_at: r.get(13)?,
        created_at: r.get(14)?,
    })
}

/// Inserts the user alone (no team); a taken email is `Duplicate`.
pub fn create(conn: &Connection, new: &NewUser) -> Result<UserId> {
    let taken: Option<String> =
        conn.query_row("SELECT id FROM users WHERE email = ?1", [&new.email], |r| r.get(0)).optional()?;
    if taken.is_some() {
        return Err(Error::Duplicate);
    }
    let id = UserId::new();
    conn.execute(
        "INSERT INTO users (id, email, name, password_hash, is_platform_admin) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, new.email, new.name, new.password_hash, new.is_platform_admin],
    )?;
    Ok(id)
}

/// Creates the user, a team of their own that they own and administer, and makes it their default,
/// all in one transaction. A taken email (case-insensitive) is `Duplicate`.
pub fn create_with_team(conn: &mut Connection, new: &NewUser, team_name: &str) -> Result<Created> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let user_id = create(&tx, new)?;
    let tenant_id = super::tenants::create(&tx, team_name, user_id)?;
    tx.commit()?;
    Ok(Created { user_id, tenant_id })
}

/// Creates the user as a member of an existing team with `role` (invite acceptance).
pub fn create_in_tenant(conn: &Connection, new: &NewUser, tenant: TenantId, role: Role) -> Result<UserId> {
    let user_id = create(conn, new)?;
    super::tenants::add_member(conn, tenant, user_id, role)?;
    conn.execute("UPDATE users SET default_tenant_id = ?1 WHERE id = ?2", params![tenant, user_id])?;
    Ok(user_id)
}

/// How many accounts exist.
pub fn count(conn: &Connection) -> Result<u64> {
    let n: i64 = conn.query_row("SELECT count(*) FROM users", [], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}

pub fn count_platform_admins(conn: &Connection) -> Result<u64> {
    let n: i64 = conn.query_row("SELECT count(*) FROM users WHERE is_platform_admin = 1", [], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}

pub fn get(conn: &Connection, id: UserId) -> Result<User> {
    Ok(conn.query_row(&format!("SELECT {COLS} FROM users WHERE id = ?1"), [id], from_row)?)
}

pub fn find_by_email(conn: &Connection, email: &str) -> Result<Option<User>> {
    Ok(conn.query_row(&format!("SELECT {COLS} FROM users WHERE email = ?1"), [email], from_row).optional()?)
}

/// Takes one of the account's guesses *before* a password or second factor is checked, so parallel
/// guesses cannot all slip under the lock: the failures-in-a-row count goes up at once, and the
/// guess that reaches `lock_after` locks the account until `lock_until` while it is being checked
/// (a right answer lifts it again, [`release_guess`] or [`record_login`]). One statement.
/// `None` when the account is locked; `Some(true)` when this guess set the lock. After a lock
/// has run out the count starts again from zero.
pub fn reserve_guess(
    conn: &Connection,
    id: UserId,
    lock_after: u32,
    now: Timestamp,
    lock_until: Timestamp,
) -> Result<Option<bool>> {
    let count: Option<u32> = conn
        .query_row(
            "UPDATE users SET
                 failed_login_attempts = (CASE WHEN locked_until IS NULL THEN failed_login_attempts ELSE 0 END) + 1,
                 locked_until = CASE
                     WHEN (CASE WHEN locked_until IS NULL THEN failed_login_attempts ELSE 0 END) + 1 >= ?2 THEN ?4
                     ELSE NULL END
             WHERE id = ?1 AND (locked_until IS NULL OR locked_until <= ?3)
             RETURNING failed_login_attempts",
            params![id, lock_after, now, lock_until],
            |r| r.get(0),
        )
        .optional()?;
    Ok(count.map(|n| n >= lock_after))
}

/// Gives back a guess of [`reserve_guess`] that was not a failure (a right password with a second
/// factor still due, or a request that could not be checked): one failure fewer, and the lock
/// the guess set, if it set one, is lifted.
pub fn release_guess(conn: &Connection, id: UserId, set_lock: bool) -> Result<()> {
    conn.execute(
        "UPDATE users SET failed_login_attempts = max(failed_login_attempts - 1, 0),
             locked_until = CASE WHEN ?2 THEN NULL ELSE locked_until END
         WHERE id = ?1",
        params![id, set_lock],
    )?;
    Ok(())
}

/// A successful login: clears the failure count and records when and from where.
pub fn record_login(conn: &Connection, id: UserId, now: Timestamp, ip: &str) -> Result<()> {
    conn.execute(
        "UPDATE users SET failed_login_attempts = 0, locked_until = NULL, last_login_at = ?2, last_login_ip = ?3 WHERE id = ?1",
        params![id, now, ip],
    )?;
    Ok(())
}

/// Sets a new password hash and lifts any lock.
pub fn set_password(conn: &Connection, id: UserId, hash: &str, now: Timestamp) -> Result<()> {
    let n = conn.execute(
        "UPDATE users SET password_hash = ?2, failed_login_attempts = 0, locked_until = NULL, updated_at = ?3 WHERE id = ?1",
        params![id, hash, now],
    )?;
    if n == 0 { Err(Error::NotFound) } else { Ok(()) }
}

/// Changes name and/or email; a taken email is `Duplicate`.
pub fn update_profile(
    conn: &Connection,
    id: UserId,
    name: Option<&str>,
    email: Option<&str>,
    now: Timestamp,
) -> Result<()> {
    if let Some(email) = email {
        let other: Option<UserId> = conn
            .query_row("SELECT id FROM users WHERE email = ?1 AND id != ?2", params![email, id], |r| r.get(0))
            .optional()?;
        if other.is_some() {
            return Err(Error::Duplicate);
        }
    }
    let n = conn.execute(
        "UPDATE users SET name = coalesce(?2, name), email = coalesce(?3, email), updated_at = ?4 WHERE id = ?1",
        params![id, name, email, now],
    )?;
    if n == 0 { Err(Error::NotFound) } else { Ok(()) }
}

pub fn set_preferences(conn: &Connection, id: UserId, json: &str, now: Timestamp) -> Result<()> {
    conn.execute("UPDATE users SET preferences_json = ?2, updated_at = ?3 WHERE id = ?1", params![id, json, now])?;
    Ok(())
}

pub fn set_blocked(conn: &Connection, id: UserId, blocked: bool) -> Result<()> {
    conn.execute("UPDATE users SET is_blocked = ?2 WHERE id = ?1", params![id, blocked])?;
    Ok(())
}

pub fn set_platform_admin(conn: &Connection, id: UserId, admin: bool) -> Result<()> {
    conn.execute("UPDATE users SET is_platform_admin = ?2 WHERE id = ?1", params![id, admin])?;
    Ok(())
}

pub fn set_default_tenant(conn: &Connection, id: UserId, tenant: Option<TenantId>) -> Result<()> {
    conn.execute("UPDATE users SET default_tenant_id = ?2 WHERE id = ?1", params![id, tenant])?;
    Ok(())
}

pub fn delete(conn: &Connection, id: UserId) -> Result<()> {
    let n = conn.execute("DELETE FROM users WHERE id = ?1", [id])?;
    if n == 0 { Err(Error::NotFound) } else { Ok(()) }
}

/// Filters of the admin user list.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub search: Option<String>,
    pub blocked: Option<bool>,
    pub tenant_id: Option<TenantId>,
    pub limit: u32,
    pub offset: u32,
}

/// Users matching the filter, newest first, and how many match in all.
pub fn list(conn: &Connection, f: &ListFilter) -> Result<(Vec<User>, u64)> {
    let search = f.search.as_ref().map(|s| format!("%{}%", s.replace(['%', '_'], "")));
    let filter = "(?1 IS NULL OR name LIKE ?1 OR email LIKE ?1)
         AND (?2 IS NULL OR is_blocked = ?2)
         AND (?3 IS NULL OR id IN (SELECT user_id FROM memberships WHERE tenant_id = ?3))";
    let total: i64 = conn.query_row(
        &format!("SELECT count(*) FROM users WHERE {filter}"),
        params![search, f.blocked, f.tenant_id],
        |r| r.get(0),
    )?;
    let mut stmt = conn
        .prepare(&format!("SELECT {COLS} FROM users WHERE {filter} ORDER BY created_at DESC, id LIMIT ?4 OFFSET ?5"))?;
    let rows = stmt
        .query_map(params![search, f.blocked, f.tenant_id, f.limit, f.offset], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((rows, total.max(0) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing;

    fn alice(email: &str) -> NewUser {
        NewUser { email: email.into(), name: "Alice".into(), password_hash: "x".into(), is_platform_admin: true }
    }

    #[tokio::test]
    async fn creates_user_team_and_admin_membership_and_refuses_duplicates() {
        let (store, _dir) = testing::store().await;
        let created =
            store.call(|c| create_with_team(c, &alice("alice@example.org"), "Alice's team")).await.expect("create");
        let (role, owner): (String, UserId) = store
            .call(move |c| {
                Ok(c.query_row(
                    "SELECT m.role, t.owner_user_id FROM memberships m JOIN tenants t ON t.id = m.tenant_id WHERE m.user_id = ?1",
                    [created.user_id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?)
            })
            .await
            .expect("query");
        assert_eq!(role, "admin");
        assert_eq!(owner, created.user_id);

        let dup = store.call(|c| create_with_team(c, &alice("ALICE@example.org"), "again")).await;
        assert!(matches!(dup, Err(Error::Duplicate)), "emails are unique regardless of case");
        assert_eq!(store.call(|c| count(c)).await.expect("count"), 1, "the failed attempt left nothing behind");
    }

    #[tokio::test]
    async fn five_failures_lock_and_a_login_clears_them() {
        let (store, _dir) = testing::store().await;
        let created = store.call(|c| create_with_team(c, &alice("a@example.org"), "t")).await.expect("create");
        let id = created.user_id;
        let at = |t: &str| -> Timestamp { t.parse().expect("time") };
        let (now, until) = (at("2026-01-01T00:00:00.000Z"), at("2100-01-01T00:00:00.000Z"));
        for i in 1..=5 {
            let guess = store.call(move |c| reserve_guess(c, id, 5, now, until)).await.expect("guess");
            assert_eq!(guess, Some(i == 5), "guess {i}");
        }
        let sixth = store.call(move |c| reserve_guess(c, id, 5, now, until)).await.expect("guess");
        assert_eq!(sixth, None, "no guess while locked");
        store.call(move |c| release_guess(c, id, false)).await.expect("release");
        let user = store.call(move |c| get(c, id)).await.expect("get");
        assert_eq!(user.failed_login_attempts, 4, "a released guess is not a failure; the lock stays");
        let later = at("2100-01-01T00:00:01.000Z");
        let after = store.call(move |c| reserve_guess(c, id, 5, later, until)).await.expect("guess");
        assert_eq!(after, Some(false), "an expired lock starts a new count");
        let user = store.call(move |c| get(c, id)).await.expect("get");
        assert_eq!((user.failed_login_attempts, user.locked_until), (1, None));
        store.call(move |c| reserve_guess(c, id, 2, later, until)).await.expect("guess");
        let user = store.call(move |c| get(c, id)).await.expect("get");
        assert_eq!(user.locked_until.map(|t| t.to_string()).as_deref(), Some("2100-01-01T00:00:00.000Z"));
        store
            .call(move |c| record_login(c, id, "2026-01-01T00:00:00.000Z".parse().expect("time"), "10.0.0.1"))
            .await
            .expect("login");
        let user = store.call(move |c| get(c, id)).await.expect("get");
        assert_eq!((user.failed_login_attempts, user.locked_until), (0, None));
        assert_eq!(user.last_login_ip.as_deref(), Some("10.0.0.1"));
    }
}
