//! A satellite's clock as the hub measured it (migration 0025): the latest heartbeat offset, the
//! episodes of a wrong clock the monitor marks, and the chunks whose stamp the hub corrected.

use rusqlite::{Connection, OptionalExtension, params};

use super::{Error, Result};
use crate::{
    ids::{ChunkId, SatelliteId, TenantId},
    time::Timestamp,
};

/// Records the offset a heartbeat of one of `tenant`'s satellites showed at `now`.
pub fn record_offset(
    conn: &Connection,
    tenant: TenantId,
    id: SatelliteId,
    offset_ms: i64,
    now: Timestamp,
) -> Result<()> {
    let n = conn.execute(
        "UPDATE satellites SET clock_offset_ms = ?2, clock_checked_at = ?3
         WHERE id = ?1 AND tenant_id = ?4 AND deleted_at IS NULL",
        params![id, offset_ms, now, tenant],
    )?;
    if n == 0 { Err(Error::NotFound) } else { Ok(()) }
}

/// What the ingest needs to judge a chunk's stamp: the last offset and when it was measured, and
/// when the last heartbeat came with its `outboxStats` (JSON).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub offset_ms: Option<i64>,
    pub checked_at: Option<Timestamp>,
    pub heartbeat_at: Option<Timestamp>,
    pub outbox_stats_json: Option<String>,
}

pub fn facts(conn: &Connection, tenant: TenantId, id: SatelliteId) -> Result<Facts> {
    Ok(conn
        .prepare_cached(
            "SELECT clock_offset_ms, clock_checked_at, last_heartbeat_at, outbox_stats_json FROM satellites
             WHERE id = ?1 AND tenant_id = ?2",
        )?
        .query_row(params![id, tenant], |r| {
            Ok(Facts {
                offset_ms: r.get(0)?,
                checked_at: r.get(1)?,
                heartbeat_at: r.get(2)?,
                outbox_stats_json: r.get(3)?,
            })
        })
        .optional()?
        .unwrap_or_default())
}

/// Keeps the stamp the satellite sent for a chunk the hub re-stamped, and counts it on the satellite.
pub fn mark_corrected(conn: &Connection, chunk: ChunkId, satellite: SatelliteId, reported: Timestamp) -> Result<()> {
    conn.prepare_cached("UPDATE audio_chunks SET reported_recorded_at = ?2 WHERE id = ?1")?
        .execute(params![chunk, reported.millis()])?;
    conn.prepare_cached("UPDATE satellites SET clock_corrected_chunks = clock_corrected_chunks + 1 WHERE id = ?1")?
        .execute([satellite])?;
    Ok(())
}

/// A satellite whose clock the monitor found wrong, or right again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClockChange {
    pub id: SatelliteId,
    pub name: String,
    pub offset_ms: i64,
}

fn change(r: &rusqlite::Row<'_>) -> rusqlite::Result<ClockChange> {
    Ok(ClockChange { id: r.get(0)?, name: r.get(1)?, offset_ms: r.get(2)? })
}

/// `tenant`'s satellites whose offset measured after `fresh_after` is more than `limit_ms` either
/// way and whose clock was not wrong yet: wrong since `now`.
pub fn mark_wrong(
    conn: &Connection,
    tenant: TenantId,
    limit_ms: i64,
    fresh_after: Timestamp,
    now: Timestamp,
) -> Result<Vec<ClockChange>> {
    let mut stmt = conn.prepare_cached(
        "UPDATE satellites SET clock_wrong_since = ?4
         WHERE tenant_id = ?1 AND deleted_at IS NULL AND clock_wrong_since IS NULL
           AND clock_offset_ms IS NOT NULL AND abs(clock_offset_ms) > ?2 AND clock_checked_at > ?3
         RETURNING id, name, clock_offset_ms",
    )?;
    let rows = stmt.query_map(params![tenant, limit_ms, fresh_after, now], change)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// `tenant`'s satellites marked wrong whose latest offset is within `limit_ms`: right again.
pub fn mark_right(conn: &Connection, tenant: TenantId, limit_ms: i64) -> Result<Vec<ClockChange>> {
    let mut stmt = conn.prepare_cached(
        "UPDATE satellites SET clock_wrong_since = NULL
         WHERE tenant_id = ?1 AND deleted_at IS NULL AND clock_wrong_since IS NOT NULL
           AND clock_offset_ms IS NOT NULL AND abs(clock_offset_ms) <= ?2
         RETURNING id, name, clock_offset_ms",
    )?;
    let rows = stmt.query_map(params![tenant, limit_ms], change)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
