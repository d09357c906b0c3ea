//! The outbox's caps (SPEC 2.5, 2.6), enforced before every push and on [`Outbox::evict`]:
//!
//! 1. **Age**: rows created more than `max_age_hours` ago go, whatever their state (0 = no age
//!    cap). Unacked audio dropped this way is counted in `dropped_unacked` and logged.
//! 2. **Soft cap**: while the stored bytes (plus the incoming chunk) exceed `soft_mb`, the oldest
//!    acked rows go. Unacked rows are never touched by the soft cap.
//! 3. **Hard cap**: the stored bytes plus the incoming chunk must never exceed `hard_mb`: acked
//!    rows go first, then failed ones still holding a file, then the oldest unacked rows (a
//!    warning; the loss is counted). A chunk larger than the cap on its own is refused.
//!
//! "Oldest" is by `created_at`, then `recorded_at`. Sizes are in MiB (1 MB here = 1,048,576 bytes).
//! Rows go first (one committed transaction, counters included), files after: a crash in between
//! leaves orphan files, which `diskBytes` reports and `open` cleans, never a row without audio.

use chrono::{DateTime, Duration, Utc};
use rusqlite::{Transaction, params};
use serde::{Deserialize, Serialize};

use super::{Outbox, OutboxError, db, files};

/// Bytes in one MB of the caps.
pub const MB: u64 = 1 << 20;

/// What eviction removed since the outbox was created (persisted across restarts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EvictionStats {
    /// Rows removed by the age cap (any state).
    pub evicted_age: u64,
    /// Acked rows removed by the soft cap.
    pub evicted_soft: u64,
    /// Rows removed by the hard cap (any state).
    pub evicted_hard: u64,
    /// Unacked rows (audio the hub never stored) among the above.
    pub dropped_unacked: u64,
    /// Unacked rows dropped because their WAV file had vanished from disk.
    pub missing_files: u64,
}

/// Which cap removed a set of rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cap {
    Age,
    Soft,
    Hard,
}

/// A row picked for eviction.
struct Victim {
    id: uuid::Uuid,
    bytes: u64,
    unacked: bool,
}

impl Outbox {
    /// Enforces the caps for a chunk of `incoming` bytes about to be stored (0: none).
    pub(super) fn enforce(&mut self, now: DateTime<Utc>, incoming: u64) -> Result<(), OutboxError> {
        let hard = u64::from(self.caps.hard_mb) * MB;
        if incoming > hard {
            return Err(OutboxError::Full(self.caps.hard_mb));
        }
        if self.caps.max_age_hours > 0 {
            let cutoff = now - Duration::hours(i64::from(self.caps.max_age_hours));
            let victims = self.select(
                "SELECT chunk_id, bytes, state FROM chunks WHERE created_at < ?1 ORDER BY created_at, recorded_at",
                db::to_ms(cutoff),
                u64::MAX,
            )?;
            self.remove(&victims, Cap::Age)?;
        }
        let soft = (u64::from(self.caps.soft_mb) * MB).min(hard);
        let total = self.total_bytes()?;
        if total + incoming > soft {
            let victims = self.select(
                "SELECT chunk_id, bytes, state FROM chunks WHERE state = 'acked' AND bytes > ?1
                 ORDER BY created_at, recorded_at",
                0,
                total + incoming - soft,
            )?;
            self.remove(&victims, Cap::Soft)?;
        }
        let total = self.total_bytes()?;
        if total + incoming > hard {
            let victims = self.select(
                "SELECT chunk_id, bytes, state FROM chunks WHERE bytes > ?1
                 ORDER BY CASE state WHEN 'acked' THEN 0 WHEN 'failed' THEN 1 ELSE 2 END, created_at, recorded_at",
                0,
                total + incoming - hard,
            )?;
            self.remove(&victims, Cap::Hard)?;
        }
        Ok(())
    }

    /// The bytes the rows account for.
    pub(super) fn total_bytes(&self) -> Result<u64, OutboxError> {
        let total: i64 = self.conn.query_row("SELECT COALESCE(SUM(bytes), 0) FROM chunks", [], |r| r.get(0))?;
        Ok(total.max(0) as u64)
    }

    /// The eviction counters.
    pub fn eviction_stats(&self) -> Result<EvictionStats, OutboxError> {
        Ok(read_counters(&self.conn)?)
    }

    /// Rows of `sql` (bound to `arg`) in its order, until their bytes reach `enough`.
    fn select(&self, sql: &str, arg: i64, enough: u64) -> Result<Vec<Victim>, OutboxError> {
        let mut stmt = self.conn.prepare(sql)?;
        let mut rows = stmt.query([arg])?;
        let (mut picked, mut freed) = (Vec::new(), 0u64);
        while freed < enough {
            let Some(row) = rows.next()? else { break };
            let id: String = row.get(0)?;
            let bytes: i64 = row.get(1)?;
            let state: String = row.get(2)?;
            let Ok(id) = uuid::Uuid::parse_str(&id) else {
                tracing::warn!("outbox: ignoring a row with a malformed chunk id {id:?}");
                continue;
            };
            let bytes = bytes.max(0) as u64;
            freed += bytes;
            picked.push(Victim { id, bytes, unacked: state == "unacked" });
        }
        Ok(picked)
    }

    /// Deletes the rows and counts them (one transaction), then removes their files.
    fn remove(&mut self, victims: &[Victim], cap: Cap) -> Result<(), OutboxError> {
        if victims.is_empty() {
            return Ok(());
        }
        let unacked: Vec<&Victim> = victims.iter().filter(|v| v.unacked).collect();
        let tx = self.conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        for v in victims {
            tx.execute("DELETE FROM chunks WHERE chunk_id = ?1", params![v.id.to_string()])?;
        }
        bump(&tx, |c| {
            let n = victims.len() as u64;
            match cap {
                Cap::Age => c.evicted_age += n,
                Cap::Soft => c.evicted_soft += n,
                Cap::Hard => c.evicted_hard += n,
            }
            c.dropped_unacked += unacked.len() as u64;
        })?;
        tx.commit()?;
        let ids: Vec<uuid::Uuid> = victims.iter().map(|v| v.id).collect();
        files::remove_all(&self.audio, &ids);
        let bytes: u64 = victims.iter().map(|v| v.bytes).sum();
        match cap {
            Cap::Soft => tracing::debug!("outbox: soft cap evicted {} acked chunk(s), {bytes} bytes", ids.len()),
            Cap::Age | Cap::Hard => tracing::info!("outbox: {cap:?} cap evicted {} chunk(s), {bytes} bytes", ids.len()),
        }
        if !unacked.is_empty() {
            tracing::warn!(
                "outbox: the {} cap dropped {} unacked chunk(s) the hub never stored (oldest {})",
                format!("{cap:?}").to_lowercase(),
                unacked.len(),
                unacked[0].id
            );
        }
        Ok(())
    }
}

/// Reads the persisted counters (zeros when absent or unreadable).
pub(super) fn read_counters(conn: &rusqlite::Connection) -> rusqlite::Result<EvictionStats> {
    Ok(db::kv_get(conn, db::KEY_EVICTIONS)?.and_then(|json| serde_json::from_str(&json).ok()).unwrap_or_default())
}

/// Updates the persisted counters inside `tx`.
pub(super) fn bump(tx: &Transaction<'_>, update: impl FnOnce(&mut EvictionStats)) -> rusqlite::Result<()> {
    let mut counters = read_counters(tx)?;
    update(&mut counters);
    let json = serde_json::to_string(&counters).unwrap_or_else(|_| "{}".into());
    db::kv_set(tx, db::KEY_EVICTIONS, &json)
}
