//! Login sessions: one row per login, so a session can be ended before its JWT expires.

use rusqlite::{Connection, OptionalExtension, params};

use super::Result;
use crate::{ids::UserId, time::Timestamp};

pub fn create(
    conn: &Connection,
    user: UserId,
    ip: &str,
    user_agent: Option<&str>,
    expires_at: Timestamp,
) -> Result<String> {
    let id = uuid::Uuid::new_v4().to_string();
    conn.execute(
        "INSERT INTO sessions (id, user_id, ip, user_agent, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, user, ip, user_agent, expires_at],
    )?;
    Ok(id)
}

/// Whether the session exists for `user`, is not revoked and has not expired at `now`.
pub fn is_active(conn: &Connection, id: &str, user: UserId, now: Timestamp) -> Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM sessions WHERE id = ?1 AND user_id = ?2 AND revoked_at IS NULL AND expires_at > ?3",
            params![id, user, now],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

pub fn revoke(conn: &Connection, id: &str, now: Timestamp) -> Result<()> {
    conn.execute("UPDATE sessions SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL", params![id, now])?;
    Ok(())
}

/// Ends every session of `user` except `keep` (the caller's own, on a password change).
pub fn revoke_all(conn: &Connection, user: UserId, keep: Option<&str>, now: Timestamp) -> Result<usize> {
    Ok(conn.execute(
        "UPDATE sessions SET revoked_at = ?3 WHERE user_id = ?1 AND revoked_at IS NULL AND (?2 IS NULL OR id != ?2)",
        params![user, keep, now],
    )?)
}
