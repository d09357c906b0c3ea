//! The outbox database: opening it (WAL, `synchronous = FULL`: a committed row survives a
//! SIGKILL or a power cut), its schema, and the small key/value table for the persisted JSON.

use std::{path::Path, time::Duration};

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

/// The schema version in `PRAGMA user_version`.
const VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS chunks (
    chunk_id     TEXT PRIMARY KEY,
    recorded_at  INTEGER NOT NULL,           -- ms since the epoch
    duration_ms  INTEGER NOT NULL,
    bytes        INTEGER NOT NULL,           -- size of the WAV file; 0 once the file is gone (failed)
    state        TEXT NOT NULL CHECK (state IN ('unacked', 'acked', 'failed')),
    attempts     INTEGER NOT NULL DEFAULT 0, -- `error` acks received
    sends        INTEGER NOT NULL DEFAULT 0, -- times published
    last_sent_at INTEGER,                    -- ms since the epoch
    last_error   TEXT,
    acked_at     INTEGER,                    -- ms since the epoch; when the `stored` ack came
    created_at   INTEGER NOT NULL            -- ms since the epoch; the age cap counts from here
);
CREATE INDEX IF NOT EXISTS chunks_state_recorded ON chunks (state, recorded_at);
CREATE INDEX IF NOT EXISTS chunks_created ON chunks (created_at);
CREATE TABLE IF NOT EXISTS kv (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
";

/// Keys of the `kv` table.
pub const KEY_FILTER_STATS: &str = "filter_stats";
pub const KEY_CONFIG: &str = "config";
pub const KEY_EVICTIONS: &str = "evictions";

/// Opens (creating) the database file and brings its schema up to date.
pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!("outbox: {} stays in journal mode {mode}", path.display());
    }
    conn.pragma_update(None, "synchronous", "FULL")?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version < VERSION {
        conn.execute_batch(SCHEMA)?;
        conn.pragma_update(None, "user_version", VERSION)?;
    }
    Ok(conn)
}

pub fn kv_get(conn: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row("SELECT value FROM kv WHERE key = ?1", [key], |r| r.get(0)).optional()
}

pub fn kv_set(conn: &Connection, key: &str, value: &str) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO kv (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        params![key, value],
    )?;
    Ok(())
}

/// Milliseconds since the epoch, as stored.
pub fn to_ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

pub fn from_ms(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or(DateTime::UNIX_EPOCH)
}
