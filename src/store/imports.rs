//! Import jobs (issue 38): the `imports` row of each import of an old station, the
//! de-duplication keys of the rows it imported (`import_rows`) and the clip files it copied
//! (`import_clips`), and the chunks it writes (no inference job, no recording session).

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

use super::Result;
use crate::{
    ids::{ChunkId, ImportId, SatelliteId, TenantId, UserId},
    time::Timestamp,
};

/// How far a job got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImportStatus {
    Queued,
    Running,
    Done,
    Failed,
}

impl ImportStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Done => "done",
            Self::Failed => "failed",
        }
    }

    fn parse(s: &str) -> Self {
        match s {
            "running" => Self::Running,
            "done" => Self::Done,
            "failed" => Self::Failed,
            _ => Self::Queued,
        }
    }
}

/// A scientific name the hub's model has no label for, and how many rows carried it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct NameCount {
    pub name: String,
    pub count: u64,
}

/// A source row that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CorruptRow {
    /// Where in the source, e.g. `rowid 1234`.
    pub at: String,
    pub reason: String,
}

/// The counters of a job, as the engine keeps them while it runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub rows_total: u64,
    pub rows_read: u64,
    pub rows_added: u64,
    pub rows_duplicate: u64,
    pub rows_unmapped: u64,
    pub rows_corrupt: u64,
    pub clips_copied: u64,
    pub clips_missing: u64,
    pub clips_undecodable: u64,
    pub rows_per_second: f64,
    pub clips_per_second: f64,
    pub seconds_left: Option<f64>,
    pub unmapped: Vec<NameCount>,
    pub corrupt: Vec<CorruptRow>,
    pub missing_clips: Vec<String>,
}

/// One import job as the API and the CLI show it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ImportJob {
    #[schema(value_type = uuid::Uuid)]
    pub id: ImportId,
    /// `null` until the job has created the new satellite it was asked to make.
    #[schema(value_type = Option<uuid::Uuid>)]
    pub satellite_id: Option<SatelliteId>,
    /// `birdnet-pi` or `birdnet-go`.
    pub kind: String,
    /// `birdnet-pi`, `birdnet-go-legacy` or `birdnet-go-v2`.
    pub schema: String,
    /// The path as it was given.
    pub source: String,
    /// The IANA zone the station's wall-clock times are read in.
    pub time_zone: String,
    pub dry_run: bool,
    pub status: ImportStatus,
    pub rows_total: u64,
    pub rows_read: u64,
    pub rows_added: u64,
    pub rows_duplicate: u64,
    pub rows_unmapped: u64,
    pub rows_corrupt: u64,
    pub clips_copied: u64,
    pub clips_missing: u64,
    pub clips_undecodable: u64,
    pub rows_per_second: f64,
    pub clips_per_second: f64,
    pub seconds_left: Option<f64>,
    pub unmapped: Vec<NameCount>,
    pub corrupt: Vec<CorruptRow>,
    pub missing_clips: Vec<String>,
    pub error: Option<String>,
    #[schema(value_type = String)]
    pub created_at: Timestamp,
    #[schema(value_type = Option<String>)]
    pub started_at: Option<Timestamp>,
    #[schema(value_type = Option<String>)]
    pub finished_at: Option<Timestamp>,
    /// What the engine needs and people do not.
    #[serde(skip)]
    pub internal: JobInternal,
}

/// The parts of a job row only the engine reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobInternal {
    pub tenant_id: Option<TenantId>,
    pub new_name: Option<String>,
    pub database_path: String,
    pub clips_dir: Option<String>,
    pub scratch_dir: Option<String>,
    pub actor: Option<UserId>,
    pub cursor: i64,
}

impl ImportJob {
    pub fn counts(&self) -> Counts {
        Counts {
            rows_total: self.rows_total,
            rows_read: self.rows_read,
            rows_added: self.rows_added,
            rows_duplicate: self.rows_duplicate,
            rows_unmapped: self.rows_unmapped,
            rows_corrupt: self.rows_corrupt,
            clips_copied: self.clips_copied,
            clips_missing: self.clips_missing,
            clips_undecodable: self.clips_undecodable,
            rows_per_second: self.rows_per_second,
            clips_per_second: self.clips_per_second,
            seconds_left: self.seconds_left,
            unmapped: self.unmapped.clone(),
            corrupt: self.corrupt.clone(),
            missing_clips: self.missing_clips.clone(),
        }
    }
}

const SELECT: &str = "SELECT id, satellite_id, kind, schema, source, time_zone, dry_run, status, rows_total, rows_read,
     rows_added, rows_duplicate, rows_unmapped, rows_corrupt, clips_copied, clips_missing, clips_undecodable,
     rows_per_second, clips_per_second, seconds_left, unmapped_json, corrupt_json, missing_json, error, created_at,
     started_at, finished_at, tenant_id, new_name, database_path, clips_dir, scratch_dir, actor_user_id, cursor
     FROM imports";

fn json<T: serde::de::DeserializeOwned + Default>(text: String) -> T {
    serde_json::from_str(&text).unwrap_or_default()
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<ImportJob> {
    let n = |i: usize| -> rusqlite::Result<u64> { Ok(r.get::<_, i64>(i)?.max(0) as u64) };
    Ok(ImportJob {
        id: r.get(0)?,
        satellite_id: r.get(1)?,
        kind: r.get(2)?,
        schema: r.get(3)?,
        source: r.get(4)?,
        time_zone: r.get(5)?,
        dry_run: r.get(6)?,
        status: ImportStatus::parse(&r.get::<_, String>(7)?),
        rows_total: n(8)?,
        rows_read: n(9)?,
        rows_added: n(10)?,
        rows_duplicate: n(11)?,
        rows_unmapped: n(12)?,
        rows_corrupt: n(13)?,
        clips_copied: n(14)?,
        clips_missing: n(15)?,
        clips_undecodable: n(16)?,
        rows_per_second: r.get(17)?,
        clips_per_second: r.get(18)?,
        seconds_left: r.get(19)?,
        unmapped: json(r.get(20)?),
        corrupt: json(r.get(21)?),
        missing_clips: json(r.get(22)?),
        error: r.get(23)?,
        created_at: r.get(24)?,
        started_at: r.get(25)?,
        finished_at: r.get(26)?,
        internal: JobInternal {
            tenant_id: r.get(27)?,
            new_name: r.get(28)?,
            database_path: r.get(29)?,
            clips_dir: r.get(30)?,
            scratch_dir: r.get(31)?,
            actor: r.get(32)?,
            cursor: r.get(33)?,
        },
    })
}

/// What `prepare` writes: a queued job.
#[derive(Debug, Clone)]
pub struct NewImport<'a> {
    pub tenant_id: TenantId,
    pub satellite_id: Option<SatelliteId>,
    pub new_name: Option<&'a str>,
    /// `birdnet-pi` or `birdnet-go`.
    pub kind: &'a str,
    pub schema: &'a str,
    pub source: &'a str,
    pub database_path: &'a str,
    pub clips_dir: Option<&'a str>,
    pub scratch_dir: Option<&'a str>,
    pub time_zone: &'a str,
    pub dry_run: bool,
    pub actor: Option<UserId>,
}

pub fn insert(conn: &Connection, n: &NewImport<'_>, now: Timestamp) -> Result<ImportId> {
    let id = ImportId::new();
    conn.execute(
        "INSERT INTO imports (id, tenant_id, satellite_id, new_name, kind, schema, source, database_path, clips_dir,
             scratch_dir, time_zone, dry_run, actor_user_id, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14)",
        params![
            id,
            n.tenant_id,
            n.satellite_id,
            n.new_name,
            n.kind,
            n.schema,
            n.source,
            n.database_path,
            n.clips_dir,
            n.scratch_dir,
            n.time_zone,
            n.dry_run,
            n.actor,
            now
        ],
    )?;
    Ok(id)
}

/// The unfinished (queued, running or interrupted) job of `tenant` reading the same database
/// into the same target: a rerun resumes it instead of starting over.
pub fn unfinished(
    conn: &Connection,
    tenant: TenantId,
    kind: &str,
    source: &str,
    satellite: Option<SatelliteId>,
    dry_run: bool,
) -> Result<Option<ImportJob>> {
    Ok(conn
        .query_row(
            &format!(
                "{SELECT} WHERE tenant_id = ?1 AND kind = ?2 AND source = ?3 AND dry_run = ?5
                   AND status IN ('queued', 'running') AND (?4 IS NULL OR satellite_id = ?4)
                 ORDER BY created_at DESC LIMIT 1"
            ),
            params![tenant, kind, source, satellite, dry_run],
            from_row,
        )
        .optional()?)
}

/// The satellite a finished import of the same source into a new satellite made (a rerun of the
/// same command goes into it, so it adds nothing twice).
pub fn earlier_satellite(conn: &Connection, tenant: TenantId, kind: &str, source: &str) -> Result<Option<SatelliteId>> {
    Ok(conn
        .query_row(
            "SELECT i.satellite_id FROM imports i JOIN satellites s ON s.id = i.satellite_id AND s.deleted_at IS NULL
             WHERE i.tenant_id = ?1 AND i.kind = ?2 AND i.source = ?3 AND i.dry_run = 0
             ORDER BY i.created_at DESC LIMIT 1",
            params![tenant, kind, source],
            |r| r.get(0),
        )
        .optional()?)
}

pub fn get(conn: &Connection, tenant: TenantId, id: ImportId) -> Result<ImportJob> {
    Ok(conn.query_row(&format!("{SELECT} WHERE id = ?1 AND tenant_id = ?2"), params![id, tenant], from_row)?)
}

/// A job of any team (the engine, which was handed its id).
pub fn get_any(conn: &Connection, id: ImportId) -> Result<ImportJob> {
    Ok(conn.query_row(&format!("{SELECT} WHERE id = ?1"), [id], from_row)?)
}

/// The team's jobs, newest first.
pub fn list(conn: &Connection, tenant: TenantId, limit: u32) -> Result<Vec<ImportJob>> {
    let mut stmt =
        conn.prepare(&format!("{SELECT} WHERE tenant_id = ?1 ORDER BY created_at DESC, rowid DESC LIMIT ?2"))?;
    let rows = stmt.query_map(params![tenant, limit], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Every team's queued or running jobs with the process last running each (the hub's start-up
/// marks those it was running when it stopped as failed).
pub fn unfinished_all(conn: &Connection) -> Result<Vec<(ImportJob, Option<u32>)>> {
    let mut stmt = conn.prepare(&format!("{SELECT} WHERE status IN ('queued', 'running') ORDER BY created_at"))?;
    let jobs = stmt.query_map([], from_row)?.collect::<rusqlite::Result<Vec<_>>>()?;
    let mut out = Vec::with_capacity(jobs.len());
    for job in jobs {
        let pid = runner(conn, job.id)?;
        out.push((job, pid));
    }
    Ok(out)
}

/// A rerun found the unfinished job: the source may now be at another place (a backup unpacked
/// again into a new scratch directory).
pub fn repoint(
    conn: &Connection,
    id: ImportId,
    database: &str,
    clips: Option<&str>,
    scratch: Option<&str>,
    now: Timestamp,
) -> Result<()> {
    conn.execute(
        "UPDATE imports SET database_path = ?2, clips_dir = ?3, scratch_dir = ?4, updated_at = ?5 WHERE id = ?1",
        params![id, database, clips, scratch, now],
    )?;
    Ok(())
}

/// The process that last ran the job, if it was marked running.
pub fn runner(conn: &Connection, id: ImportId) -> Result<Option<u32>> {
    Ok(conn
        .query_row("SELECT runner_pid FROM imports WHERE id = ?1 AND status = 'running'", [id], |r| r.get(0))
        .optional()?
        .flatten())
}

/// The job starts (or resumes) in process `pid`: `running`, started once.
pub fn start(conn: &Connection, id: ImportId, pid: u32, now: Timestamp) -> Result<()> {
    conn.execute(
        "UPDATE imports SET status = 'running', started_at = coalesce(started_at, ?2), updated_at = ?2, error = NULL,
             runner_pid = ?3
         WHERE id = ?1",
        params![id, now, pid],
    )?;
    Ok(())
}

pub fn set_satellite(conn: &Connection, id: ImportId, satellite: SatelliteId, now: Timestamp) -> Result<()> {
    conn.execute("UPDATE imports SET satellite_id = ?2, updated_at = ?3 WHERE id = ?1", params![id, satellite, now])?;
    Ok(())
}

/// Writes the counters and the cursor after a committed batch (or a progress tick).
pub fn progress(conn: &Connection, id: ImportId, c: &Counts, cursor: i64, now: Timestamp) -> Result<()> {
    let text = |v: &dyn erased::Json| v.text();
    conn.prepare_cached(
        "UPDATE imports SET rows_total = ?2, rows_read = ?3, rows_added = ?4, rows_duplicate = ?5, rows_unmapped = ?6,
             rows_corrupt = ?7, clips_copied = ?8, clips_missing = ?9, clips_undecodable = ?10, rows_per_second = ?11,
             clips_per_second = ?12, seconds_left = ?13, unmapped_json = ?14, corrupt_json = ?15, missing_json = ?16,
             cursor = ?17, updated_at = ?18
         WHERE id = ?1",
    )?
    .execute(params![
        id,
        c.rows_total as i64,
        c.rows_read as i64,
        c.rows_added as i64,
        c.rows_duplicate as i64,
        c.rows_unmapped as i64,
        c.rows_corrupt as i64,
        c.clips_copied as i64,
        c.clips_missing as i64,
        c.clips_undecodable as i64,
        c.rows_per_second,
        c.clips_per_second,
        c.seconds_left,
        text(&c.unmapped),
        text(&c.corrupt),
        text(&c.missing_clips),
        cursor,
        now
    ])?;
    Ok(())
}

mod erased {
    //! Lists written as JSON text.
    pub trait Json {
        fn text(&self) -> String;
    }
    impl<T: serde::Serialize> Json for T {
        fn text(&self) -> String {
            serde_json::to_string(self).unwrap_or_else(|_| "[]".into())
        }
    }
}

/// The job ends: `done`, or `failed` with the reason.
pub fn finish(conn: &Connection, id: ImportId, error: Option<&str>, now: Timestamp) -> Result<()> {
    let status = if error.is_some() { ImportStatus::Failed } else { ImportStatus::Done };
    conn.execute(
        "UPDATE imports SET status = ?2, error = ?3, finished_at = ?4, updated_at = ?4, seconds_left = CASE WHEN ?3 IS NULL THEN 0 ELSE seconds_left END,
             scratch_dir = NULL
         WHERE id = ?1",
        params![id, status.as_str(), error, now],
    )?;
    Ok(())
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
