//! BirdWeather stations and their outbox (migration 0027, docs/birdweather.md). A station row
//! per sharing satellite holds its sealed token; the outbox gets a row per detection the
//! `birdweather_enqueue` trigger queues when it becomes confirmed. The sender leases due rows
//! (at most one per station at a time), and writes each attempt's outcome back.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;

use super::Result;
use crate::{
    ids::{ChunkId, DetectionId, SatelliteId, TenantId},
    time::Timestamp,
};

const SAT: &str = "(SELECT pk FROM satellites WHERE id = ?1)";

/// A satellite's BirdWeather station.
#[derive(Debug, Clone, PartialEq)]
pub struct Station {
    pub token_sealed: String,
    pub token_hint: String,
    pub enabled: bool,
    pub min_confidence: f64,
    pub consecutive_failures: u32,
    pub paused_until: Option<Timestamp>,
    pub last_success_at: Option<Timestamp>,
    pub last_error: Option<String>,
    pub last_error_at: Option<Timestamp>,
}

pub fn station(conn: &Connection, sat: SatelliteId) -> Result<Option<Station>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT token_sealed, token_hint, enabled, min_confidence, consecutive_failures, paused_until,
                    last_success_at, last_error, last_error_at
             FROM birdweather_stations WHERE satellite_pk = {SAT}"
        ))?
        .query_row([sat], |r| {
            Ok(Station {
                token_sealed: r.get(0)?,
                token_hint: r.get(1)?,
                enabled: r.get(2)?,
                min_confidence: r.get(3)?,
                consecutive_failures: r.get(4)?,
                paused_until: r.get(5)?,
                last_success_at: r.get(6)?,
                last_error: r.get(7)?,
                last_error_at: r.get(8)?,
            })
        })
        .optional()?)
}

/// A new or changed station. `token` is `(sealed, hint)` when a new token is given; a station
/// without a row needs one (`NotFound` otherwise).
pub struct StationChange<'a> {
    pub token: Option<(&'a str, &'a str)>,
    pub enabled: bool,
    pub min_confidence: f64,
}

/// Writes a station. A new token starts it afresh: no failures, no pause, no error, and its
/// queued detections due at once.
pub fn put_station(conn: &Connection, sat: SatelliteId, ch: &StationChange<'_>, now: Timestamp) -> Result<()> {
    let n = match ch.token {
        Some((sealed, hint)) => conn.execute(
            "INSERT INTO birdweather_stations (satellite_pk, token_sealed, token_hint, enabled, min_confidence, updated_at)
                 SELECT pk, ?2, ?3, ?4, ?5, ?6 FROM satellites WHERE id = ?1
                 ON CONFLICT (satellite_pk) DO UPDATE SET token_sealed = excluded.token_sealed,
                     token_hint = excluded.token_hint, enabled = excluded.enabled,
                     min_confidence = excluded.min_confidence, consecutive_failures = 0, paused_until = NULL,
                     last_error = NULL, last_error_at = NULL, updated_at = excluded.updated_at",
            params![sat, sealed, hint, ch.enabled, ch.min_confidence, now.millis()],
        )?,
        None => conn.execute(
            &format!(
                "UPDATE birdweather_stations SET enabled = ?2, min_confidence = ?3, updated_at = ?4
                 WHERE satellite_pk = {SAT}"
            ),
            params![sat, ch.enabled, ch.min_confidence, now.millis()],
        )?,
    };
    if n == 0 {
        return Err(super::Error::NotFound);
    }
    if ch.token.is_some() {
        conn.execute(
            &format!(
                "UPDATE birdweather_outbox SET next_attempt_at = ?2 WHERE satellite_pk = {SAT} AND status = 'queued'"
            ),
            params![sat, now.millis()],
        )?;
    }
    Ok(())
}

/// Removes a station; its queued detections are skipped (the reason says why).
pub fn delete_station(conn: &Connection, sat: SatelliteId, now: Timestamp) -> Result<bool> {
    conn.execute(
        &format!(
            "UPDATE birdweather_outbox SET status = 'skipped', reason = 'BirdWeather sharing was removed', updated_at = ?2
             WHERE satellite_pk = {SAT} AND status = 'queued'"
        ),
        params![sat, now.millis()],
    )?;
    let n = conn.execute(&format!("DELETE FROM birdweather_stations WHERE satellite_pk = {SAT}"), [sat])?;
    Ok(n == 1)
}

/// How many of a satellite's detections are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[schema(as = BirdweatherCounts)]
pub struct Counts {
    pub queued: i64,
    pub sent: i64,
    pub skipped: i64,
    pub failed: i64,
}

pub fn counts(conn: &Connection, sat: SatelliteId) -> Result<Counts> {
    let mut c = Counts::default();
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT status, count(*) FROM birdweather_outbox WHERE satellite_pk = {SAT} GROUP BY status"
    ))?;
    for row in stmt.query_map([sat], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
        let (status, n) = row?;
        match status.as_str() {
            "queued" => c.queued = n,
            "sent" => c.sent = n,
            "skipped" => c.skipped = n,
            _ => c.failed = n,
        }
    }
    Ok(c)
}

/// One of the latest outbox rows, for the status.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = BirdweatherRecent)]
pub struct Recent {
    pub detection_id: DetectionId,
    pub common_name: String,
    pub detected_at: Timestamp,
    /// `queued`, `sent`, `skipped` or `failed`.
    pub status: String,
    pub attempts: u32,
    pub http_status: Option<u16>,
    /// Why it was skipped or failed, or what went wrong on the last attempt, in words.
    pub reason: Option<String>,
    pub updated_at: Timestamp,
}

pub fn recent(conn: &Connection, sat: SatelliteId, limit: u32) -> Result<Vec<Recent>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT d.id, l.common_name, d.detected_at, o.status, o.attempts, o.http_status, o.reason, o.updated_at
         FROM birdweather_outbox o JOIN detections d ON d.pk = o.detection_pk JOIN species_labels l ON l.pk = d.species_pk
         WHERE o.satellite_pk = {SAT} ORDER BY o.updated_at DESC, o.pk DESC LIMIT ?2"
    ))?;
    let rows = stmt.query_map(params![sat, limit], |r| {
        Ok(Recent {
            detection_id: r.get(0)?,
            common_name: r.get(1)?,
            detected_at: r.get(2)?,
            status: r.get(3)?,
            attempts: r.get(4)?,
            http_status: r.get(5)?,
            reason: r.get(6)?,
            updated_at: r.get(7)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A queued row whose time has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    pub pk: i64,
    pub satellite_pk: i64,
    pub attempts: u32,
}

/// The oldest due row of each station that is not paused, up to `limit` stations.
pub fn due(conn: &Connection, now: Timestamp, limit: u32) -> Result<Vec<Due>> {
    let mut stmt = conn.prepare_cached(
        "SELECT pk, satellite_pk, attempts FROM (
            SELECT o.pk, o.satellite_pk, o.attempts, o.next_attempt_at,
                   row_number() OVER (PARTITION BY o.satellite_pk ORDER BY o.next_attempt_at, o.pk) AS nth
            FROM birdweather_outbox o INDEXED BY birdweather_outbox_due
            LEFT JOIN birdweather_stations s ON s.satellite_pk = o.satellite_pk
            WHERE o.status = 'queued' AND o.next_attempt_at <= ?1 AND (s.paused_until IS NULL OR s.paused_until <= ?1))
         WHERE nth = 1 ORDER BY next_attempt_at, pk LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![now.millis(), limit], |r| {
        Ok(Due { pk: r.get(0)?, satellite_pk: r.get(1)?, attempts: r.get(2)? })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Takes a due row for one attempt until `until` (a hub killed mid-send tries it again then).
/// False when another pass took it or it changed since it was read.
pub fn lease(conn: &Connection, d: &Due, now: Timestamp, until: Timestamp) -> Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE birdweather_outbox SET next_attempt_at = ?4
             WHERE pk = ?1 AND status = 'queued' AND attempts = ?2 AND next_attempt_at <= ?3",
        )?
        .execute(params![d.pk, d.attempts, now.millis(), until.millis()])?;
    Ok(n == 1)
}

/// Everything one attempt needs.
#[derive(Debug, Clone)]
pub struct Job {
    pub tenant_id: TenantId,
    pub satellite_id: SatelliteId,
    pub detection_id: DetectionId,
    pub verification_status: String,
    pub common_name: String,
    pub scientific_name: String,
    pub confidence: f64,
    pub detected_at: Timestamp,
    pub start_ms: i64,
    pub end_ms: i64,
    pub chunk_id: ChunkId,
    pub chunk_key: String,
    pub recorded_at: Timestamp,
    pub audio_deleted: bool,
    pub audio_expired: bool,
    /// The detection came from an imported BirdNET-Pi or BirdNET-Go history (its chunk is an
    /// imported clip, or the placeholder of a row whose clip was gone: migration 0026).
    pub imported: bool,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    pub soundscape_id: Option<String>,
    /// The station as it is now; `None` when it was removed.
    pub station: Option<(bool, f64, String)>,
}

pub fn job(conn: &Connection, pk: i64) -> Result<Option<Job>> {
    let key = super::chunks::key_sql("c");
    Ok(conn
        .prepare_cached(&format!(
            "SELECT (SELECT id FROM tenants WHERE pk = d.tenant_pk), sat.id, d.id, d.verification_status, l.common_name,
                    l.scientific_name, d.confidence, d.detected_at, d.start_ms, d.end_ms, c.id, {key}, c.recorded_at,
                    c.audio_deleted, c.audio_expired_at IS NOT NULL, coalesce(c.latitude, sat.latitude),
                    coalesce(c.longitude, sat.longitude), o.soundscape_id, s.enabled, s.min_confidence, s.token_sealed,
                    c.imported <> 0
             FROM birdweather_outbox o JOIN detections d ON d.pk = o.detection_pk
             JOIN species_labels l ON l.pk = d.species_pk JOIN audio_chunks c ON c.pk = d.chunk_pk JOIN satellites sat ON sat.pk = o.satellite_pk
             LEFT JOIN birdweather_stations s ON s.satellite_pk = o.satellite_pk
             WHERE o.pk = ?1"
        ))?
        .query_row([pk], job_row)
        .optional()?)
}

fn job_row(r: &Row<'_>) -> rusqlite::Result<Job> {
    let sealed: Option<String> = r.get(20)?;
    Ok(Job {
        tenant_id: r.get(0)?,
        satellite_id: r.get(1)?,
        detection_id: r.get(2)?,
        verification_status: r.get(3)?,
        common_name: r.get(4)?,
        scientific_name: r.get(5)?,
        confidence: r.get(6)?,
        detected_at: r.get(7)?,
        start_ms: r.get(8)?,
        end_ms: r.get(9)?,
        chunk_id: r.get(10)?,
        chunk_key: r.get(11)?,
        recorded_at: r.get(12)?,
        audio_deleted: r.get(13)?,
        audio_expired: r.get(14)?,
        imported: r.get(21)?,
        latitude: r.get(15)?,
        longitude: r.get(16)?,
        soundscape_id: r.get(17)?,
        station: match sealed {
            Some(s) => Some((r.get(18)?, r.get(19)?, s)),
            None => None,
        },
    })
}

/// Keeps BirdWeather's id of the uploaded soundscape, so a retry posts only the detection.
pub fn set_soundscape(conn: &Connection, pk: i64, id: &str) -> Result<()> {
    conn.prepare_cached("UPDATE birdweather_outbox SET soundscape_id = ?2 WHERE pk = ?1")?.execute(params![pk, id])?;
    Ok(())
}

/// How an attempt ended for the row.
#[derive(Debug, Clone, PartialEq)]
pub enum After {
    Sent,
    Skipped(String),
    Failed(String),
    /// Try again at this time; the text is what went wrong.
    RetryAt(Timestamp, String),
}

/// Writes the outcome of attempt `attempts + 1` (`counted`: whether it was an attempt at
/// BirdWeather at all; a skip before any call leaves the count).
pub fn record(
    conn: &Connection,
    d: &Due,
    after: &After,
    http_status: Option<u16>,
    counted: bool,
    now: Timestamp,
) -> Result<()> {
    let (status, next, reason) = match after {
        After::Sent => ("sent", now, None),
        After::Skipped(why) => ("skipped", now, Some(why.as_str())),
        After::Failed(why) => ("failed", now, Some(why.as_str())),
        After::RetryAt(at, why) => ("queued", *at, Some(why.as_str())),
    };
    conn.prepare_cached(
        "UPDATE birdweather_outbox SET status = ?2, attempts = attempts + ?3, next_attempt_at = ?4, http_status = ?5,
             reason = ?6, updated_at = ?7
         WHERE pk = ?1 AND status = 'queued' AND attempts = ?8",
    )?
    .execute(params![
        d.pk,
        status,
        i64::from(counted),
        next.millis(),
        http_status,
        reason,
        now.millis(),
        d.attempts
    ])?;
    Ok(())
}

/// A call to the station succeeded: its failures and pause end.
pub fn station_ok(conn: &Connection, satellite_pk: i64, now: Timestamp) -> Result<()> {
    conn.prepare_cached(
        "UPDATE birdweather_stations SET consecutive_failures = 0, paused_until = NULL, last_success_at = ?2
         WHERE satellite_pk = ?1",
    )?
    .execute(params![satellite_pk, now.millis()])?;
    Ok(())
}

/// A call to the station failed: the error is kept, and after `pause_after` failures in a row
/// the station waits until `pause_until`.
pub fn station_failed(
    conn: &Connection,
    satellite_pk: i64,
    error: &str,
    pause_after: u32,
    pause_until: Timestamp,
    now: Timestamp,
) -> Result<()> {
    conn.prepare_cached(
        "UPDATE birdweather_stations SET consecutive_failures = consecutive_failures + 1, last_error = ?2,
             last_error_at = ?3,
             paused_until = CASE WHEN consecutive_failures + 1 >= ?4 THEN ?5 ELSE paused_until END
         WHERE satellite_pk = ?1",
    )?
    .execute(params![satellite_pk, error, now.millis(), pause_after, pause_until.millis()])?;
    Ok(())
}
