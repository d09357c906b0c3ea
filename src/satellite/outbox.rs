//! The satellite's durable outbox (SPEC 2.3, 2.6): every chunk that passes the gate is written
//! here (WAV file under `audio/` plus a row in `outbox.db`) before it is published. An `ack`
//! with `stored` marks it acked; eviction follows the soft and hard size caps and the age cap.
//! The same database keeps the `filterStats` counters and the last good `config` push.
//!
//! Layout: `DIR/outbox.db` (SQLite, WAL, `synchronous = FULL`) and `DIR/audio/<chunkId>.wav`.
//! A push writes and fsyncs the file (and the directory) before it commits the row, so a row
//! that exists always had its audio on disk; once `push` returns, the chunk survives a SIGKILL.
//!
//! Row states: `unacked` (waiting for a `stored` ack; re-sent after a reconnect, oldest first),
//! `acked` (the hub has it; the file stays until the soft cap evicts it, and its bytes count),
//! `failed` (the hub answered `error` `max_attempts` times: the file is deleted, the row stays as
//! a counter until the age cap, and it is never sent again). `attempts` counts `error` acks only:
//! a chunk lost in transit (no ack at all) is no error and is re-sent until it is acked or evicted.
//! Caps: see the module docs of `outbox/evict.rs` (age, then soft, then hard cap).
//!
//! At open, files in `audio/` that no row refers to and that are over an hour old are deleted
//! (younger orphans are left, and every orphan counts in `diskBytes` until then).

mod db;
mod evict;
mod files;
#[cfg(test)]
mod tests;

use std::{
    collections::HashSet,
    path::{Path, PathBuf},
};

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{chunk::CapturedChunk, gate::FilterStats};

pub use evict::{EvictionStats, MB};

/// `outboxStats` of the heartbeat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxStats {
    pub total_bytes: u64,
    pub acked_bytes: u64,
    pub unacked_bytes: u64,
    pub row_count: u64,
    pub unacked_count: u64,
    /// The real size of the audio directory, orphan files included.
    pub disk_bytes: u64,
}

/// The size and age caps of a `config` push (MB = MiB; `max_age_hours` 0 = no age cap; a soft
/// cap above the hard cap acts as the hard cap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    pub soft_mb: u32,
    pub hard_mb: u32,
    pub max_age_hours: u32,
}

/// A row waiting to be published.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub chunk_id: uuid::Uuid,
    pub recorded_at: DateTime<Utc>,
    pub duration_ms: u32,
    /// The WAV file, as stored.
    pub wav: Vec<u8>,
    /// How often it was published already (`mark_sent` calls; not the `error` acks).
    pub attempts: u32,
}

/// What an `ack` did to the outbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckOutcome {
    Acked,
    /// An `error` ack; the row will be sent again later.
    WillRetry,
    /// An `error` ack after the last allowed attempt: the row is counted as failed, never sent again.
    Failed,
    /// No such row (already evicted, or an ack for a chunk this satellite never had).
    Unknown,
}

#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    #[error("outbox database: {0}")]
    Db(#[from] rusqlite::Error),
    #[error("outbox files: {0}")]
    Io(#[from] std::io::Error),
    /// The chunk does not fit under the hard cap even after evicting everything evictable.
    #[error("the outbox is full (hard cap {0} MB)")]
    Full(u32),
}

/// The outbox; blocking (SQLite and files): call it from a blocking thread.
pub struct Outbox {
    conn: Connection,
    audio: PathBuf,
    caps: Caps,
    max_attempts: u32,
}

impl Outbox {
    /// Opens (or creates) the outbox under `dir`, and deletes orphan files over an hour old.
    pub fn open(dir: &Path, caps: Caps, max_attempts: u32) -> Result<Self, OutboxError> {
        let audio = dir.join("audio");
        std::fs::create_dir_all(&audio)?;
        let conn = db::open(&dir.join("outbox.db"))?;
        let outbox = Self { conn, audio, caps, max_attempts: max_attempts.max(1) };
        let known: HashSet<String> = {
            let mut stmt = outbox.conn.prepare("SELECT chunk_id FROM chunks WHERE state != 'failed'")?;
            stmt.query_map([], |r| r.get::<_, String>(0))?.collect::<Result<_, _>>()?
        };
        let removed = files::clean_orphans(&outbox.audio, &known, std::time::SystemTime::now())?;
        if removed > 0 {
            tracing::info!("outbox: deleted {removed} orphan file(s) from {}", outbox.audio.display());
        }
        Ok(outbox)
    }

    /// Applies new caps (they take effect at the next push or [`Outbox::evict`]).
    pub fn set_caps(&mut self, caps: Caps) {
        self.caps = caps;
    }

    /// The caps in force.
    pub fn caps(&self) -> Caps {
        self.caps
    }

    /// Stores a chunk durably (file fsynced, row committed) after evicting what the caps demand.
    pub fn push(&mut self, chunk: &CapturedChunk, now: DateTime<Utc>) -> Result<uuid::Uuid, OutboxError> {
        let wav = chunk.to_wav();
        if wav.is_empty() {
            return Err(OutboxError::Io(std::io::Error::other("the chunk could not be encoded as WAV")));
        }
        self.enforce(now, wav.len() as u64)?;
        let chunk_id = uuid::Uuid::new_v4();
        let path = files::wav_path(&self.audio, &chunk_id);
        files::write_durable(&self.audio, &path, &wav)?;
        let inserted = self.conn.execute(
            "INSERT INTO chunks (chunk_id, recorded_at, duration_ms, bytes, state, created_at)
             VALUES (?1, ?2, ?3, ?4, 'unacked', ?5)",
            params![
                chunk_id.to_string(),
                db::to_ms(chunk.recorded_at),
                i64::from(chunk.duration_ms()),
                wav.len() as i64,
                db::to_ms(now)
            ],
        );
        if let Err(e) = inserted {
            files::remove_all(&self.audio, &[chunk_id]);
            return Err(e.into());
        }
        Ok(chunk_id)
    }

    /// Up to `limit` unacked, unfailed rows, oldest first, not sent since `resend_before`.
    /// A row whose file has vanished is dropped (logged and counted as `missing_files`).
    pub fn due(&mut self, limit: usize, resend_before: DateTime<Utc>) -> Result<Vec<Pending>, OutboxError> {
        let mut out = Vec::with_capacity(limit.min(64));
        loop {
            let want = limit - out.len();
            if want == 0 {
                return Ok(out);
            }
            let rows: Vec<(String, i64, i64, i64)> = {
                let mut stmt = self.conn.prepare_cached(
                    "SELECT chunk_id, recorded_at, duration_ms, sends FROM chunks
                     WHERE state = 'unacked' AND (last_sent_at IS NULL OR last_sent_at < ?1)
                     ORDER BY recorded_at, created_at LIMIT ?2 OFFSET ?3",
                )?;
                stmt.query_map(params![db::to_ms(resend_before), want as i64, out.len() as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })?
                .collect::<Result<_, _>>()?
            };
            if rows.is_empty() {
                return Ok(out);
            }
            let mut dropped = false;
            for (id, recorded_at, duration_ms, sends) in rows {
                let Ok(chunk_id) = uuid::Uuid::parse_str(&id) else {
                    tracing::warn!("outbox: dropping a row with a malformed chunk id {id:?}");
                    self.conn.execute("DELETE FROM chunks WHERE chunk_id = ?1", [&id])?;
                    dropped = true;
                    continue;
                };
                let path = files::wav_path(&self.audio, &chunk_id);
                match std::fs::read(&path) {
                    Ok(wav) => out.push(Pending {
                        chunk_id,
                        recorded_at: db::from_ms(recorded_at),
                        duration_ms: duration_ms.clamp(0, i64::from(u32::MAX)) as u32,
                        wav,
                        attempts: sends.clamp(0, i64::from(u32::MAX)) as u32,
                    }),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        tracing::warn!("outbox: {} vanished; dropping unacked chunk {chunk_id}", path.display());
                        let tx = self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                        tx.execute("DELETE FROM chunks WHERE chunk_id = ?1", [&id])?;
                        evict::bump(&tx, |c| c.missing_files += 1)?;
                        tx.commit()?;
                        dropped = true;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            if !dropped {
                return Ok(out);
            }
            // Dropped rows shifted the window: OFFSET counts only the rows kept, so ask again.
        }
    }

    /// Records that a row was published now.
    pub fn mark_sent(&mut self, chunk_id: uuid::Uuid, now: DateTime<Utc>) -> Result<(), OutboxError> {
        self.conn.execute(
            "UPDATE chunks SET last_sent_at = ?1, sends = sends + 1 WHERE chunk_id = ?2 AND state = 'unacked'",
            params![db::to_ms(now), chunk_id.to_string()],
        )?;
        Ok(())
    }

    /// Applies an `ack` (status `stored` or `error`). An `error` ack below `max_attempts` counts
    /// one attempt and makes the row due again after the resend interval, counted from `now`. Acks are idempotent: a repeated `stored`
    /// ack answers `Acked` again; an `error` ack for an acked row changes nothing (`Acked`), for
    /// a failed row `Failed`. A late `stored` ack for a failed row marks it acked (the hub has it).
    pub fn ack(
        &mut self,
        chunk_id: uuid::Uuid,
        stored: bool,
        error: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<AckOutcome, OutboxError> {
        let id = chunk_id.to_string();
        let row: Option<(String, i64)> = self
            .conn
            .query_row("SELECT state, attempts FROM chunks WHERE chunk_id = ?1", [&id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let Some((state, attempts)) = row else { return Ok(AckOutcome::Unknown) };
        if stored {
            if state != "acked" {
                self.conn.execute(
                    "UPDATE chunks SET state = 'acked', acked_at = ?1 WHERE chunk_id = ?2",
                    params![db::to_ms(now), &id],
                )?;
            }
            return Ok(AckOutcome::Acked);
        }
        match state.as_str() {
            "acked" => return Ok(AckOutcome::Acked),
            "failed" => return Ok(AckOutcome::Failed),
            _ => {}
        }
        let attempts = attempts + 1;
        let error = error.unwrap_or("(no error text)");
        if attempts >= i64::from(self.max_attempts) {
            self.conn.execute(
                "UPDATE chunks SET state = 'failed', attempts = ?1, last_error = ?2, bytes = 0 WHERE chunk_id = ?3",
                params![attempts, error, &id],
            )?;
            files::remove_all(&self.audio, &[chunk_id]);
            tracing::warn!("outbox: chunk {chunk_id} failed after {attempts} error ack(s), last: {error}");
            Ok(AckOutcome::Failed)
        } else {
            // Due again once the caller's resend interval has passed since this answer: a hub
            // that is failing for a while does not burn through the attempts in a second.
            self.conn.execute(
                "UPDATE chunks SET attempts = ?1, last_error = ?2, last_sent_at = ?3 WHERE chunk_id = ?4",
                params![attempts, error, db::to_ms(now), &id],
            )?;
            Ok(AckOutcome::WillRetry)
        }
    }

    /// Enforces the caps now (age cap included).
    pub fn evict(&mut self, now: DateTime<Utc>) -> Result<(), OutboxError> {
        self.enforce(now, 0)
    }

    /// Sizes and counts for the heartbeat; `disk_bytes` is measured on disk.
    pub fn stats(&mut self) -> Result<OutboxStats, OutboxError> {
        let (total, acked, unacked, rows, unacked_rows): (i64, i64, i64, i64, i64) = self.conn.query_row(
            "SELECT COALESCE(SUM(bytes), 0),
                    COALESCE(SUM(CASE WHEN state = 'acked' THEN bytes END), 0),
                    COALESCE(SUM(CASE WHEN state = 'unacked' THEN bytes END), 0),
                    COUNT(*),
                    COALESCE(SUM(state = 'unacked'), 0)
             FROM chunks",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )?;
        let u = |v: i64| v.max(0) as u64;
        Ok(OutboxStats {
            total_bytes: u(total),
            acked_bytes: u(acked),
            unacked_bytes: u(unacked),
            row_count: u(rows),
            unacked_count: u(unacked_rows),
            disk_bytes: files::disk_bytes(&self.audio)?,
        })
    }

    /// Rows counted as failed (an `error` ack on every allowed attempt).
    pub fn failed_count(&mut self) -> Result<u64, OutboxError> {
        let n: i64 = self.conn.query_row("SELECT COUNT(*) FROM chunks WHERE state = 'failed'", [], |r| r.get(0))?;
        Ok(n.max(0) as u64)
    }

    /// The persisted `filterStats` (zeros the first time, or if the stored JSON is unreadable).
    pub fn filter_stats(&mut self) -> Result<FilterStats, OutboxError> {
        let Some(json) = db::kv_get(&self.conn, db::KEY_FILTER_STATS)? else { return Ok(FilterStats::default()) };
        Ok(serde_json::from_str(&json).unwrap_or_else(|e| {
            tracing::warn!("outbox: stored filter stats are unreadable ({e}); starting from zero");
            FilterStats::default()
        }))
    }

    /// Persists the `filterStats` counters.
    pub fn save_filter_stats(&mut self, stats: &FilterStats) -> Result<(), OutboxError> {
        let json = serde_json::to_string(stats).map_err(std::io::Error::other)?;
        Ok(db::kv_set(&self.conn, db::KEY_FILTER_STATS, &json)?)
    }

    /// The last good `config` push (JSON), if any.
    pub fn last_config(&mut self) -> Result<Option<String>, OutboxError> {
        Ok(db::kv_get(&self.conn, db::KEY_CONFIG)?)
    }

    /// Persists the last good `config` push (JSON text, stored as given).
    pub fn save_config(&mut self, json: &str) -> Result<(), OutboxError> {
        Ok(db::kv_set(&self.conn, db::KEY_CONFIG, json)?)
    }
}
