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
    /// Detections on today's date in the hub's zone (each counted on its station's local day).
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
    // Hub-wide: no team's zone applies, so the hub's own decides which date is today.
    let today = super::stats::day_key(crate::domain::zone::local_day(now.at(), crate::time::hub_zone()));
    let detections_today: i64 = conn
        .prepare_cached("SELECT coalesce(sum(n), 0) FROM stats_satellite_days WHERE day = ?1")?
        .query_row([today], |r| r.get(0))?;
    let (audio_chunks, audio_bytes): (i64, i64) =
        conn.query_row("SELECT count(*), coalesce(sum(size_bytes), 0) FROM audio_chunks", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    Ok(Totals {
        detections: count("SELECT coalesce(sum(n), 0) FROM stats_satellite_months")?,
        detections_today: detections_today.max(0) as u64,
        tenants: count("SELECT count(*) FROM tenants")?,
        users: count("SELECT count(*) FROM users")?,
        satellites: count("SELECT count(*) FROM satellites")?,
        audio_chunks: audio_chunks.max(0) as u64,
        audio_bytes: audio_bytes.max(0) as u64,
    })
}

/// Free pages kept in the file for new rows to reuse; only those beyond are given back.
pub const FREE_PAGES_KEPT: u64 = 16_384;
/// Pages given back per statement, so writers wait for at most one short step.
const GIVE_BACK_STEP: u64 = 2_048;

/// Gives the file's free pages beyond [`FREE_PAGES_KEPT`] back to the filesystem (`PRAGMA
/// incremental_vacuum`), in steps. A no-op unless the file is in `auto_vacuum = INCREMENTAL`
/// (new databases, and old ones once compacted by `store::migrate::compact`). Returns the
/// pages given back.
pub fn give_back_free_pages(conn: &Connection) -> Result<u64> {
    let mode: i64 = conn.pragma_query_value(None, "auto_vacuum", |r| r.get(0))?;
    if mode != 2 {
        return Ok(0);
    }
    let mut given = 0;
    loop {
        let free = conn.pragma_query_value(None, "freelist_count", |r| r.get::<_, i64>(0))?.max(0) as u64;
        let excess = free.saturating_sub(FREE_PAGES_KEPT);
        if excess == 0 {
            return Ok(given);
        }
        let step = excess.min(GIVE_BACK_STEP);
        // The pragma returns no rows; stepping it through to the end does the work.
        conn.prepare(&format!("PRAGMA incremental_vacuum({step})"))?.query([])?.next()?;
        given += step;
    }
}
