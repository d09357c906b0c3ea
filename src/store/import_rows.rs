//! What an import writes besides its job row (issue 38): the de-duplication keys of the rows it
//! imported (`import_rows`), the clip files it copied (`import_clips`), its chunks (no inference
//! job, no recording session), the verdicts and comments it carried over.

use rusqlite::{Connection, OptionalExtension, params};

use super::Result;
use crate::{
    ids::{ChunkId, ImportId, SatelliteId, TenantId},
    time::Timestamp,
};

/// The MQTT password hash of a satellite an import made: no password hashes to it, so no device
/// logs in until one registers under the satellite's name, which replaces it. Until then the
/// satellite is only history (issue 51, defect 13): never online, no update, no schedule.
pub const NO_DEVICE: &str = "!imported";

/// Whether `hash` (a satellite's MQTT password hash) marks a satellite that is only history.
pub fn is_history_only(hash: &str) -> bool {
    hash == NO_DEVICE
}

/// The ids of `tenant`'s satellites that are only imported history (no device registered since).
pub fn history_only(conn: &Connection, tenant: TenantId) -> Result<Vec<SatelliteId>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id FROM satellites WHERE tenant_id = ?1 AND deleted_at IS NULL AND mqtt_password_hash = ?2",
    )?;
    let ids = stmt.query_map(params![tenant, NO_DEVICE], |r| r.get(0))?.collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(ids)
}

/// The satellite's key (for the de-duplication tables).
pub fn satellite_pk(conn: &Connection, satellite: SatelliteId) -> Result<i64> {
    Ok(conn.prepare_cached("SELECT pk FROM satellites WHERE id = ?1")?.query_row([satellite], |r| r.get(0))?)
}

/// Whether a source row is already in the satellite.
pub fn row_seen(conn: &Connection, satellite_pk: i64, key: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM import_rows WHERE satellite_pk = ?1 AND source_key = ?2")?
        .query_row(params![satellite_pk, key], |_| Ok(()))
        .optional()?
        .is_some())
}

/// What the hub keeps of an imported row that its detections table has no column for.
#[derive(Debug, Clone)]
pub struct ImportedRow<'a> {
    pub satellite_pk: i64,
    pub key: &'a str,
    pub detection: Option<crate::ids::DetectionId>,
    pub import: ImportId,
    pub threshold: Option<f64>,
    pub sensitivity: Option<f64>,
    /// `copied`, `missing`, `undecodable` or `none`.
    pub clip_state: &'static str,
}

pub fn insert_row(conn: &Connection, r: &ImportedRow<'_>) -> Result<bool> {
    let n = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO import_rows (satellite_pk, source_key, detection_pk, import_id, threshold, sensitivity, clip_state)
             VALUES (?1, ?2, (SELECT pk FROM detections WHERE id = ?3), ?4, ?5, ?6, ?7)",
        )?
        .execute(params![r.satellite_pk, r.key, r.detection, r.import, r.threshold, r.sensitivity, r.clip_state])?;
    Ok(n == 1)
}

/// The chunk a clip file already became, and whether it was undecodable.
pub fn clip_chunk(conn: &Connection, satellite_pk: i64, path: &str) -> Result<Option<(ChunkId, bool)>> {
    Ok(conn
        .prepare_cached(
            "SELECT c.id, i.undecodable FROM import_clips i JOIN audio_chunks c ON c.pk = i.chunk_pk
             WHERE i.satellite_pk = ?1 AND i.source_path = ?2",
        )?
        .query_row(params![satellite_pk, path], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

pub fn insert_clip(conn: &Connection, satellite_pk: i64, path: &str, chunk: ChunkId, undecodable: bool) -> Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO import_clips (satellite_pk, source_path, chunk_pk, undecodable)
         VALUES (?1, ?2, (SELECT pk FROM audio_chunks WHERE id = ?3), ?4)",
    )?
    .execute(params![satellite_pk, path, chunk, undecodable])?;
    Ok(())
}

/// Whether the chunk already has a detection of the species (the detections table keeps one
/// per chunk and species).
pub fn chunk_has_species(conn: &Connection, chunk: ChunkId, species_code: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM detections d JOIN species_labels l ON l.pk = d.species_pk
             WHERE d.chunk_pk = (SELECT pk FROM audio_chunks WHERE id = ?1) AND l.species_code = ?2",
        )?
        .query_row(params![chunk, species_code], |_| Ok(()))
        .optional()?
        .is_some())
}

/// How an imported chunk holds its audio.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkAudio {
    /// An imported clip (`imported = 1`).
    Clip,
    /// No clip: the old station had none (`imported = 2`, no audio, expired at once; the API says
    /// 410 `no_audio`, the page "audio expired").
    None,
}

/// Writes an imported chunk: no inference job, no recording session, not a sign of life of the
/// satellite. Rollups follow through the triggers.
pub fn insert_chunk(conn: &Connection, c: &super::chunks::NewChunk, audio: ChunkAudio, now: Timestamp) -> Result<()> {
    // A chunk without audio counts as expired from the start: retention and exports pass it by,
    // and the page says "audio expired" (the API says 410 `no_audio`).
    let (imported, deleted, expired) = match audio {
        ChunkAudio::Clip => (1, 0, None),
        ChunkAudio::None => (2, 1, Some(now.millis())),
    };
    conn.prepare_cached(
        "INSERT INTO audio_chunks (id, tenant_pk, satellite_pk, recorded_at, duration_ms, sample_rate, latitude,
             longitude, storage_key, size_bytes, received_at, imported, audio_deleted, audio_expired_at)
         VALUES (?1, (SELECT pk FROM tenants WHERE id = ?2), (SELECT pk FROM satellites WHERE id = ?3), ?4, ?5, ?6, ?7,
                 ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
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
        c.storage_key,
        c.size_bytes,
        now.millis(),
        imported,
        deleted,
        expired
    ])?;
    Ok(())
}

/// When a chunk's audio starts.
pub fn chunk_recorded_at(conn: &Connection, chunk: ChunkId) -> Result<Option<Timestamp>> {
    Ok(conn
        .prepare_cached("SELECT recorded_at FROM audio_chunks WHERE id = ?1")?
        .query_row([chunk], |r| r.get(0))
        .optional()?)
}

/// A second chunk over the same audio object as `from` (a second row of one species in one clip).
pub fn copy_chunk(conn: &Connection, from: ChunkId, to: ChunkId) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO audio_chunks (id, tenant_pk, satellite_pk, recorded_at, duration_ms, sample_rate, latitude, longitude,
             storage_key, size_bytes, received_at, imported, audio_deleted)
         SELECT ?2, tenant_pk, satellite_pk, recorded_at, duration_ms, sample_rate, latitude, longitude, storage_key,
             size_bytes, received_at, imported, audio_deleted
         FROM audio_chunks WHERE id = ?1",
    )?
    .execute(params![from, to])?;
    Ok(())
}

/// Whether a chunk is an imported row without audio (`GET /audio` answers 410 `no_audio`).
pub fn chunk_without_audio(conn: &Connection, tenant: TenantId, chunk: ChunkId) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT imported = 2 FROM audio_chunks WHERE id = ?1 AND tenant_pk = (SELECT pk FROM tenants WHERE id = ?2)",
        )?
        .query_row(params![chunk, tenant], |r| r.get(0))
        .optional()?
        .unwrap_or(false))
}

/// Sets a detection's verification status (a verdict carried over from the old station).
pub fn set_status(conn: &Connection, detection: crate::ids::DetectionId, status: &str) -> Result<()> {
    conn.prepare_cached("UPDATE detections SET verification_status = ?2 WHERE id = ?1")?
        .execute(params![detection, status])?;
    Ok(())
}

/// A comment carried over from an old station written by `kind` (`birdnet-go`): no author; the
/// page shows it as imported from that software.
pub fn add_comment(
    conn: &Connection,
    tenant: TenantId,
    detection: crate::ids::DetectionId,
    (body, kind): (&str, &str),
    at: Timestamp,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO comments (id, detection_id, tenant_id, user_id, body, created_at, imported_from)
         VALUES (?1, ?2, ?3, NULL, ?4, ?5, ?6)",
    )?
    .execute(params![uuid::Uuid::new_v4().to_string(), detection, tenant, body, at, kind])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{comments, detections::testing, testing as store_testing};

    #[tokio::test]
    async fn an_imported_comment_has_no_author_and_says_where_it_came_from() {
        let (store, _dir) = store_testing::store().await;
        let listed = store
            .call(|c| {
                let (tenant, _) = store_testing::team(c, "a@b.org")?;
                let detection = testing::one(c, tenant)?;
                add_comment(c, tenant, detection, ("heard it twice", "birdnet-go"), Timestamp(chrono::Utc::now()))?;
                comments::list(c, tenant, detection)
            })
            .await
            .expect("comment");
        assert_eq!(listed.len(), 1);
        assert_eq!((listed[0].user_id, listed[0].imported_from.as_deref()), (None, Some("birdnet-go")));
        assert_eq!(listed[0].body, "heard it twice");
    }
}
