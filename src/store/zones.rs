//! Time zones in the database (migration 0024): the zones in use with their UTC offsets, each
//! satellite's effective zone, each team's zone setting, and the bookkeeping of a zone move
//! (the rollups of a satellite counted over from one zone to another; `stats::zoned`).
//!
//! A satellite's effective zone is its override, else the zone of its coordinates, else its
//! team's `time_zone` setting ([`refresh_satellite`]). Its rollup rows are counted in
//! `zone_pk`; when the effective zone differs, [`start_move`] records a move that the zone mover
//! (`usecases::zones`) carries out in batches.

use chrono_tz::Tz;
use rusqlite::{Connection, OptionalExtension, params};

use super::Result;
use crate::{
    domain::zone,
    ids::{SatelliteId, TenantId},
    time::Timestamp,
};

/// Runs `f` as one unit inside a savepoint (a transaction of its own when the caller holds
/// none): another connection never sees half of it.
fn atomic<T>(conn: &Connection, f: impl FnOnce() -> Result<T>) -> Result<T> {
    // Outside a transaction, an IMMEDIATE one: it takes the write lock first (waiting its
    // turn), so it never fails half-way on another writer's snapshot as a deferred one can.
    let (begin, end, undo) = if conn.is_autocommit() {
        ("BEGIN IMMEDIATE", "COMMIT", "ROLLBACK")
    } else {
        ("SAVEPOINT zones", "RELEASE zones", "ROLLBACK TO zones; RELEASE zones")
    };
    conn.execute_batch(begin)?;
    match f() {
        Ok(v) => {
            conn.execute_batch(end)?;
            Ok(v)
        }
        Err(e) => {
            let _ = conn.execute_batch(undo);
            Err(e)
        }
    }
}

/// The key of `tz` in `zones`, adding the zone and its offsets on first use (all at once: a
/// zone is never seen without its offsets).
pub fn ensure(conn: &Connection, tz: Tz) -> Result<i64> {
    atomic(conn, || ensure_in(conn, tz))
}

fn ensure_in(conn: &Connection, tz: Tz) -> Result<i64> {
    let name = tz.name();
    if let Some(pk) =
        conn.prepare_cached("SELECT pk FROM zones WHERE name = ?1")?.query_row([name], |r| r.get(0)).optional()?
    {
        return Ok(pk);
    }
    conn.execute("INSERT INTO zones (name) VALUES (?1)", [name])?;
    let pk = conn.last_insert_rowid();
    let mut insert =
        conn.prepare_cached("INSERT INTO zone_offsets (zone_pk, start_ms, offset_s) VALUES (?1, ?2, ?3)")?;
    for (start, offset) in zone::offset_steps(tz) {
        insert.execute(params![pk, start, offset])?;
    }
    Ok(pk)
}

/// A stored zone name, read back; an unknown one (a tz database that dropped it) is UTC.
fn named(name: Option<String>) -> Option<Tz> {
    name.and_then(|n| zone::parse(&n).ok())
}

/// The team's zone: its `time_zone` setting, else the hub's zone.
pub fn team_zone(conn: &Connection, tenant: &TenantId) -> Result<Tz> {
    let stored: Option<String> = conn
        .prepare_cached("SELECT value_json FROM settings WHERE scope = ?1 AND key = 'time_zone'")?
        .query_row([tenant.to_string()], |r| r.get(0))
        .optional()?;
    let name = stored.and_then(|json| serde_json::from_str::<String>(&json).ok());
    Ok(named(name).unwrap_or_else(crate::time::hub_zone))
}

/// Stores the team's zone setting when it has none (a new team takes the hub's zone of the day
/// it was created, and keeps it when the hub moves).
pub fn default_team_zone(conn: &Connection, tenant: &TenantId, tz: Tz, now: Timestamp) -> Result<()> {
    conn.execute(
        "INSERT OR IGNORE INTO settings (scope, key, value_json, updated_at) VALUES (?1, 'time_zone', ?2, ?3)",
        params![tenant.to_string(), serde_json::Value::from(tz.name()).to_string(), now],
    )?;
    Ok(())
}

/// A satellite's effective zone; one not resolved yet takes its team's.
pub fn satellite_zone(conn: &Connection, id: &SatelliteId) -> Result<Tz> {
    Ok(satellite_zone_info(conn, id)?.zone)
}

/// Where a satellite's zone comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ZoneSource {
    /// Chosen for this satellite.
    Override,
    /// Found from its coordinates.
    Position,
    /// Its team's zone (no coordinates, no override).
    Team,
}

impl ZoneSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Override => "override",
            Self::Position => "position",
            Self::Team => "team",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Override, Self::Position, Self::Team].into_iter().find(|z| z.as_str() == s)
    }
}

/// A satellite's zone as its page and the API show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SatelliteZone {
    pub zone: Tz,
    pub source: ZoneSource,
    pub zone_override: Option<String>,
}

/// What [`satellite_zone`] reads, with where it came from.
pub fn satellite_zone_info(conn: &Connection, id: &SatelliteId) -> Result<SatelliteZone> {
    let (name, source, over, tenant): (Option<String>, Option<String>, Option<String>, TenantId) = conn
        .prepare_cached("SELECT time_zone, zone_source, zone_override, tenant_id FROM satellites WHERE id = ?1")?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
    let source = source.as_deref().and_then(ZoneSource::parse).unwrap_or(ZoneSource::Team);
    let zone = match named(name) {
        Some(tz) => tz,
        None => team_zone(conn, &tenant)?,
    };
    Ok(SatelliteZone { zone, source, zone_override: over })
}

/// Decides a satellite's effective zone from its override, position and team, stores it, and
/// starts moving its rollups when it changed (or marks the move wanted if one is running).
/// `find` looks a position's zone up (tzf; the caller keeps one finder for many satellites).
fn refresh_satellite(
    conn: &Connection,
    pk: i64,
    find: &mut dyn FnMut(f64, f64) -> Option<Tz>,
    now: Timestamp,
) -> Result<Tz> {
    atomic(conn, || refresh_in(conn, pk, find, now))
}

fn refresh_in(conn: &Connection, pk: i64, find: &mut dyn FnMut(f64, f64) -> Option<Tz>, now: Timestamp) -> Result<Tz> {
    let (tenant, over, lat, lon): (TenantId, Option<String>, Option<f64>, Option<f64>) = conn
        .prepare_cached("SELECT tenant_id, zone_override, latitude, longitude FROM satellites WHERE pk = ?1")?
        .query_row([pk], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
    let (tz, source) = match (named(over), lat.zip(lon).and_then(|(la, lo)| find(la, lo))) {
        (Some(tz), _) => (tz, ZoneSource::Override),
        (None, Some(tz)) => (tz, ZoneSource::Position),
        (None, None) => (team_zone(conn, &tenant)?, ZoneSource::Team),
    };
    conn.prepare_cached("UPDATE satellites SET time_zone = ?2, zone_source = ?3 WHERE pk = ?1")?.execute(params![
        pk,
        tz.name(),
        source.as_str()
    ])?;
    start_move(conn, pk, now)?;
    Ok(tz)
}

/// Decides the zones of the satellites `pks` ([`refresh_satellite`]), loading the position
/// finder (about 0.05 s) only once and only if one of them has a position.
pub fn refresh_all(conn: &Connection, pks: &[i64], now: Timestamp) -> Result<()> {
    let mut finder: Option<zone::Finder> = None;
    let mut find = |lat: f64, lon: f64| finder.get_or_insert_with(zone::Finder::load).at(lat, lon);
    for &pk in pks {
        refresh_satellite(conn, pk, &mut find, now)?;
    }
    Ok(())
}

/// Whether the database has zones (migration 0024).
pub fn present(conn: &Connection) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'zones'")?
        .query_row([], |r| r.get(0))?)
}

/// How a new satellite, or one that moved, gets its zone at once ([`refresh_all`]).
pub fn refresh_now(conn: &Connection, pk: i64) -> Result<()> {
    refresh_all(conn, &[pk], Timestamp(chrono::Utc::now()))
}

/// Satellites whose zone is to be decided: new rows, every row after migration 0024, and those
/// that moved ([`super::satellites::set_location`]).
pub fn unresolved(conn: &Connection) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare_cached(
        "SELECT pk FROM satellites WHERE (time_zone IS NULL OR zone_source IS NULL) AND pk IS NOT NULL ORDER BY pk",
    )?;
    let rows = stmt.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(rows)
}

/// The satellites of a team that follow its zone (no override and no position of their own),
/// and those with a position (re-resolved in case they have none any more).
pub fn following_team(conn: &Connection, tenant: &TenantId) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare_cached(
        "SELECT pk FROM satellites WHERE tenant_id = ?1 AND pk IS NOT NULL AND (zone_source IS NULL OR zone_source = 'team')",
    )?;
    let rows = stmt.query_map([tenant], |r| r.get(0))?.collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(rows)
}

/// Sets or clears a satellite's zone override (the caller refreshes it afterwards).
pub fn set_override(conn: &Connection, id: &SatelliteId, zone: Option<Tz>) -> Result<i64> {
    Ok(conn
        .prepare_cached("UPDATE satellites SET zone_override = ?2 WHERE id = ?1 RETURNING pk")?
        .query_row(params![id, zone.map(|z| z.name())], |r| r.get(0))?)
}

/// Starts moving a satellite's rollups to its effective zone when they are counted in another
/// and no move is running: from now on new rows count in the new zone, and the rows it had
/// (pk up to the current maximum) are counted over by [`super::stats::zoned::move_batch`].
/// Returns whether a move started.
pub fn start_move(conn: &Connection, pk: i64, now: Timestamp) -> Result<bool> {
    let wanted: Option<(String, i64)> = conn
        .prepare_cached(
            "SELECT s.time_zone, s.zone_pk FROM satellites s
             WHERE s.pk = ?1 AND s.zone_move_from IS NULL AND s.time_zone IS NOT NULL
               AND s.time_zone IS NOT (SELECT name FROM zones WHERE pk = s.zone_pk)",
        )?
        .query_row([pk], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((name, from)) = wanted else { return Ok(false) };
    let Ok(tz) = zone::parse(&name) else { return Ok(false) };
    let to = ensure(conn, tz)?;
    let rows: i64 = conn
        .prepare_cached(
            "SELECT (SELECT count(*) FROM detections WHERE satellite_pk = ?1) + (SELECT count(*) FROM audio_chunks WHERE satellite_pk = ?1)",
        )?
        .query_row([pk], |r| r.get(0))?;
    if rows == 0 {
        // Nothing counted yet: nothing to move.
        conn.prepare_cached("UPDATE satellites SET zone_pk = ?2 WHERE pk = ?1")?.execute(params![pk, to])?;
        return Ok(false);
    }
    conn.prepare_cached(
        "UPDATE satellites SET zone_move_from = ?2, zone_pk = ?3, zone_move_started_at = ?4,
             zone_move_det_done = 0, zone_move_chunk_done = 0,
             zone_move_det_last = coalesce((SELECT max(pk) FROM detections WHERE satellite_pk = ?1), 0),
             zone_move_chunk_last = coalesce((SELECT max(pk) FROM audio_chunks WHERE satellite_pk = ?1), 0),
             zone_move_total = ?5, zone_move_moved = 0
         WHERE pk = ?1",
    )?
    .execute(params![pk, from, to, now, rows])?;
    Ok(true)
}

/// A move in progress, for the progress report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    pub satellite_pk: i64,
    pub satellite_id: SatelliteId,
    pub satellite_name: String,
    pub tenant_id: TenantId,
    pub from: String,
    pub to: String,
    pub moved: i64,
    pub total: i64,
    pub started_at: Option<Timestamp>,
}

/// The moves running, of one team or of all.
pub fn moves(conn: &Connection, tenant: Option<&TenantId>) -> Result<Vec<Move>> {
    let mut stmt = conn.prepare_cached(
        "SELECT s.pk, s.id, s.name, s.tenant_id, f.name, t.name, s.zone_move_moved, s.zone_move_total, s.zone_move_started_at
         FROM satellites s JOIN zones f ON f.pk = s.zone_move_from JOIN zones t ON t.pk = s.zone_pk
         WHERE s.zone_move_from IS NOT NULL AND (?1 IS NULL OR s.tenant_id = ?1) ORDER BY s.zone_move_started_at, s.pk",
    )?;
    let rows = stmt
        .query_map([tenant], |r| {
            Ok(Move {
                satellite_pk: r.get(0)?,
                satellite_id: r.get(1)?,
                satellite_name: r.get(2)?,
                tenant_id: r.get(3)?,
                from: r.get(4)?,
                to: r.get(5)?,
                moved: r.get(6)?,
                total: r.get(7)?,
                started_at: r.get(8)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Satellites whose rollups are in another zone than their effective one and have no move yet
/// (a change made while an earlier move ran).
pub fn pending_moves(conn: &Connection) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare_cached(
        "SELECT s.pk FROM satellites s WHERE s.zone_move_from IS NULL AND s.time_zone IS NOT NULL
           AND s.time_zone IS NOT (SELECT name FROM zones WHERE pk = s.zone_pk)",
    )?;
    let rows = stmt.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(rows)
}

/// Counts every satellite's rows as being in its effective zone without moving anything: after a
/// full rebuild of the rollups, which counts them so.
pub fn settle_all(conn: &Connection) -> Result<()> {
    let mut stmt = conn.prepare("SELECT DISTINCT time_zone FROM satellites WHERE time_zone IS NOT NULL")?;
    let names = stmt.query_map([], |r| r.get::<_, String>(0))?.collect::<rusqlite::Result<Vec<_>>>()?;
    for name in names {
        if let Ok(tz) = zone::parse(&name) {
            let pk = ensure(conn, tz)?;
            conn.execute("UPDATE satellites SET zone_pk = ?1 WHERE time_zone = ?2", params![pk, name])?;
        }
    }
    conn.execute("UPDATE satellites SET zone_move_from = NULL", [])?;
    Ok(())
}

/// Carries a satellite's running move one batch further (at most `size` detections and `size`
/// chunks), in one IMMEDIATE transaction: stats readers see the counts before or after the
/// batch, never a half-moved row. Returns whether the move is finished.
pub fn move_step(conn: &mut Connection, pk: i64, size: i64, now: Timestamp) -> Result<bool> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let state: Option<(i64, i64, i64, i64, i64, i64)> = tx
        .prepare_cached(
            "SELECT zone_move_from, zone_pk, zone_move_det_done, zone_move_det_last, zone_move_chunk_done, zone_move_chunk_last
             FROM satellites WHERE pk = ?1 AND zone_move_from IS NOT NULL",
        )?
        .query_row([pk], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
        .optional()?;
    let Some((from, to, det_done, det_last, chunk_done, chunk_last)) = state else { return Ok(true) };
    // The batch's last pk: the `size`-th of the satellite's rows after `done`, else `last`. The
    // `+` keeps SQLite on the primary key rather than the satellite's time index.
    let end = |table: &str, done: i64, last: i64| -> Result<i64> {
        let found: Option<i64> = tx
            .prepare_cached(&format!(
                "SELECT pk FROM {table} WHERE pk > ?2 AND pk <= ?3 AND +satellite_pk = ?1 ORDER BY pk LIMIT 1 OFFSET ?4"
            ))?
            .query_row(params![pk, done, last, size - 1], |r| r.get(0))
            .optional()?;
        Ok(found.unwrap_or(last))
    };
    let (det_hi, chunk_hi) = (end("detections", det_done, det_last)?, end("audio_chunks", chunk_done, chunk_last)?);
    let count = |table: &str, lo: i64, hi: i64| -> Result<i64> {
        Ok(tx
            .prepare_cached(&format!("SELECT count(*) FROM {table} WHERE pk > ?2 AND pk <= ?3 AND +satellite_pk = ?1"))?
            .query_row(params![pk, lo, hi], |r| r.get(0))?)
    };
    let moved = count("detections", det_done, det_hi)? + count("audio_chunks", chunk_done, chunk_hi)?;
    super::stats::zoned::move_batch(
        &tx,
        &super::stats::zoned::Batch {
            satellite_pk: pk,
            from,
            to,
            det: (det_done, det_hi),
            chunk: (chunk_done, chunk_hi),
        },
    )?;
    let finished = det_hi >= det_last && chunk_hi >= chunk_last;
    tx.prepare_cached(
        "UPDATE satellites SET zone_move_det_done = ?2, zone_move_chunk_done = ?3, zone_move_moved = zone_move_moved + ?4,
             zone_move_from = CASE WHEN ?5 THEN NULL ELSE zone_move_from END
         WHERE pk = ?1",
    )?
    .execute(params![pk, det_hi, chunk_hi, moved, finished])?;
    // A change made while this move ran starts its own, which is work left.
    let restarted = finished && start_move(&tx, pk, now)?;
    tx.commit()?;
    Ok(finished && !restarted)
}
