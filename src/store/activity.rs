//! What absence and trend rules look at: when a team (or one satellite) last produced a detection
//! or a chunk, and per-day totals over a range. Read-only; each query rides an existing index.

use rusqlite::{Connection, OptionalExtension, params};

use super::Result;
use crate::{
    ids::{SatelliteId, TenantId},
    time::Timestamp,
};

/// The newest detection of the team, or of one of its satellites, that people did not reject.
pub fn last_detection(
    conn: &Connection,
    tenant: TenantId,
    satellite: Option<SatelliteId>,
) -> Result<Option<Timestamp>> {
    // Newest first down the time index, stopping at the first one not rejected (a `max()` with
    // the status filter would read every row).
    let t = match satellite {
        None => conn
            .prepare_cached("SELECT detected_at FROM detections WHERE tenant_pk = (SELECT pk FROM tenants WHERE id = ?1) AND verification_status <> 'rejected' ORDER BY detected_at DESC LIMIT 1")?
            .query_row([tenant], |r| r.get(0))
            .optional()?,
        Some(s) => conn
            .prepare_cached("SELECT detected_at FROM detections WHERE satellite_pk = (SELECT pk FROM satellites WHERE id = ?1) AND tenant_pk = (SELECT pk FROM tenants WHERE id = ?2) AND verification_status <> 'rejected' ORDER BY detected_at DESC LIMIT 1")?
            .query_row(params![s, tenant], |r| r.get(0))
            .optional()?,
    };
    Ok(t)
}

/// The newest chunk of the team, or of one of its satellites.
pub fn last_chunk(conn: &Connection, tenant: TenantId, satellite: Option<SatelliteId>) -> Result<Option<Timestamp>> {
    let t = match satellite {
        None => conn
            .prepare_cached("SELECT max(recorded_at) FROM audio_chunks WHERE tenant_pk = (SELECT pk FROM tenants WHERE id = ?1)")?
            .query_row([tenant], |r| r.get(0))?,
        Some(s) => conn
            .prepare_cached("SELECT max(recorded_at) FROM audio_chunks WHERE satellite_pk = (SELECT pk FROM satellites WHERE id = ?1) AND tenant_pk = (SELECT pk FROM tenants WHERE id = ?2)")?
            .query_row(params![s, tenant], |r| r.get(0))?,
    };
    Ok(t)
}

/// Per UTC day (`YYYY-MM-DD`) in `[from, to)`: the number of detections, or of distinct species
/// when `species` is set; rejected detections never count. Days without any are left out.
pub fn daily_totals(
    conn: &Connection,
    tenant: TenantId,
    satellite: Option<SatelliteId>,
    species: bool,
    from: Timestamp,
    to: Timestamp,
) -> Result<Vec<(String, f64)>> {
    let what = if species { "count(DISTINCT species_pk)" } else { "count(*)" };
    let sql = format!(
        "SELECT date(detected_at / 1000, 'unixepoch') AS day, {what} FROM detections
         WHERE tenant_pk = (SELECT pk FROM tenants WHERE id = ?1) AND detected_at >= ?2 AND detected_at < ?3 AND (?4 IS NULL OR satellite_pk = (SELECT pk FROM satellites WHERE id = ?4)) AND verification_status <> 'rejected'
         GROUP BY day ORDER BY day"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params![tenant, from.millis(), to.millis(), satellite], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The detections (or distinct species when `species` is set) in `[from, to)`, rejected ones
/// never: one day of a trend rule, whose bounds are local midnights of the team's zone.
pub fn total_between(
    conn: &Connection,
    tenant: TenantId,
    satellite: Option<SatelliteId>,
    species: bool,
    from: Timestamp,
    to: Timestamp,
) -> Result<f64> {
    let what = if species { "count(DISTINCT species_pk)" } else { "count(*)" };
    let sql = format!(
        "SELECT {what} FROM detections
         WHERE tenant_pk = (SELECT pk FROM tenants WHERE id = ?1) AND detected_at >= ?2 AND detected_at < ?3 AND (?4 IS NULL OR satellite_pk = (SELECT pk FROM satellites WHERE id = ?4)) AND verification_status <> 'rejected'"
    );
    Ok(conn.prepare_cached(&sql)?.query_row(params![tenant, from.millis(), to.millis(), satellite], |r| r.get(0))?)
}

/// When the team last detected `species_code` (rejected detections aside), if ever (one index
/// seek, then a step back per rejected one).
pub fn last_detected(conn: &Connection, tenant: TenantId, species_code: &str) -> Result<Option<Timestamp>> {
    Ok(conn
        .prepare_cached("SELECT detected_at FROM detections WHERE tenant_pk = (SELECT pk FROM tenants WHERE id = ?1) AND species_pk = (SELECT pk FROM species_labels WHERE species_code = ?2) AND verification_status <> 'rejected' ORDER BY detected_at DESC LIMIT 1")?
        .query_row(params![tenant, species_code], |r| r.get(0))
        .optional()?)
}
