//! Detections held for a second look (`held_detections`, migration 0020), the neighbouring chunks
//! a second look reads, and the hub's filter counters per satellite (`hub_filter_counts`).

use std::collections::BTreeMap;

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{Result, detections::NewDetection};
use crate::{
    ids::{ChunkId, SatelliteId, TenantId},
    time::Timestamp,
};

/// A held detection with what its second look needs of its chunk.
#[derive(Debug, Clone)]
pub struct Held {
    pub pk: i64,
    pub detection: NewDetection,
    pub class_index: usize,
    pub reason: String,
    /// The first look (the previous chunk's scores, the window shifted back) was put off until
    /// the next chunk, already queued, was classified: the second look does it too.
    pub back_look: bool,
    /// The chunk's start, length and audio.
    pub chunk: ChunkAudio,
}

/// A chunk whose audio is on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkAudio {
    pub id: ChunkId,
    pub recorded_at: Timestamp,
    pub duration_ms: i64,
    pub storage_key: String,
}

/// Holds `d` (class `class_index`) until `deadline`. A second hold of the same species in the
/// same chunk (a job run again) changes nothing.
pub fn hold(
    conn: &Connection,
    d: &NewDetection,
    class_index: usize,
    reason: &str,
    back_look: bool,
    deadline: Timestamp,
    now: Timestamp,
) -> Result<()> {
    let json =
        serde_json::to_string(d).map_err(|e| super::Error::Corrupt { what: "held detection", value: e.to_string() })?;
    conn.prepare_cached(
        "INSERT OR IGNORE INTO held_detections (chunk_pk, tenant_pk, satellite_pk, species_code, class_index, reason,
             detection, deadline_at, created_at, back_look)
         VALUES ((SELECT pk FROM audio_chunks WHERE id = ?1), (SELECT pk FROM tenants WHERE id = ?2),
                 (SELECT pk FROM satellites WHERE id = ?3), ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        d.audio_chunk_id,
        d.tenant_id,
        d.satellite_id,
        d.species_code,
        class_index as i64,
        reason,
        json,
        deadline.millis(),
        now.millis(),
        back_look
    ])?;
    Ok(())
}

const HELD_SELECT: &str =
    "SELECT h.pk, h.detection, h.class_index, h.reason, h.back_look, c.id, c.recorded_at, c.duration_ms";

/// A held row's columns: pk, detection JSON, class, reason, back look, chunk id, start, length,
/// storage key.
type HeldRow = (i64, String, i64, String, bool, ChunkId, Timestamp, i64, String);

fn held_row(r: &Row<'_>) -> rusqlite::Result<HeldRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?))
}

fn held_from(
    (pk, json, class_index, reason, back_look, id, recorded_at, duration_ms, storage_key): HeldRow,
) -> Option<Held> {
    let detection = serde_json::from_str(&json).ok()?;
    let chunk = ChunkAudio { id, recorded_at, duration_ms, storage_key };
    Some(Held { pk, detection, class_index: usize::try_from(class_index).ok()?, reason, back_look, chunk })
}

fn query_held(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> Result<Vec<Held>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map(params, held_row)?.collect::<rusqlite::Result<Vec<_>>>()?;
    // A row whose JSON no longer reads (a future hub's) is skipped, never fatal.
    Ok(rows.into_iter().filter_map(held_from).collect())
}

/// Whether any detection is waiting for a second look (one index probe).
pub fn any_held(conn: &Connection) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM held_detections WHERE state = 'held' LIMIT 1")?
        .query_row([], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Held detections whose wait has ended.
pub fn due(conn: &Connection, now: Timestamp, limit: i64) -> Result<Vec<Held>> {
    query_held(
        conn,
        &format!(
            "{HELD_SELECT}, {} FROM held_detections h JOIN audio_chunks c ON c.pk = h.chunk_pk
             WHERE h.state = 'held' AND h.deadline_at <= ?1 ORDER BY h.deadline_at LIMIT ?2",
            super::chunks::key_sql("c")
        ),
        params![now.millis(), limit],
    )
}

/// Held detections of `satellite` whose chunk starts within `[from, to)`: those a newly
/// classified chunk is the next neighbour of.
pub fn held_between(conn: &Connection, satellite: SatelliteId, from: Timestamp, to: Timestamp) -> Result<Vec<Held>> {
    query_held(
        conn,
        &format!(
            "{HELD_SELECT}, {} FROM held_detections h JOIN audio_chunks c ON c.pk = h.chunk_pk
             WHERE h.satellite_pk = (SELECT pk FROM satellites WHERE id = ?1) AND h.state = 'held'
               AND c.recorded_at >= ?2 AND c.recorded_at < ?3",
            super::chunks::key_sql("c")
        ),
        params![satellite, from.millis(), to.millis()],
    )
}

/// The chunk of `satellite` with audio on disk that starts within `[from, to]`, closest to
/// `near`: a neighbour for a second look.
pub fn neighbour(
    conn: &Connection,
    satellite: SatelliteId,
    from: Timestamp,
    to: Timestamp,
    near: Timestamp,
) -> Result<Option<ChunkAudio>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT c.id, c.recorded_at, c.duration_ms, {} FROM audio_chunks c
             WHERE c.satellite_pk = (SELECT pk FROM satellites WHERE id = ?1) AND c.recorded_at BETWEEN ?2 AND ?3
               AND c.audio_deleted = 0
             ORDER BY abs(c.recorded_at - ?4) LIMIT 1",
            super::chunks::key_sql("c")
        ))?
        .query_row(params![satellite, from.millis(), to.millis(), near.millis()], |r| {
            Ok(ChunkAudio { id: r.get(0)?, recorded_at: r.get(1)?, duration_ms: r.get(2)?, storage_key: r.get(3)? })
        })
        .optional()?)
}

/// Takes a held detection out of the waiting list: false when another worker already decided it.
pub fn take(conn: &Connection, pk: i64) -> Result<bool> {
    Ok(conn.prepare_cached("DELETE FROM held_detections WHERE pk = ?1 AND state = 'held'")?.execute([pk])? == 1)
}

/// Keeps an unconfirmed detection out of sight (the team's `second_look_unconfirmed: hide`):
/// false when another worker already decided it.
pub fn hide(conn: &Connection, pk: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached("UPDATE held_detections SET state = 'hidden' WHERE pk = ?1 AND state = 'held'")?
        .execute([pk])?
        == 1)
}

/// A hidden (unconfirmed) detection, as the Detection quality page lists it.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hidden {
    pub id: i64,
    pub satellite_id: SatelliteId,
    pub satellite_name: String,
    pub audio_chunk_id: ChunkId,
    pub species_code: String,
    pub common_name: String,
    pub scientific_name: String,
    pub confidence: f32,
    pub detected_at: Timestamp,
    pub reason: String,
}

/// The team's hidden detections, newest first.
pub fn hidden(conn: &Connection, tenant: TenantId, limit: i64) -> Result<Vec<Hidden>> {
    let mut stmt = conn.prepare_cached(
        "SELECT h.pk, h.detection, h.reason FROM held_detections h
         WHERE h.tenant_pk = (SELECT pk FROM tenants WHERE id = ?1) AND h.state = 'hidden'
         ORDER BY h.created_at DESC LIMIT ?2",
    )?;
    let rows = stmt
        .query_map(params![tenant, limit], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows
        .into_iter()
        .filter_map(|(pk, json, reason)| {
            let d: NewDetection = serde_json::from_str(&json).ok()?;
            Some(Hidden {
                id: pk,
                satellite_id: d.satellite_id,
                satellite_name: d.satellite_name,
                audio_chunk_id: d.audio_chunk_id,
                species_code: d.species_code,
                common_name: d.common_name,
                scientific_name: d.scientific_name,
                confidence: d.confidence,
                detected_at: d.detected_at,
                reason,
            })
        })
        .collect())
}

/// Adds to `satellite`'s filter counters (names as in [`crate::inference::screen::Counts`]).
pub fn bump(conn: &Connection, satellite: SatelliteId, counts: &[(&str, u32)]) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO hub_filter_counts (satellite_pk, counter, count) VALUES ((SELECT pk FROM satellites WHERE id = ?1), ?2, ?3)
         ON CONFLICT (satellite_pk, counter) DO UPDATE SET count = count + excluded.count",
    )?;
    for (name, n) in counts.iter().filter(|(_, n)| *n > 0) {
        stmt.execute(params![satellite, name, n])?;
    }
    Ok(())
}

/// `satellite`'s filter counters by name (camelCase, as `hubFilterStats` shows them).
pub fn counts(conn: &Connection, satellite: SatelliteId) -> Result<BTreeMap<String, u64>> {
    let mut stmt = conn.prepare_cached(
        "SELECT counter, count FROM hub_filter_counts WHERE satellite_pk = (SELECT pk FROM satellites WHERE id = ?1)",
    )?;
    let rows = stmt.query_map([satellite], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
    let mut out = BTreeMap::new();
    for row in rows {
        let (name, n) = row?;
        out.insert(name, u64::try_from(n).unwrap_or(0));
    }
    Ok(out)
}

/// Marks a chunk's audio deleted (the privacy filter removes its file after the commit).
pub fn drop_audio(conn: &Connection, chunk: ChunkId) -> Result<()> {
    conn.prepare_cached("UPDATE audio_chunks SET audio_deleted = 1 WHERE id = ?1")?.execute([chunk])?;
    Ok(())
}
