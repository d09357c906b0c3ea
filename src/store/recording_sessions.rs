//! Recording sessions (SPEC 2.12), kept up to date as chunks and detections arrive, so listing
//! them is an indexed read rather than a scan of every chunk.
//!
//! The rule: two chunks of one satellite belong to the same session when their start times
//! (`recorded_at`) are less than [`GAP_MS`] apart; a gap of exactly 5 minutes or more starts a new
//! session. Chunks may arrive out of order (a satellite emptying its outbox), so a chunk can
//! extend a session at either end, or bridge two sessions, which are then merged.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::Result;
use crate::ids::{ChunkId, SatelliteId, TenantId};

/// A gap of this many milliseconds or more between chunk starts begins a new session.
pub const GAP_MS: i64 = 5 * 60 * 1000;

struct Span {
    id: String,
    started_at: String,
    last_chunk_at: String,
    ended_at: String,
}

fn parse(t: &str) -> DateTime<Utc> {
    t.parse().unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

fn duration_ms(start: &str, end: &str) -> i64 {
    (parse(end) - parse(start)).num_milliseconds().max(0)
}

/// The chunk's session: joins the session(s) within 5 minutes of it, merging two it bridges, or
/// starts a new one. Call in the transaction that inserts the chunk.
pub fn add_chunk(
    conn: &Connection,
    chunk: ChunkId,
    tenant: TenantId,
    satellite: SatelliteId,
    recorded_at: &str,
    duration: i64,
) -> Result<String> {
    let at = parse(recorded_at);
    let gap = chrono::Duration::milliseconds(GAP_MS);
    let (lo, hi) = (crate::time::format(at - gap), crate::time::format(at + gap));
    let end = crate::time::format(at + chrono::Duration::milliseconds(duration.max(0)));
    // Sessions of one satellite never overlap and are 5 minutes apart, so only the two latest
    // starting before `hi` can be within reach.
    let mut stmt = conn.prepare_cached(
        "SELECT id, started_at, last_chunk_at, ended_at FROM recording_sessions
         WHERE satellite_id = ?1 AND started_at < ?2 ORDER BY started_at DESC LIMIT 2",
    )?;
    let mut near: Vec<Span> = stmt
        .query_map(params![satellite, hi], |r| {
            Ok(Span { id: r.get(0)?, started_at: r.get(1)?, last_chunk_at: r.get(2)?, ended_at: r.get(3)? })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?
        .into_iter()
        .filter(|s| s.last_chunk_at > lo)
        .collect();
    near.reverse(); // oldest first
    let id = match near.as_slice() {
        [] => {
            let id = uuid::Uuid::new_v4().to_string();
            conn.prepare_cached(
                "INSERT INTO recording_sessions (id, tenant_id, satellite_id, started_at, last_chunk_at, ended_at,
                     duration_ms, chunk_count)
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6, 1)",
            )?
            .execute(params![id, tenant, satellite, recorded_at, end, duration.max(0)])?;
            id
        }
        [one] => {
            extend(conn, one, recorded_at, &end, 1)?;
            one.id.clone()
        }
        [first, second, ..] => {
            merge(conn, first, second)?;
            let merged = Span {
                id: first.id.clone(),
                started_at: first.started_at.clone(),
                last_chunk_at: second.last_chunk_at.clone(),
                ended_at: first.ended_at.clone().max(second.ended_at.clone()),
            };
            extend(conn, &merged, recorded_at, &end, 1)?;
            first.id.clone()
        }
    };
    conn.prepare_cached("UPDATE audio_chunks SET session_id = ?1 WHERE id = ?2")?.execute(params![id, chunk])?;
    Ok(id)
}

/// Widens `s` to cover a chunk starting at `at` and ending at `end`.
fn extend(conn: &Connection, s: &Span, at: &str, end: &str, chunks: i64) -> Result<()> {
    let started = s.started_at.as_str().min(at);
    let last = s.last_chunk_at.as_str().max(at);
    let ended = s.ended_at.as_str().max(end);
    conn.prepare_cached(
        "UPDATE recording_sessions SET started_at = ?2, last_chunk_at = ?3, ended_at = ?4, duration_ms = ?5,
             chunk_count = chunk_count + ?6
         WHERE id = ?1",
    )?
    .execute(params![s.id, started, last, ended, duration_ms(started, ended), chunks])?;
    Ok(())
}

/// Folds session `b` into `a` (a chunk now bridges them): chunks, counts and species.
fn merge(conn: &Connection, a: &Span, b: &Span) -> Result<()> {
    conn.execute(
        "UPDATE recording_sessions SET
             chunk_count = chunk_count + (SELECT chunk_count FROM recording_sessions WHERE id = ?2),
             detection_count = detection_count + (SELECT detection_count FROM recording_sessions WHERE id = ?2)
         WHERE id = ?1",
        params![a.id, b.id],
    )?;
    conn.execute("UPDATE audio_chunks SET session_id = ?1 WHERE session_id = ?2", params![a.id, b.id])?;
    conn.execute(
        "INSERT INTO session_species (session_id, species_code, common_name, scientific_name, detections)
         SELECT ?1, species_code, common_name, scientific_name, detections FROM session_species WHERE session_id = ?2
         ON CONFLICT (session_id, species_code) DO UPDATE SET detections = detections + excluded.detections",
        params![a.id, b.id],
    )?;
    conn.execute("DELETE FROM recording_sessions WHERE id = ?1", [&b.id])?;
    conn.execute(
        "UPDATE recording_sessions SET species_count = (SELECT count(*) FROM session_species WHERE session_id = ?1)
         WHERE id = ?1",
        [&a.id],
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
    let session: Option<String> = conn
        .prepare_cached("SELECT session_id FROM audio_chunks WHERE id = ?1")?
        .query_row([chunk], |r| r.get(0))
        .optional()?
        .flatten();
    let Some(session) = session else { return Ok(()) };
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

/// Gives every chunk stored before sessions existed (or by an older hub) its session, in time
/// order per satellite, with its detections counted. Returns the number of chunks placed.
pub fn backfill(conn: &mut Connection) -> Result<u64> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let chunks: Vec<(ChunkId, TenantId, SatelliteId, String, i64)> = tx
        .prepare(
            "SELECT id, tenant_id, satellite_id, recorded_at, duration_ms FROM audio_chunks
             WHERE session_id IS NULL ORDER BY satellite_id, recorded_at",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (id, tenant, satellite, at, duration) in &chunks {
        add_chunk(&tx, *id, *tenant, *satellite, at, *duration)?;
        let species: Vec<(String, String, String)> = tx
            .prepare_cached(
                "SELECT species_code, common_name, scientific_name FROM detections WHERE audio_chunk_id = ?1",
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
    pub started_at: String,
    pub ended_at: String,
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
