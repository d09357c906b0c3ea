//! `GET /sessions/timeline`: the chunks and detections of a time range, capped so a busy range
//! cannot produce an unbounded answer.

use rusqlite::{Connection, params};
use serde::Serialize;

use super::Result;
use crate::{
    ids::{ChunkId, DetectionId, SatelliteId, TenantId},
    time::Timestamp,
};

/// At most this many chunks, and this many detections, per answer.
pub const MAX_ROWS: u32 = 5_000;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Chunk {
    pub id: ChunkId,
    pub satellite_id: SatelliteId,
    pub session_id: Option<String>,
    pub recorded_at: Timestamp,
    pub duration_ms: i64,
    /// The `recordedAt` the satellite sent when the hub corrected an implausible stamp
    /// (`recorded_at` is then the corrected time); null otherwise.
    pub reported_recorded_at: Option<Timestamp>,
    /// Whether the hub re-stamped this chunk (docs/satellites.md, "The satellite's clock").
    pub clock_corrected: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Detection {
    pub id: DetectionId,
    pub audio_chunk_id: ChunkId,
    pub satellite_id: SatelliteId,
    pub species_code: String,
    pub common_name: String,
    pub scientific_name: String,
    pub confidence: f64,
    pub detected_at: Timestamp,
    pub verification_status: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timeline {
    pub from: Timestamp,
    pub to: Timestamp,
    pub chunks: Vec<Chunk>,
    pub detections: Vec<Detection>,
    /// True when the range held more than [`MAX_ROWS`] chunks or detections (the earliest are
    /// given); ask for a shorter range.
    pub truncated: bool,
}

/// Chunks recorded, and detections made, in `[from, to)`, oldest first.
pub fn range(
    conn: &Connection,
    tenant: TenantId,
    satellite: Option<SatelliteId>,
    from: Timestamp,
    to: Timestamp,
) -> Result<Timeline> {
    let cap = MAX_ROWS + 1;
    let chunks = conn
        .prepare_cached(
            "SELECT id, (SELECT id FROM satellites WHERE pk = satellite_pk),
                 (SELECT id FROM recording_sessions WHERE pk = session_pk), recorded_at, duration_ms, reported_recorded_at
             FROM audio_chunks
             WHERE tenant_pk = (SELECT pk FROM tenants WHERE id = ?1) AND (?2 IS NULL OR satellite_pk = (SELECT pk FROM satellites WHERE id = ?2)) AND recorded_at >= ?3 AND recorded_at < ?4
             ORDER BY recorded_at, rowid LIMIT ?5",
        )?
        .query_map(params![tenant, satellite, from.millis(), to.millis(), cap], |r| {
            Ok(Chunk {
                id: r.get(0)?,
                satellite_id: r.get(1)?,
                session_id: r.get(2)?,
                recorded_at: r.get(3)?,
                duration_ms: r.get(4)?,
                reported_recorded_at: r.get(5)?,
                clock_corrected: r.get::<_, Option<i64>>(5)?.is_some(),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let detections = conn
        .prepare_cached(
            "SELECT d.id, (SELECT id FROM audio_chunks WHERE pk = d.chunk_pk), (SELECT id FROM satellites WHERE pk = d.satellite_pk),
                 l.species_code, l.common_name, l.scientific_name, d.confidence, d.detected_at, d.verification_status
             FROM detections d JOIN species_labels l ON l.pk = d.species_pk
             WHERE d.tenant_pk = (SELECT pk FROM tenants WHERE id = ?1)
               AND (?2 IS NULL OR d.satellite_pk = (SELECT pk FROM satellites WHERE id = ?2))
               AND d.detected_at >= ?3 AND d.detected_at < ?4
             ORDER BY d.detected_at, d.rowid LIMIT ?5",
        )?
        .query_map(params![tenant, satellite, from.millis(), to.millis(), cap], |r| {
            Ok(Detection {
                id: r.get(0)?,
                audio_chunk_id: r.get(1)?,
                satellite_id: r.get(2)?,
                species_code: r.get(3)?,
                common_name: r.get(4)?,
                scientific_name: r.get(5)?,
                confidence: r.get(6)?,
                detected_at: r.get(7)?,
                verification_status: r.get(8)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let truncated = chunks.len() > MAX_ROWS as usize || detections.len() > MAX_ROWS as usize;
    let mut t = Timeline { from, to, chunks, detections, truncated };
    t.chunks.truncate(MAX_ROWS as usize);
    t.detections.truncate(MAX_ROWS as usize);
    Ok(t)
}
