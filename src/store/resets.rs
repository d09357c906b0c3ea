//! Password reset tokens: 60 minutes, single use, stored as SHA-256.

use rusqlite::{Connection, OptionalExtension, params};

use super::Result;
use crate::{ids::UserId, time::Timestamp};

pub fn create(conn: &Connection, user: UserId, token_hash: &str, expires_at: Timestamp, ip: &str) -> Result<()> {
    conn.execute(
        "INSERT INTO password_reset_tokens (id, user_id, token_hash, expires_at, request_ip) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![uuid::Uuid::new_v4().to_string(), user, token_hash, expires_at, ip],
    )?;
    Ok(())
}

/// A token as found: its user, expiry and whether it was used.
#[derive(Debug, Clone)]
pub struct Token {
    pub id: String,
    pub user_id: UserId,
    pub expires_at: Timestamp,
    pub used_at: Option<Timestamp>,
}

pub fn find(conn: &Connection, token_hash: &str) -> Result<Option<Token>> {
    Ok(conn
        .query_row(
            "SELECT id, user_id, expires_at, used_at FROM password_reset_tokens WHERE token_hash = ?1",
            [token_hash],
            |r| Ok(Token { id: r.get(0)?, user_id: r.get(1)?, expires_at: r.get(2)?, used_at: r.get(3)? }),
        )
        .optional()?)
}

/// Marks the token used; false when it already was (a concurrent second use loses).
pub fn mark_used(conn: &Connection, id: &str, now: Timestamp) -> Result<bool> {
    Ok(conn
        .execute("UPDATE password_reset_tokens SET used_at = ?2 WHERE id = ?1 AND used_at IS NULL", params![id, now])?
        == 1)
}

/// Spends every unused reset link of `user` (the password or the email changed): a link mailed
/// before the change no longer sets a password. Returns how many were spent.
pub fn spend_all(conn: &Connection, user: UserId, now: Timestamp) -> Result<usize> {
    Ok(conn.execute(
        "UPDATE password_reset_tokens SET used_at = ?2 WHERE user_id = ?1 AND used_at IS NULL",
        params![user, now],
    )?)
}
