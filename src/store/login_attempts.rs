//! The per-address ledger behind the login (and second-step) and forgot-password rate limits. Kept in SQLite so a restart does not
//! reset a brute-force attempt's count. A request takes its place in the ledger *before* the hub
//! does the work it budgets ([`reserve`]), so parallel requests cannot all slip under the limit.
//!
//! The `email` column holds only a fixed-length identifier (the caller hashes the address), never
//! the text a stranger sent.

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

/// Takes one place in `key`'s budget of `kind`: at most `limit` rows newer than `since`. One
/// statement, so two requests at once cannot both take the last place. Returns the row's id, or
/// `None` (and writes nothing) when the budget is spent.
pub fn reserve(
    conn: &Connection,
    kind: Kind,
    key: &str,
    ident: Option<&str>,
    since: Timestamp,
    limit: u32,
    now: Timestamp,
) -> Result<Option<i64>> {
    let inserted = conn.execute(
        "INSERT INTO login_attempts (kind, ip, email, success, created_at)
         SELECT ?1, ?2, ?3, 0, ?4
         WHERE (SELECT count(*) FROM login_attempts WHERE kind = ?1 AND ip = ?2 AND created_at > ?5) < ?6",
        params![kind.as_str(), key, ident, now, since, limit],
    )?;
    Ok((inserted == 1).then(|| conn.last_insert_rowid()))
}

/// Marks a reserved attempt as a success (the password or the code was right).
pub fn succeeded(conn: &Connection, id: i64) -> Result<()> {
    conn.execute("UPDATE login_attempts SET success = 1 WHERE id = ?1", [id])?;
    Ok(())
}

/// Attempts of `kind` from `key` since `since`.
pub fn count_since(conn: &Connection, kind: Kind, key: &str, since: Timestamp) -> Result<u32> {
    Ok(conn.query_row(
        "SELECT count(*) FROM login_attempts WHERE kind = ?1 AND ip = ?2 AND created_at > ?3",
        params![kind.as_str(), key, since],
        |r| r.get(0),
    )?)
}

/// Drops ledger rows older than `before` (housekeeping).
pub fn prune(conn: &Connection, before: Timestamp) -> Result<usize> {
    Ok(conn.execute("DELETE FROM login_attempts WHERE created_at < ?1", [before])?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing;

    #[tokio::test]
    async fn a_reservation_past_the_limit_writes_nothing() {
        let (store, _dir) = testing::store().await;
        let since: Timestamp = "2026-01-01T00:00:00.000Z".parse().expect("time");
        let now: Timestamp = "2026-01-01T00:05:00.000Z".parse().expect("time");
        let ids = store
            .call(move |c| {
                let mut ids = Vec::new();
                for _ in 0..4 {
                    ids.push(reserve(c, Kind::ForgotPassword, "10.0.0.1", None, since, 3, now)?);
                }
                ids.push(reserve(c, Kind::ForgotPassword, "10.0.0.2", None, since, 3, now)?);
                ids.push(reserve(c, Kind::Login, "10.0.0.1", Some("ab"), since, 3, now)?);
                Ok(ids)
            })
            .await
            .expect("reserve");
        let granted: Vec<bool> = ids.iter().map(Option::is_some).collect();
        assert_eq!(granted, [true, true, true, false, true, true]);
        let rows = store.call(move |c| count_since(c, Kind::ForgotPassword, "10.0.0.1", since)).await.expect("count");
        assert_eq!(rows, 3, "the refused request left no row");
    }
}
