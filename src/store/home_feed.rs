//! What the integrations publish about one team (Home Assistant states, the MQTT feed): each
//! satellite's standing, today's counts from the daily rollup, the last detection and the newest
//! telemetry sample. Every query is scoped to the team.

use rusqlite::{Connection, OptionalExtension, params};

use super::Result;
use crate::{
    ids::{SatelliteId, TenantId},
    time::Timestamp,
};

/// One satellite of the team, as the integrations show it.
#[derive(Debug, Clone, PartialEq)]
pub struct SatelliteFacts {
    pub id: SatelliteId,
    pub name: String,
    pub kind: String,
    pub version: Option<String>,
    pub last_seen_at: Option<Timestamp>,
    /// Set by the monitor while the satellite is silent past the team's threshold.
    pub offline_since: Option<Timestamp>,
    pub detections_today: u64,
    pub species_today: u64,
    pub last: Option<LastDetection>,
    pub cpu_temp: Option<f64>,
    pub storage_free_bytes: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LastDetection {
    pub species_code: String,
    pub common_name: String,
    pub scientific_name: String,
    pub confidence: f64,
    pub detected_at: Timestamp,
}

/// Today's totals of the team: the team zone's today, each station's detections counted on its
/// own local days (the rollups').
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TeamToday {
    pub detections: u64,
    pub species: u64,
}

/// Today's detections per satellite and species key (`?1` the team, `?2` today's day key, see
/// [`today_key`]) from the rollup's count of those not voted down (`kn`): a detection people
/// rejected is not a bird heard today.
const KEPT_TODAY: &str = "SELECT satellite_pk, species_pk, kn AS n FROM stats_pair_days
     WHERE tenant_pk = (SELECT pk FROM tenants WHERE id = ?1) AND day = ?2";

/// The day key of "today" for `tenant` at `now`: the date in the team's zone.
fn today_key(conn: &Connection, tenant: TenantId, now: Timestamp) -> Result<String> {
    let zone = super::zones::team_zone(conn, &tenant)?;
    Ok(super::stats::day_key(crate::domain::zone::local_day(now.at(), zone)))
}

/// The team's live satellites, by name, with today's figures as of `now`.
pub fn satellites(conn: &Connection, tenant: TenantId, now: Timestamp) -> Result<Vec<SatelliteFacts>> {
    let today = today_key(conn, tenant, now)?;
    let mut stmt = conn.prepare_cached(&format!(
        "WITH kept AS ({KEPT_TODAY})
         SELECT s.id, s.name, s.kind, s.version, s.last_seen_at, s.offline_since,
                coalesce(t.n, 0), coalesce(t.species, 0)
         FROM satellites s
         LEFT JOIN (SELECT satellite_pk, sum(n) AS n, count(*) AS species FROM kept WHERE n > 0
                    GROUP BY satellite_pk) t ON t.satellite_pk = s.pk
         WHERE s.tenant_id = ?1 AND s.deleted_at IS NULL
         ORDER BY s.name, s.id"
    ))?;
    let rows = stmt.query_map(params![tenant, today], |r| {
        Ok(SatelliteFacts {
            id: r.get(0)?,
            name: r.get(1)?,
            kind: r.get(2)?,
            version: r.get(3)?,
            last_seen_at: r.get(4)?,
            offline_since: r.get(5)?,
            detections_today: r.get::<_, i64>(6)?.max(0) as u64,
            species_today: r.get::<_, i64>(7)?.max(0) as u64,
            last: None,
            cpu_temp: None,
            storage_free_bytes: None,
        })
    })?;
    let mut out: Vec<SatelliteFacts> = rows.collect::<rusqlite::Result<_>>()?;
    for s in &mut out {
        s.last = last_detection(conn, s.id)?;
        (s.cpu_temp, s.storage_free_bytes) = newest_telemetry(conn, s.id)?.unwrap_or_default();
    }
    Ok(out)
}

fn last_detection(conn: &Connection, satellite: SatelliteId) -> Result<Option<LastDetection>> {
    let mut stmt = conn.prepare_cached(
        "SELECT l.species_code, l.common_name, l.scientific_name, d.confidence, d.detected_at
         FROM detections d JOIN species_labels l ON l.pk = d.species_pk
         WHERE d.satellite_pk = (SELECT pk FROM satellites WHERE id = ?1) AND d.verification_status <> 'rejected'
         ORDER BY d.detected_at DESC LIMIT 1",
    )?;
    Ok(stmt
        .query_row([satellite], |r| {
            Ok(LastDetection {
                species_code: r.get(0)?,
                common_name: r.get(1)?,
                scientific_name: r.get(2)?,
                confidence: r.get(3)?,
                detected_at: r.get(4)?,
            })
        })
        .optional()?)
}

fn newest_telemetry(conn: &Connection, satellite: SatelliteId) -> Result<Option<(Option<f64>, Option<i64>)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT cpu_temp, storage_free_bytes FROM telemetry WHERE satellite_id = ?1
         ORDER BY recorded_at DESC LIMIT 1",
    )?;
    Ok(stmt.query_row([satellite], |r| Ok((r.get(0)?, r.get(1)?))).optional()?)
}

/// The team's detections and species today (the team zone's date at `now`), rejected ones left out.
pub fn team_today(conn: &Connection, tenant: TenantId, now: Timestamp) -> Result<TeamToday> {
    let today = today_key(conn, tenant, now)?;
    let (n, species): (i64, i64) = conn
        .prepare_cached(&format!(
            "WITH kept AS ({KEPT_TODAY}) SELECT coalesce(sum(n), 0), count(DISTINCT species_pk) FROM kept WHERE n > 0"
        ))?
        .query_row(params![tenant, today], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(TeamToday { detections: n.max(0) as u64, species: species.max(0) as u64 })
}
