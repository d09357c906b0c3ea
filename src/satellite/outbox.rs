//! The satellite's durable outbox (SPEC 2.3, 2.6): every chunk that passes the gate is written
//! here (WAV file under `audio/` plus a row in `outbox.db`) before it is published. An `ack`
//! with `stored` marks it acked; eviction follows the soft and hard size caps and the age cap.
//! The same database keeps the `filterStats` counters and the last good `config` push.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{chunk::CapturedChunk, gate::FilterStats};

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

/// The size and age caps of a `config` push.
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
    pub wav: Vec<u8>,
    /// How often it was published already.
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
    _private: (),
}

impl Outbox {
    /// Opens (or creates) the outbox under `dir`.
    pub fn open(_dir: &Path, _caps: Caps, _max_attempts: u32) -> Result<Self, OutboxError> {
        todo!("outbox helper")
    }

    pub fn set_caps(&mut self, _caps: Caps) {
        todo!("outbox helper")
    }

    /// Stores a chunk durably (file fsynced, row committed) after evicting what the caps demand.
    pub fn push(&mut self, _chunk: &CapturedChunk, _now: DateTime<Utc>) -> Result<uuid::Uuid, OutboxError> {
        todo!("outbox helper")
    }

    /// Up to `limit` unacked, unfailed rows, oldest first, not sent since `resend_before`.
    pub fn due(&mut self, _limit: usize, _resend_before: DateTime<Utc>) -> Result<Vec<Pending>, OutboxError> {
        todo!("outbox helper")
    }

    /// Records that a row was published now.
    pub fn mark_sent(&mut self, _chunk_id: uuid::Uuid, _now: DateTime<Utc>) -> Result<(), OutboxError> {
        todo!("outbox helper")
    }

    /// Applies an `ack` (status `stored` or `error`).
    pub fn ack(
        &mut self,
        _chunk_id: uuid::Uuid,
        _stored: bool,
        _error: Option<&str>,
        _now: DateTime<Utc>,
    ) -> Result<AckOutcome, OutboxError> {
        todo!("outbox helper")
    }

    /// Enforces the caps now (age cap included).
    pub fn evict(&mut self, _now: DateTime<Utc>) -> Result<(), OutboxError> {
        todo!("outbox helper")
    }

    pub fn stats(&mut self) -> Result<OutboxStats, OutboxError> {
        todo!("outbox helper")
    }

    pub fn filter_stats(&mut self) -> Result<FilterStats, OutboxError> {
        todo!("outbox helper")
    }

    pub fn save_filter_stats(&mut self, _stats: &FilterStats) -> Result<(), OutboxError> {
        todo!("outbox helper")
    }

    /// The last good `config` push (JSON), if any.
    pub fn last_config(&mut self) -> Result<Option<String>, OutboxError> {
        todo!("outbox helper")
    }

    pub fn save_config(&mut self, _json: &str) -> Result<(), OutboxError> {
        todo!("outbox helper")
    }
}
