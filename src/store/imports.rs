//! Import jobs (issue 38): the `imports` row of each import of an old station, its counters,
//! lists and cursor. What the import writes besides is in [`super::import_rows`].

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

use super::Result;
use crate::{
    ids::{ImportId, SatelliteId, TenantId, UserId},
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
    /// What was imported: the path `birdhub import` was given, or the name of the uploaded file
    /// (never a path on the hub).
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
    /// The source as the row keeps it (a rerun of the same source finds its job by it): the
    /// canonical path, for an upload the file under `<data>/imports/uploads/`.
    pub source_key: String,
    /// The name the uploaded file was sent with, for a job started by an upload.
    pub uploaded: Option<String>,
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

/// The name an upload job's file was sent with: its source is
/// `<data>/imports/uploads/<uuid>/<the sent name, made safe>`.
pub fn uploaded_name(source: &str) -> Option<&str> {
    let (dir, name) = source.rsplit_once('/')?;
    let (parent, id) = dir.rsplit_once('/')?;
    (parent.ends_with("/imports/uploads") && uuid::Uuid::parse_str(id).is_ok() && !name.is_empty()).then_some(name)
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<ImportJob> {
    let n = |i: usize| -> rusqlite::Result<u64> { Ok(r.get::<_, i64>(i)?.max(0) as u64) };
    let source_key: String = r.get(4)?;
    let uploaded = uploaded_name(&source_key).map(str::to_owned);
    Ok(ImportJob {
        id: r.get(0)?,
        satellite_id: r.get(1)?,
        kind: r.get(2)?,
        schema: r.get(3)?,
        source: uploaded.clone().unwrap_or_else(|| source_key.clone()),
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
            source_key,
            uploaded,
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
