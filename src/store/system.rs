//! What `GET /system/status` reads from the database as a whole: the file's size and its WAL,
//! a timed round trip, and the platform-wide counts (detections from the statistics rollups,
//! teams, accounts, stored audio). Nothing here is per team: only platform admins see it.

use std::time::Instant;

use rusqlite::Connection;

use super::Result;
use crate::time::Timestamp;

/// The database file as SQLite sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DatabaseFacts {
    /// Pages in use times the page size: the main file, without its WAL.
    pub size_bytes: u64,
    /// The write-ahead log beside it (0 when it was just checkpointed away).
    pub wal_bytes: u64,
    pub journal_mode: String,
    /// How long a real query took on this connection, in milliseconds.
    pub query_ms: f64,
}

pub fn database(conn: &Connection) -> Result<DatabaseFacts> {
    let started = Instant::now();
    let _tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema WHERE type = 'table'", [], |r| r.get(0))?;
    let query_ms = started.elapsed().as_secs_f64() * 1e3;
    let pages: i64 = conn.pragma_query_value(None, "page_count", |r| r.get(0))?;
    let page_size: i64 = conn.pragma_query_value(None, "page_size", |r| r.get(0))?;
    let journal_mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
    let file: String = conn.query_row("SELECT file FROM pragma_database_list WHERE name = 'main'", [], |r| r.get(0))?;
    let wal_bytes = if file.is_empty() { 0 } else { std::fs::metadata(format!("{file}-wal")).map_or(0, |m| m.len()) };
    Ok(DatabaseFacts { size_bytes: (pages.max(0) * page_size.max(0)) as u64, wal_bytes, journal_mode, query_ms })
}

/// Platform-wide counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    pub detections: u64,
    /// Detections on the hub's local calendar day of `now` (the rollups' day).
    pub detections_today: u64,
    pub tenants: u64,
    pub users: u64,
    pub satellites: u64,
    pub audio_chunks: u64,
    /// Bytes of stored audio, as recorded when each chunk was stored.
    pub audio_bytes: u64,
}

pub fn totals(conn: &Connection, now: Timestamp) -> Result<Totals> {
    let count = |sql: &str| -> Result<u64> { Ok(conn.query_row(sql, [], |r| r.get::<_, i64>(0))?.max(0) as u64) };
    let detections_today: i64 = conn
        .prepare_cached("SELECT coalesce(sum(n), 0) FROM stats_daily WHERE day = date(?1, 'localtime')")?
        .query_row([now], |r| r.get(0))?;
    let (audio_chunks, audio_bytes): (i64, i64) =
        conn.query_row("SELECT count(*), coalesce(sum(size_bytes), 0) FROM audio_chunks", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    Ok(Totals {
        detections: count("SELECT coalesce(sum(n), 0) FROM stats_monthly")?,
        detections_today: detections_today.max(0) as u64,
        tenants: count("SELECT count(*) FROM tenants")?,
        users: count("SELECT count(*) FROM users")?,
        satellites: count("SELECT count(*) FROM satellites")?,
        audio_chunks: audio_chunks.max(0) as u64,
        audio_bytes: audio_bytes.max(0) as u64,
    })
}
