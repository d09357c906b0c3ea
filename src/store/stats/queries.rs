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
