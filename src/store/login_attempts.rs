//! The per-IP ledger behind the login and forgot-password rate limits. Kept in SQLite so a restart
//! does not reset a brute-force attempt's count.

use rusqlite::{Connection, params};

use super::Result;
use crate::time::Timestamp;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Login,
    ForgotPassword,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Login => "login",
            Kind::ForgotPassword => "forgot_password",
        }
    }
}

pub fn record(
    conn: &Connection,
    kind: Kind,
    ip: &str,
    email: Option<&str>,
    success: bool,
    now: Timestamp,
) -> Result<()> {
    conn.execute(
        "INSERT INTO login_attempts (kind, ip, email, success, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![kind.as_str(), ip, email, success, now],
    )?;
    Ok(())
}

/// Attempts of `kind` from `ip` since `since`.
pub fn count_since(conn: &Connection, kind: Kind, ip: &str, since: Timestamp) -> Result<u32> {
    Ok(conn.query_row(
        "SELECT count(*) FROM login_attempts WHERE kind = ?1 AND ip = ?2 AND created_at > ?3",
        params![kind.as_str(), ip, since],
        |r| r.get(0),
    )?)
}

/// Drops ledger rows older than `before` (housekeeping).
pub fn prune(conn: &Connection, before: Timestamp) -> Result<usize> {
    Ok(conn.execute("DELETE FROM login_attempts WHERE created_at < ?1", [before])?)
}
