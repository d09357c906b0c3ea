//! Aggregates over a scope's cells (whole months and edge days): totals, per species, per
//! satellite and species, per month, per confidence band.

use rusqlite::{Connection, params_from_iter};

use super::{super::Result, Scope};

/// Counts over a scope.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    /// Detections counted (rejected ones only when the scope includes them).
    pub detections: i64,
    pub species: i64,
    pub satellites: i64,
    /// Per verification status, whatever the scope says of rejected ones.
    pub all: i64,
    pub confirmed: i64,
    pub rejected: i64,
    pub pending: i64,
}

impl Totals {
    pub fn unverified(&self) -> i64 {
        (self.all - self.confirmed - self.rejected - self.pending).max(0)
    }
}

pub fn totals(conn: &Connection, scope: &Scope) -> Result<Totals> {
    let (cells, p) = scope.cells();
    let cnt = scope.count();
    let sql = format!(
        "SELECT coalesce(sum({cnt}), 0), count(DISTINCT CASE WHEN {cnt} > 0 THEN species_code END),
                count(DISTINCT CASE WHEN {cnt} > 0 THEN satellite_id END), coalesce(sum(n), 0),
                coalesce(sum(confirmed), 0), coalesce(sum(rejected), 0), coalesce(sum(pending), 0)
         FROM {cells}"
    );
    Ok(conn.prepare_cached(&sql)?.query_row(params_from_iter(p), |r| {
        Ok(Totals {
            detections: r.get(0)?,
            species: r.get(1)?,
            satellites: r.get(2)?,
            all: r.get(3)?,
            confirmed: r.get(4)?,
            rejected: r.get(5)?,
            pending: r.get(6)?,
        })
    })?)
}

/// One species over a scope.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeciesRow {
    pub code: String,
    pub detections: i64,
    /// The mean confidence of the counted detections.
    pub mean_confidence: f64,
    pub satellites: i64,
    pub confirmed: i64,
    pub rejected: i64,
    pub pending: i64,
}

/// Every species with counted detections in the scope (or with verified ones, for accuracy),
/// most detected first, then by code.
pub fn by_species(conn: &Connection, scope: &Scope) -> Result<Vec<SpeciesRow>> {
    let (cells, p) = scope.cells();
    let cnt = scope.count();
    let conf = if scope.include_rejected { "confidence_sum" } else { "(confidence_sum - rejected_confidence)" };
    let sql = format!(
        "SELECT species_code, sum({cnt}) AS c, sum({conf}) / max(sum({cnt}), 1),
                count(DISTINCT CASE WHEN {cnt} > 0 THEN satellite_id END), sum(confirmed), sum(rejected), sum(pending)
         FROM {cells} GROUP BY species_code HAVING c > 0 OR sum(confirmed) + sum(rejected) > 0
         ORDER BY c DESC, species_code"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params_from_iter(p), |r| {
        Ok(SpeciesRow {
            code: r.get(0)?,
            detections: r.get(1)?,
            mean_confidence: r.get(2)?,
            satellites: r.get(3)?,
            confirmed: r.get(4)?,
            rejected: r.get(5)?,
            pending: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// `(satellite, species, detections)` with counted detections, by satellite then species.
pub fn by_satellite_species(conn: &Connection, scope: &Scope) -> Result<Vec<(String, String, i64)>> {
    let (cells, p) = scope.cells();
    let cnt = scope.count();
    let sql = format!(
        "SELECT satellite_id, species_code, sum({cnt}) AS c FROM {cells}
         GROUP BY satellite_id, species_code HAVING c > 0 ORDER BY satellite_id, species_code"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params_from_iter(p), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// `(species, YYYY-MM, detections)` with counted detections.
pub fn by_species_month(conn: &Connection, scope: &Scope) -> Result<Vec<(String, String, i64)>> {
    let (cells, p) = scope.cells();
    let cnt = scope.count();
    let sql = format!(
        "SELECT species_code, month, sum({cnt}) AS c FROM {cells}
         GROUP BY species_code, month HAVING c > 0 ORDER BY species_code, month"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params_from_iter(p), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// For one species: `(satellite, detections)` and `(band, detections)` over the scope.
pub fn species_breakdown(conn: &Connection, scope: &Scope, code: &str) -> Result<(Vec<(String, i64)>, Vec<(u8, i64)>)> {
    let (cells, mut p) = scope.cells();
    p.push(rusqlite::types::Value::Text(code.to_owned()));
    let cnt = scope.count();
    let by = |key: &str| {
        format!(
            "SELECT {key}, sum({cnt}) AS c FROM {cells} WHERE species_code = ?10
             GROUP BY {key} HAVING c > 0 ORDER BY {key}"
        )
    };
    let satellites = conn
        .prepare_cached(&by("satellite_id"))?
        .query_map(params_from_iter(p.iter()), |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let bands = conn
        .prepare_cached(&by("band"))?
        .query_map(params_from_iter(p.iter()), |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok((satellites, bands))
}

/// A satellite of the team, with where it is and when it last detected anything.
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    pub id: String,
    pub name: String,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    pub last_seen_at: Option<String>,
    pub last_detection_at: Option<String>,
}

/// The team's current satellites (not removed ones) by name; the newest detection of each is
/// one index seek.
pub fn places(conn: &Connection, tenant: crate::ids::TenantId) -> Result<Vec<Place>> {
    let mut stmt = conn.prepare_cached(
        "SELECT s.id, s.name, s.latitude, s.longitude, s.last_seen_at,
                (SELECT max(d.detected_at) FROM detections d WHERE d.satellite_id = s.id)
         FROM satellites s WHERE s.tenant_id = ?1 AND s.deleted_at IS NULL ORDER BY s.name, s.id",
    )?;
    let rows = stmt.query_map([tenant], |r| {
        Ok(Place {
            id: r.get(0)?,
            name: r.get(1)?,
            latitude: r.get(2)?,
            longitude: r.get(3)?,
            last_seen_at: r.get(4)?,
            last_detection_at: r.get(5)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A detection as a point on the map.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub id: String,
    pub satellite_id: String,
    pub species_code: String,
    pub confidence: f64,
    pub detected_at: String,
    pub latitude: f64,
    pub longitude: f64,
}

/// The newest located detections of the scope (the chunk's position, else its satellite's),
/// at most `cap`, newest first. Reads the detections (time index), so the caller caps the range.
pub fn points(conn: &Connection, scope: &Scope, since: &str, cap: usize) -> Result<Vec<Point>> {
    let status = if scope.include_rejected { "" } else { "AND d.verification_status <> 'rejected'" };
    let sql = format!(
        "SELECT d.id, d.satellite_id, d.species_code, d.confidence, d.detected_at,
                coalesce(c.latitude, s.latitude), coalesce(c.longitude, s.longitude)
         FROM detections d JOIN audio_chunks c ON c.id = d.audio_chunk_id JOIN satellites s ON s.id = d.satellite_id
         WHERE d.tenant_id = ?1 AND d.detected_at >= ?2 AND (?3 IS NULL OR d.satellite_id = ?3)
           AND d.confidence >= ?4 {status}
           AND coalesce(c.latitude, s.latitude) IS NOT NULL AND coalesce(c.longitude, s.longitude) IS NOT NULL
         ORDER BY d.detected_at DESC LIMIT ?5"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(
        rusqlite::params![scope.tenant, since, scope.satellite, f64::from(scope.min_band) / 20.0, cap as i64],
        |r| {
            Ok(Point {
                id: r.get(0)?,
                satellite_id: r.get(1)?,
                species_code: r.get(2)?,
                confidence: r.get(3)?,
                detected_at: r.get(4)?,
                latitude: r.get(5)?,
                longitude: r.get(6)?,
            })
        },
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The newest detections of a species (the species-time index), newest first.
pub fn recent(conn: &Connection, scope: &Scope, code: &str, limit: usize) -> Result<Vec<Point>> {
    let status = if scope.include_rejected { "" } else { "AND d.verification_status <> 'rejected'" };
    let sql = format!(
        "SELECT d.id, d.satellite_id, d.species_code, d.confidence, d.detected_at,
                coalesce(s.latitude, 0), coalesce(s.longitude, 0)
         FROM detections d JOIN satellites s ON s.id = d.satellite_id
         WHERE d.tenant_id = ?1 AND d.species_code = ?2 AND d.confidence >= ?3 {status}
         ORDER BY d.detected_at DESC LIMIT ?4"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows =
        stmt.query_map(rusqlite::params![scope.tenant, code, f64::from(scope.min_band) / 20.0, limit as i64], |r| {
            Ok(Point {
                id: r.get(0)?,
                satellite_id: r.get(1)?,
                species_code: r.get(2)?,
                confidence: r.get(3)?,
                detected_at: r.get(4)?,
                latitude: r.get(5)?,
                longitude: r.get(6)?,
            })
        })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Per species of the team: when first and last detected (all time, from `tenant_species`).
pub fn first_last(
    conn: &Connection,
    tenant: crate::ids::TenantId,
) -> Result<std::collections::HashMap<String, (String, String)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT species_code, first_detected_at, last_detected_at FROM tenant_species WHERE tenant_id = ?1",
    )?;
    let rows = stmt.query_map([tenant], |r| Ok((r.get::<_, String>(0)?, (r.get(1)?, r.get(2)?))))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
