//! Audio chunks and their inference jobs, written together.

use rusqlite::{Connection, OptionalExtension, params};

use super::Result;
use crate::{
    ids::{ChunkId, SatelliteId, TenantId},
    time::Timestamp,
};

#[derive(Debug, Clone)]
pub struct NewChunk {
    pub id: ChunkId,
    pub tenant_id: TenantId,
    pub satellite_id: SatelliteId,
    pub recorded_at: Timestamp,
    pub duration_ms: i64,
    pub sample_rate: i64,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    pub storage_key: String,
    pub size_bytes: i64,
}

/// The storage key the ingest gives a chunk: `audio/{team}/{satellite}/{UTC day}/{id}.wav`.
pub fn derived_key(tenant: TenantId, satellite: SatelliteId, recorded_at: Timestamp, id: ChunkId) -> String {
    format!("audio/{tenant}/{satellite}/{}/{id}.wav", recorded_at.at().format("%Y-%m-%d"))
}

/// What is stored in `storage_key` (migration 0016): '' for the derived key, which every
/// ingested chunk has (about 130 bytes a row saved), and any other key as it is.
pub fn stored_key(c: &NewChunk) -> &str {
    if c.storage_key == derived_key(c.tenant_id, c.satellite_id, c.recorded_at, c.id) { "" } else { &c.storage_key }
}

/// The storage key of the chunk row `alias` as SQL: the stored key, or the derived one when ''.
/// The SQL twin of [`derived_key`] (`recorded_at` is stored as UTC milliseconds; the team's and
/// satellite's UUIDs are read through their keys, the chunk's own spelled out from its bytes).
pub fn key_sql(alias: &str) -> String {
    let a = alias;
    let id = uuid_text_sql(&format!("{a}.id"));
    format!(
        "(CASE {a}.storage_key WHEN '' THEN 'audio/' || (SELECT id FROM tenants WHERE pk = {a}.tenant_pk) || '/' || \
         (SELECT id FROM satellites WHERE pk = {a}.satellite_pk) || '/' || \
         date({a}.recorded_at / 1000, 'unixepoch') || '/' || {id} || '.wav' ELSE {a}.storage_key END)"
    )
}

/// SQL that spells a 16-byte UUID column (migration 0018) as its lower-case hyphenated text.
fn uuid_text_sql(column: &str) -> String {
    let part = |from: u32, len: u32| format!("substr(h, {from}, {len})");
    format!(
        "(SELECT {} || '-' || {} || '-' || {} || '-' || {} || '-' || {} FROM (SELECT lower(hex({column})) AS h))",
        part(1, 8),
        part(9, 4),
        part(13, 4),
        part(17, 4),
        part(21, 12)
    )
}

pub fn exists(conn: &Connection, id: ChunkId) -> Result<bool> {
    // Cached, like every statement ingest runs per chunk: preparing one (with the triggers it
    // fires) costs more than running it (issue 39).
    let mut stmt = conn.prepare_cached("SELECT 1 FROM audio_chunks WHERE id = ?1")?;
    Ok(stmt.query_row([id], |_| Ok(())).optional()?.is_some())
}

/// Inserts the chunk and its queued job in one transaction. Returns false (and writes nothing)
/// when the chunk id is already stored: a satellite retrying a chunk that was acknowledged.
pub fn insert_with_job(conn: &mut Connection, c: &NewChunk, now: Timestamp) -> Result<bool> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let inserted = insert_with_job_in(&tx, c, now)?;
    tx.commit()?;
    Ok(inserted)
}

/// [`insert_with_job`] inside the caller's transaction or savepoint.
pub fn insert_with_job_in(tx: &Connection, c: &NewChunk, now: Timestamp) -> Result<bool> {
    Ok(insert_arrived(tx, c, now, false)?.is_some())
}

/// [`insert_with_job_in`] for ingest's group commit, which also takes the chunk's position as the
/// satellite's when `locate` (see [`super::satellites::chunk_arrived`]). `None` when the chunk
/// is already stored (nothing written); else whether the satellite moved far.
pub fn insert_arrived(tx: &Connection, c: &NewChunk, now: Timestamp, locate: bool) -> Result<Option<bool>> {
    if exists(tx, c.id)? {
        return Ok(None);
    }
    // The session first, so the row is written once, already in it.
    let session =
        super::recording_sessions::place_chunk(tx, c.tenant_id, c.satellite_id, c.recorded_at, c.duration_ms)?;
    tx.prepare_cached(
        "INSERT INTO audio_chunks (id, tenant_pk, satellite_pk, recorded_at, duration_ms, sample_rate, latitude,
             longitude, storage_key, size_bytes, received_at, session_pk)
         VALUES (?1, (SELECT pk FROM tenants WHERE id = ?2), (SELECT pk FROM satellites WHERE id = ?3), ?4, ?5, ?6, ?7,
                 ?8, ?9, ?10, ?11, (SELECT pk FROM recording_sessions WHERE id = ?12))",
    )?
    .execute(params![
        c.id,
        c.tenant_id,
        c.satellite_id,
        c.recorded_at.millis(),
        c.duration_ms,
        c.sample_rate,
        c.latitude,
        c.longitude,
        stored_key(c),
        c.size_bytes,
        now.millis(),
        session
    ])?;
    tx.prepare_cached(
        "INSERT INTO inference_jobs (id, chunk_id, tenant_id, status, run_after, created_at) VALUES (?1, ?2, ?3, 'queued', ?4, ?4)",
    )?
    .execute(params![uuid::Uuid::new_v4().to_string(), c.id, c.tenant_id, now])?;
    let at = if locate { c.latitude.zip(c.longitude) } else { None };
    Ok(Some(super::satellites::chunk_arrived(tx, c.tenant_id, c.satellite_id, now, at)?))
}

/// The storage key of a chunk of `tenant` (for streaming its audio).
pub fn storage_key(conn: &Connection, tenant: TenantId, id: ChunkId) -> Result<Option<String>> {
    Ok(conn
        .query_row(
            &format!("SELECT {} FROM audio_chunks c WHERE c.id = ?1 AND c.tenant_pk = (SELECT pk FROM tenants WHERE id = ?2)", key_sql("c")),
            params![id, tenant],
            |r| r.get(0),
        )
        .optional()?)
}

pub fn count(conn: &Connection) -> Result<u64> {
    let n: i64 = conn.query_row("SELECT count(*) FROM audio_chunks", [], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}

/// What the API needs of a stored chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkMeta {
    pub duration_ms: i64,
    pub sample_rate: i64,
    pub storage_key: String,
    /// Retention deleted the audio at this time.
    pub audio_expired_at: Option<crate::time::Timestamp>,
}

/// The chunk `id` of `tenant`, if any.
pub fn meta(conn: &Connection, tenant: TenantId, id: ChunkId) -> Result<Option<ChunkMeta>> {
    Ok(conn
        .query_row(
            &format!(
                "SELECT c.duration_ms, c.sample_rate, {}, c.audio_expired_at FROM audio_chunks c
                 WHERE c.id = ?1 AND c.tenant_pk = (SELECT pk FROM tenants WHERE id = ?2)",
                key_sql("c")
            ),
            params![id, tenant],
            |r| {
                Ok(ChunkMeta {
                    duration_ms: r.get(0)?,
                    sample_rate: r.get(1)?,
                    storage_key: r.get(2)?,
                    audio_expired_at: r.get(3)?,
                })
            },
        )
        .optional()?)
}
