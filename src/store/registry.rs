//! The service registry table (`service_registry`): one row per running process on this data dir,
//! keyed `{prefix}:registry:{service}:{instanceId}` (SPEC 2.21), upserted by that process's registry
//! task and readable by every other process on the same database file. A row whose `expires_at`
//! has passed is a process that stopped refreshing: readers skip it and [`prune`] deletes it.

use rusqlite::{Connection, params};

use super::Result;
use crate::time::Timestamp;

/// One live row as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub key: String,
    pub service: String,
    pub instance_id: String,
    /// The entry as JSON, as its process wrote it.
    pub info: String,
    /// When its process last refreshed it.
    pub seen_at: Timestamp,
    pub expires_at: Timestamp,
}

/// Writes (or refreshes) one process's row.
pub fn upsert(conn: &Connection, row: &Row) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO service_registry (key, service, instance_id, info, seen_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (key) DO UPDATE SET info = excluded.info, seen_at = excluded.seen_at,
             expires_at = excluded.expires_at",
    )?
    .execute(params![row.key, row.service, row.instance_id, row.info, row.seen_at, row.expires_at])?;
    Ok(())
}

/// Every row still alive at `now` whose key starts with `prefix`, by service then instance.
pub fn live(conn: &Connection, prefix: &str, now: Timestamp) -> Result<Vec<Row>> {
    let mut stmt = conn.prepare_cached(
        "SELECT key, service, instance_id, info, seen_at, expires_at FROM service_registry
         WHERE expires_at > ?1 AND substr(key, 1, length(?2)) = ?2 ORDER BY service, instance_id",
    )?;
    let rows = stmt.query_map(params![now, prefix], |r| {
        Ok(Row {
            key: r.get(0)?,
            service: r.get(1)?,
            instance_id: r.get(2)?,
            info: r.get(3)?,
            seen_at: r.get(4)?,
            expires_at: r.get(5)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Deletes rows expired at `now`; returns how many.
pub fn prune(conn: &Connection, now: Timestamp) -> Result<usize> {
    Ok(conn.prepare_cached("DELETE FROM service_registry WHERE expires_at <= ?1")?.execute([now])?)
}

/// Deletes one row (a process stopping cleanly leaves the list at once).
pub fn remove(conn: &Connection, key: &str) -> Result<()> {
    conn.prepare_cached("DELETE FROM service_registry WHERE key = ?1")?.execute([key])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: &str, seen: &str, expires: &str) -> Row {
        Row {
            key: key.into(),
            service: key.split(':').nth(2).unwrap_or_default().into(),
            instance_id: key.split(':').nth(3).unwrap_or_default().into(),
            info: "{}".into(),
            seen_at: seen.parse().expect("time"),
            expires_at: expires.parse().expect("time"),
        }
    }

    #[tokio::test]
    async fn expired_rows_are_skipped_then_pruned_and_a_refresh_replaces_the_row() {
        let (store, _dir) = crate::store::testing::store().await;
        let listed = store
            .call(|c| {
                upsert(c, &row("bh:registry:api:a", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:30.000Z"))?;
                upsert(c, &row("bh:registry:dispatcher:d", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:10.000Z"))?;
                upsert(c, &row("other:registry:api:x", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:30.000Z"))?;
                let now: Timestamp = "2026-01-01T00:00:20.000Z".parse().expect("time");
                let live = live(c, "bh:registry:", now)?;
                let pruned = prune(c, now)?;
                upsert(c, &row("bh:registry:api:a", "2026-01-01T00:00:20.000Z", "2026-01-01T00:00:50.000Z"))?;
                let later = live_keys(c, "2026-01-01T00:00:40.000Z")?;
                Ok((live.into_iter().map(|r| r.key).collect::<Vec<_>>(), pruned, later))
            })
            .await
            .expect("store");
        assert_eq!(listed.0, ["bh:registry:api:a"], "the expired dispatcher and another prefix are not listed");
        assert_eq!(listed.1, 1, "only the expired row is pruned");
        assert_eq!(listed.2, ["bh:registry:api:a"], "the refreshed row lives past its first expiry");
    }

    fn live_keys(c: &Connection, now: &str) -> Result<Vec<String>> {
        Ok(live(c, "bh:registry:", now.parse().expect("time"))?.into_iter().map(|r| r.key).collect())
    }
}
