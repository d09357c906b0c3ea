//! Which chunks' audio retention may delete, in what order, and the two-step mark of a deletion
//! (see `migrations/0015_audio_retention.sql`). Rows are never deleted here, only their audio.
//!
//! Tiers, deleted in this order:
//! - [`Tier::Plain`]: chunks without detections, or whose detections are all unverified
//!   (`pending_review`/`unverified`), not rare and not annotated;
//! - [`Tier::Kept`]: the rest (a person verified a detection, it is rare, or annotated), kept
//!   longest: only when the disk needs the room.
//!
//! A chunk with a detection that has a live share link, and a chunk whose inference job is
//! still queued or running (a satellite's backlog of old recordings), is in neither tier.

use rusqlite::{Connection, params};

use super::Result;
use crate::{ids::ChunkId, time::Timestamp};

/// Which chunks a query picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Plain,
    Kept,
}

/// A chunk whose audio may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub id: ChunkId,
    pub storage_key: String,
    pub size_bytes: i64,
}

/// A detection of the chunk that a person verified, is rare or is annotated.
const VALUED: &str = "EXISTS (SELECT 1 FROM detections d WHERE d.chunk_pk = c.pk AND (
        d.is_rare = 1 OR d.verification_status IN ('confirmed', 'rejected')
        OR EXISTS (SELECT 1 FROM annotations a WHERE a.detection_id = d.id)))";
/// The chunk is still waiting for the classifier (its audio is needed).
const UNCLASSIFIED: &str =
    "EXISTS (SELECT 1 FROM inference_jobs j WHERE j.chunk_id = c.id AND j.status IN ('queued', 'running'))";
/// A detection of the chunk has a live share link at `?2`.
const SHARED: &str = super::share_links::CHUNK_SHARED;

/// Up to `limit` chunks of `tier` recorded before `before`, oldest first, with live audio.
pub fn candidates(
    conn: &Connection,
    tier: Tier,
    before: Timestamp,
    now: Timestamp,
    limit: i64,
) -> Result<Vec<Candidate>> {
    let valued = match tier {
        Tier::Plain => format!("NOT {VALUED}"),
        Tier::Kept => VALUED.to_owned(),
    };
    let key = super::chunks::key_sql("c");
    let sql = format!(
        "SELECT c.id, {key}, c.size_bytes FROM audio_chunks c INDEXED BY audio_chunks_live_by_time
         WHERE c.audio_expired_at IS NULL AND c.recorded_at < ?1 AND {valued} AND NOT {SHARED} AND NOT {UNCLASSIFIED}
         ORDER BY c.recorded_at LIMIT ?3"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![before.millis(), now, limit], |r| {
        Ok(Candidate { id: r.get(0)?, storage_key: r.get(1)?, size_bytes: r.get(2)? })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Step one: marks the chunks' audio as expired (the files still exist). One transaction.
pub fn mark_expiring(conn: &mut Connection, ids: &[ChunkId], now: Timestamp) -> Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    {
        let mut stmt = tx.prepare_cached(
            "UPDATE audio_chunks SET audio_expired_at = ?2 WHERE id = ?1 AND audio_expired_at IS NULL",
        )?;
        for id in ids {
            stmt.execute(params![id, now.millis()])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// Marked chunks whose file may still exist (a sweep stopped between the steps), at most `limit`.
pub fn expiring(conn: &Connection, limit: i64) -> Result<Vec<Candidate>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT c.id, {}, c.size_bytes FROM audio_chunks c INDEXED BY audio_chunks_expiring
             WHERE c.audio_expired_at IS NOT NULL AND c.audio_deleted = 0 LIMIT ?1",
        super::chunks::key_sql("c")
    ))?;
    let rows =
        stmt.query_map([limit], |r| Ok(Candidate { id: r.get(0)?, storage_key: r.get(1)?, size_bytes: r.get(2)? }))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Step two: the files are gone.
pub fn mark_deleted(conn: &mut Connection, ids: &[ChunkId]) -> Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    {
        let mut stmt = tx.prepare_cached("UPDATE audio_chunks SET audio_deleted = 1 WHERE id = ?1")?;
        for id in ids {
            stmt.execute([id])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// Audio bytes on disk and given up by retention, with the count of expired chunks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    pub audio_bytes: i64,
    pub reclaimed_bytes: i64,
    pub expired_chunks: i64,
}

pub fn totals(conn: &Connection) -> Result<Totals> {
    Ok(conn.query_row(
        "SELECT coalesce(sum(CASE WHEN audio_expired_at IS NULL THEN size_bytes END), 0),
                coalesce(sum(CASE WHEN audio_expired_at IS NOT NULL THEN size_bytes END), 0),
                count(audio_expired_at)
         FROM audio_chunks",
        [],
        |r| Ok(Totals { audio_bytes: r.get(0)?, reclaimed_bytes: r.get(1)?, expired_chunks: r.get(2)? }),
    )?)
}
