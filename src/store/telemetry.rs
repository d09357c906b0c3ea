//! Satellite telemetry as a time series (SPEC 2.2), kept for [`RETENTION_DAYS`].

use rusqlite::{Connection, params};

use super::Result;
use crate::{
    ids::{SatelliteId, TenantId},
    time::Timestamp,
};

pub const RETENTION_DAYS: i64 = 30;

#[derive(Debug, Clone)]
pub struct Sample {
    pub recorded_at: Timestamp,
    pub battery_level: Option<f64>,
    pub storage_free_bytes: Option<i64>,
    pub cpu_temp: Option<f64>,
    pub network_latency_ms: Option<f64>,
    pub packet_loss_pct: Option<f64>,
    pub uptime_seconds: Option<i64>,
}

pub fn insert(conn: &Connection, satellite: SatelliteId, tenant: TenantId, s: &Sample, now: Timestamp) -> Result<()> {
    conn.execute(
        "INSERT INTO telemetry (satellite_id, tenant_id, recorded_at, battery_level, storage_free_bytes, cpu_temp,
             network_latency_ms, packet_loss_pct, uptime_seconds, received_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            satellite,
            tenant,
            s.recorded_at,
            s.battery_level,
            s.storage_free_bytes,
            s.cpu_temp,
            s.network_latency_ms,
            s.packet_loss_pct,
            s.uptime_seconds,
            now
        ],
    )?;
    Ok(())
}

/// Drops samples received before `before`.
pub fn prune(conn: &Connection, before: Timestamp) -> Result<usize> {
    Ok(conn.execute("DELETE FROM telemetry WHERE received_at < ?1", [before])?)
}

pub fn count(conn: &Connection, satellite: SatelliteId) -> Result<u64> {
    let n: i64 = conn.query_row("SELECT count(*) FROM telemetry WHERE satellite_id = ?1", [satellite], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}

/// The samples of `satellite` recorded at or after `since`, oldest first, at most `limit`.
pub fn since(conn: &Connection, satellite: SatelliteId, since: Timestamp, limit: i64) -> Result<Vec<Sample>> {
    let mut stmt = conn.prepare(
        "SELECT recorded_at, battery_level, storage_free_bytes, cpu_temp, network_latency_ms, packet_loss_pct,
                uptime_seconds
         FROM (SELECT * FROM telemetry WHERE satellite_id = ?1 AND recorded_at >= ?2
               ORDER BY recorded_at DESC LIMIT ?3)
         ORDER BY recorded_at",
    )?;
    let rows = stmt.query_map(params![satellite, since, limit], |r| {
        Ok(Sample {
            recorded_at: r.get(0)?,
            battery_level: r.get(1)?,
            storage_free_bytes: r.get(2)?,
            cpu_temp: r.get(3)?,
            network_latency_ms: r.get(4)?,
            packet_loss_pct: r.get(5)?,
            uptime_seconds: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}
