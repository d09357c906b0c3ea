//! Recording sessions (SPEC 2.12), kept up to date as chunks and detections arrive, so listing
//! them is an indexed read rather than a scan of every chunk.
//!
//! The rule (a gap of 5 minutes between chunk starts begins a new session; a chunk can extend a
//! session at either end or bridge two) is `domain::sessions`; this file applies it to the rows.

use rusqlite::{Connection, OptionalExtension, params};

use super::Result;
use crate::{
    domain::sessions::{self, Placement, Span},
    ids::{ChunkId, SatelliteId, TenantId},
    time::Timestamp,
};

pub use crate::domain::sessions::GAP_MS;

/// A stored session and its extent.
struct Stored {
    id: String,
    span: Span,
}

/// The chunk's session: joins the session within 5 minutes of it, merges two it bridges, or
/// starts a new one (the rule is `domain::sessions`). Call in the transaction that inserts the chunk.
pub fn add_chunk(
    conn: &Connection,
    chunk: ChunkId,
    tenant: TenantId,
    satellite: SatelliteId,
    recorded_at: Timestamp,
    duration: i64,
) -> Result<String> {
    let id = place_chunk(conn, tenant, satellite, recorded_at, duration)?;
    conn.prepare_cached(
        "UPDATE audio_chunks SET session_pk = (SELECT pk FROM recording_sessions WHERE id = ?1) WHERE id = ?2",
    )?
    .execute(params![id, chunk])?;
    Ok(id)
}

/// The session a chunk not yet stored belongs in, counted and extended as [`add_chunk`] does; the
/// caller inserts the chunk with that session (ingest: one write of the chunk's row instead of
/// an insert and an update, issue 39).
pub fn place_chunk(
    conn: &Connection,
    tenant: TenantId,
    satellite: SatelliteId,
    recorded_at: Timestamp,
    duration: i64,
) -> Result<String> {
    let at = recorded_at.at();
    let this = Span::of_chunk(at, duration);
    let mut stmt = conn.prepare_cached(
        "SELECT id, started_at, last_chunk_at, ended_at FROM recording_sessions
         WHERE satellite_id = ?1 AND started_at < ?2 ORDER BY started_at DESC LIMIT 2",
    )?;
    let mut near: Vec<Stored> = stmt
        .query_map(params![satellite, Timestamp(sessions::candidates_start_before(at))], |r| {
            let (started, last, ended): (Timestamp, Timestamp, Timestamp) = (r.get(1)?, r.get(2)?, r.get(3)?);
            Ok(Stored {
                id: r.get(0)?,
                span: Span { started_at: started.at(), last_chunk_at: last.at(), ended_at: ended.at() },
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?
        .into_iter()
        .filter(|s| sessions::within_reach(&s.span, at))
        .collect();
    near.reverse(); // oldest first
    let spans: Vec<Span> = near.iter().map(|s| s.span).collect();
    let id = match sessions::place(&spans) {
        Placement::New => {
            let id = uuid::Uuid::new_v4().to_string();
            conn.prepare_cached(
                "INSERT INTO recording_sessions (id, tenant_id, satellite_id, started_at, last_chunk_at, ended_at,
                     duration_ms, chunk_count)
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6, 1)",
            )?
            .execute(params![
                id,
                tenant,
                satellite,
                recorded_at,
                Timestamp(this.ended_at),
                this.duration_ms()
            ])?;
            id
        }
        Placement::Join(i) => {
            let s = &near[i];
            extend(conn, &s.id, &s.span, &s.span.union(&this))?;
            s.id.clone()
        }
        Placement::Merge(a, b) => {
            let (first, second) = (&near[a], &near[b]);
            merge(conn, &first.id, &second.id)?;
            extend(conn, &first.id, &first.span, &first.span.union(&second.span).union(&this))?;
            first.id.clone()
        }
    };
    Ok(id)
}

/// Stores the session's new extent and counts one more chunk. `was` is the extent before: a
/// chunk at the end (nearly every one) leaves `started_at` out of the update, so the four indexes
/// that hold only it and other unchanged columns are not rewritten (SQLite rewrites every index
/// on a column the update sets, whatever the value; issue 39).
fn extend(conn: &Connection, id: &str, was: &Span, span: &Span) -> Result<()> {
    let (last, ended, duration) = (Timestamp(span.last_chunk_at), Timestamp(span.ended_at), span.duration_ms());
    if span.started_at == was.started_at {
        conn.prepare_cached(
            "UPDATE recording_sessions SET last_chunk_at = ?2, ended_at = ?3, duration_ms = ?4,
                 chunk_count = chunk_count + 1
             WHERE id = ?1",
        )?
        .execute(params![id, last, ended, duration])?;
    } else {
        conn.prepare_cached(
            "UPDATE recording_sessions SET started_at = ?2, last_chunk_at = ?3, ended_at = ?4, duration_ms = ?5,
                 chunk_count = chunk_count + 1
             WHERE id = ?1",
        )?
        .execute(params![id, Timestamp(span.started_at), last, ended, duration])?;
    }
    Ok(())
}

/// Folds session `b` into `a` (a chunk now bridges them): chunks, counts and species.
fn merge(conn: &Connection, a: &str, b: &str) -> Result<()> {
    conn.execute(
        "UPDATE recording_sessions SET
             chunk_count = chunk_count + (SELECT chunk_count FROM recording_sessions WHERE id = ?2),
             detection_count = detection_count + (SELECT detection_count FROM recording_sessions WHERE id = ?2)
         WHERE id = ?1",
        params![a, b],
    )?;
    conn.execute(
        "UPDATE audio_chunks SET session_pk = (SELECT pk FROM recording_sessions WHERE id = ?1)
         WHERE session_pk = (SELECT pk FROM recording_sessions WHERE id = ?2)",
        params![a, b],
    )?;
    conn.execute(
        "INSERT INTO session_species (session_id, species_code, common_name, scientific_name, detections)
         SELECT ?1, species_code, common_name, scientific_name, detections FROM session_species WHERE session_id = ?2
         ON CONFLICT (session_id, species_code) DO UPDATE SET detections = detections + excluded.detections",
        params![a, b],
    )?;
    conn.execute("DELETE FROM recording_sessions WHERE id = ?1", [b])?;
    conn.execute(
        "UPDATE recording_sessions SET species_count = (SELECT count(*) FROM session_species WHERE session_id = ?1)
         WHERE id = ?1",
        [a],
    )?;
    Ok(())
}

/// Counts a new detection in its chunk's session (its detection and species totals).
pub fn add_detection(
    conn: &Connection,
    chunk: ChunkId,
    species_code: &str,
    common_name: &str,
    scientific_name: &str,
) -> Result<()> {
    let Some(session) = session_of(conn, chunk)? else { return Ok(()) };
    let new_species = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO session_species (session_id, species_code, common_name, scientific_name, detections)
             VALUES (?1, ?2, ?3, ?4, 1)",
        )?
        .execute(params![session, species_code, common_name, scientific_name])?;
    if new_species == 0 {
        conn.prepare_cached(
            "UPDATE session_species SET detections = detections + 1 WHERE session_id = ?1 AND species_code = ?2",
        )?
        .execute(params![session, species_code])?;
    }
    conn.prepare_cached(
        "UPDATE recording_sessions SET detection_count = detection_count + 1, species_count = species_count + ?2
         WHERE id = ?1",
    )?
    .execute(params![session, new_species as i64])?;
    Ok(())
}

/// The id of the session a chunk belongs to, if any.
fn session_of(conn: &Connection, chunk: ChunkId) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached(
            "SELECT (SELECT id FROM recording_sessions WHERE pk = c.session_pk) FROM audio_chunks c WHERE c.id = ?1",
        )?
        .query_row([chunk], |r| r.get(0))
        .optional()?
        .flatten())
}

/// Takes a detection that people rejected out of its chunk's session (the reverse of
/// [`add_detection`]): a session's summary counts no rejected detection.
pub fn remove_detection(conn: &Connection, chunk: ChunkId, species_code: &str) -> Result<()> {
    let Some(session) = session_of(conn, chunk)? else { return Ok(()) };
    conn.prepare_cached(
        "UPDATE session_species SET detections = detections - 1 WHERE session_id = ?1 AND species_code = ?2",
    )?
    .execute(params![session, species_code])?;
    let gone = conn
        .prepare_cached("DELETE FROM session_species WHERE session_id = ?1 AND species_code = ?2 AND detections <= 0")?
        .execute(params![session, species_code])?;
    conn.prepare_cached(
        "UPDATE recording_sessions SET detection_count = max(detection_count - 1, 0), species_count = max(species_count - ?2, 0)
         WHERE id = ?1",
    )?
    .execute(params![session, gone as i64])?;
    Ok(())
}

/// Gives every chunk stored before sessions existed (or by an older hub) its session, in time
/// order per satellite, with its detections counted. Returns the number of chunks placed.
pub fn backfill(conn: &mut Connection) -> Result<u64> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let chunks: Vec<(ChunkId, TenantId, SatelliteId, Timestamp, i64)> = tx
        .prepare(
            "SELECT c.id, (SELECT id FROM tenants WHERE pk = c.tenant_pk), (SELECT id FROM satellites WHERE pk = c.satellite_pk),
                 c.recorded_at, c.duration_ms
             FROM audio_chunks c WHERE c.session_pk IS NULL ORDER BY c.satellite_pk, c.recorded_at",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (id, tenant, satellite, at, duration) in &chunks {
        add_chunk(&tx, *id, *tenant, *satellite, *at, *duration)?;
        let species: Vec<(String, String, String)> = tx
            .prepare_cached(
                "SELECT l.species_code, l.common_name, l.scientific_name FROM detections d
                 JOIN species_labels l ON l.pk = d.species_pk
                 WHERE d.chunk_pk = (SELECT pk FROM audio_chunks WHERE id = ?1) AND d.verification_status <> 'rejected'",
            )?
            .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (code, common, scientific) in &species {
            add_detection(&tx, *id, code, common, scientific)?;
        }
    }
    tx.commit()?;
    Ok(chunks.len() as u64)
}

/// A session as the API lists it (snake_case, like the SPEC's records).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Session {
    pub id: String,
    pub tenant_id: TenantId,
    pub satellite_id: SatelliteId,
    pub satellite_name: String,
    pub started_at: Timestamp,
    pub ended_at: Timestamp,
    pub duration_ms: i64,
    pub chunk_count: i64,
    pub detection_count: i64,
    pub species_count: i64,
    /// The session's detection summary: its most detected species (at most [`TOP_SPECIES`]).
    pub top_species: Vec<SpeciesCount>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SpeciesCount {
    pub species_code: String,
    pub common_name: String,
    pub scientific_name: String,
    pub detections: i64,
}

pub const TOP_SPECIES: usize = 5;

/// `sortBy` of `GET /sessions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    Date,
    Duration,
    Detections,
    Species,
    Chunks,
}

impl crate::domain::sort::SortField for SortBy {
    const FIELDS: &'static [(&'static str, Self)] = &[
        ("date", SortBy::Date),
        ("duration", SortBy::Duration),
        ("detections", SortBy::Detections),
        ("species", SortBy::Species),
        ("chunks", SortBy::Chunks),
    ];
}

impl SortBy {
    /// The index that gives this order (named, because without statistics SQLite may pick
    /// another index on `tenant_id` and sort every session of the team).
    fn index(self) -> &'static str {
        match self {
            Self::Date => "recording_sessions_tenant_time",
            Self::Duration => "recording_sessions_tenant_duration",
            Self::Detections => "recording_sessions_tenant_detections",
            Self::Species => "recording_sessions_tenant_species",
            Self::Chunks => "recording_sessions_tenant_chunks",
        }
    }

    fn column(self) -> &'static str {
        match self {
            Self::Date => "r.started_at",
            Self::Duration => "r.duration_ms",
            Self::Detections => "r.detection_count",
            Self::Species => "r.species_count",
            Self::Chunks => "r.chunk_count",
        }
    }
}

/// Every index the session list can name.
#[cfg(test)]
pub(super) fn every_index() -> Vec<&'static str> {
    use crate::domain::sort::SortField;
    SortBy::FIELDS.iter().map(|(_, s)| s.index()).collect()
}

#[derive(Debug, Clone)]
pub struct Filter {
    pub satellite_id: Option<SatelliteId>,
    /// `Some(true)`: only sessions with detections; `Some(false)`: only those without.
    pub with_detections: Option<bool>,
    pub sort_by: SortBy,
    pub descending: bool,
    pub limit: u32,
    pub offset: u32,
}

/// One page of sessions and the total matching.
pub fn list(conn: &Connection, tenant: TenantId, f: &Filter) -> Result<(Vec<Session>, u64)> {
    let content = match f.with_detections {
        None => "",
        Some(true) => " AND r.detection_count > 0",
        Some(false) => " AND r.detection_count = 0",
    };
    let filter = format!("r.tenant_id = ?1 AND (?2 IS NULL OR r.satellite_id = ?2){content}");
    let total: i64 = conn.query_row(
        &format!("SELECT count(*) FROM recording_sessions r WHERE {filter}"),
        params![tenant, f.satellite_id],
        |r| r.get(0),
    )?;
    let dir = if f.descending { "DESC" } else { "ASC" };
    let order = match f.sort_by {
        SortBy::Date => format!("r.started_at {dir}, r.rowid {dir}"),
        // Ties by start time in the same direction, so the sort's index gives the order.
        other => format!("{} {dir}, r.started_at {dir}, r.rowid {dir}", other.column()),
    };
    let sql = format!(
        "SELECT r.id, r.tenant_id, r.satellite_id, s.name, r.started_at, r.ended_at, r.duration_ms, r.chunk_count,
             r.detection_count, r.species_count
         FROM recording_sessions r INDEXED BY {} JOIN satellites s ON s.id = r.satellite_id
         WHERE {filter} ORDER BY {order} LIMIT ?3 OFFSET ?4",
        f.sort_by.index()
    );
    let mut sessions = conn
        .prepare(&sql)?
        .query_map(params![tenant, f.satellite_id, f.limit, f.offset], |r| {
            Ok(Session {
                id: r.get(0)?,
                tenant_id: r.get(1)?,
                satellite_id: r.get(2)?,
                satellite_name: r.get(3)?,
                started_at: r.get(4)?,
                ended_at: r.get(5)?,
                duration_ms: r.get(6)?,
                chunk_count: r.get(7)?,
                detection_count: r.get(8)?,
                species_count: r.get(9)?,
                top_species: Vec::new(),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    attach_top_species(conn, &mut sessions)?;
    Ok((sessions, total.max(0) as u64))
}

/// The detection summaries of a page of sessions, in one query.
fn attach_top_species(conn: &Connection, sessions: &mut [Session]) -> Result<()> {
    let with: Vec<&str> = sessions.iter().filter(|s| s.detection_count > 0).map(|s| s.id.as_str()).collect();
    if with.is_empty() {
        return Ok(());
    }
    let marks = vec!["?"; with.len()].join(",");
    let mut stmt = conn.prepare(&format!(
        "SELECT session_id, species_code, common_name, scientific_name, detections FROM session_species
         WHERE session_id IN ({marks}) ORDER BY session_id, detections DESC, common_name"
    ))?;
    let rows = stmt.query_map(rusqlite::params_from_iter(with), |r| {
        Ok((
            r.get::<_, String>(0)?,
            SpeciesCount {
                species_code: r.get(1)?,
                common_name: r.get(2)?,
                scientific_name: r.get(3)?,
                detections: r.get(4)?,
            },
        ))
    })?;
    let mut by_session: std::collections::HashMap<String, Vec<SpeciesCount>> = std::collections::HashMap::new();
    for row in rows {
        let (id, species) = row?;
        let list = by_session.entry(id).or_default();
        if list.len() < TOP_SPECIES {
            list.push(species);
        }
    }
    for s in sessions {
        s.top_species = by_session.remove(&s.id).unwrap_or_default();
    }
    Ok(())
}

#[cfg(test)]
#[path = "recording_sessions_tests.rs"]
mod tests;
