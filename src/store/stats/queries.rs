//! Aggregates over a scope's cells (whole months, dekads, edge days, rejected detections taken
//! out): per satellite and species, per species and month, verdicts, one species' confidence
//! bands, and the few reads that ride an index of the detections (places, map points, newest).

use std::collections::{BTreeMap, HashMap};

use rusqlite::{Connection, types::Value};

use super::{super::Result, Family, Names, Scope, each, rows};

/// `(satellite, species, detections)` with counted detections, by satellite then species.
///
/// The rows are added up here rather than by a `GROUP BY`: a year's range reads some 17,000 of
/// them (months, dekads and edge days of a thousand satellite-and-species pairs), and SQLite
/// would sort them all to group them, the larger part of the work.
pub fn by_satellite_species(conn: &Connection, scope: &Scope) -> Result<Vec<(String, String, i64)>> {
    let sql = scope.parts("satellite_pk, species_pk", Family::SATELLITE_SPECIES);
    let mut sums: HashMap<(i64, i64), i64> = HashMap::new();
    each(conn, &sql, &scope.keyed(conn)?, |r| {
        *sums.entry((r.get(0)?, r.get(1)?)).or_default() += r.get::<_, i64>(2)?;
        Ok(())
    })?;
    let mut names = Names::new(conn);
    let mut out = Vec::with_capacity(sums.len());
    for ((satellite, species), n) in sums {
        if n > 0 {
            out.push((names.satellite(satellite)?, names.species(species)?, n));
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Counts over a scope.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub detections: i64,
    pub species: i64,
    pub satellites: i64,
}

/// Totals of [`by_satellite_species`] rows.
pub fn totals_of(cells: &[(String, String, i64)]) -> Totals {
    let species: std::collections::BTreeSet<&str> = cells.iter().map(|c| c.1.as_str()).collect();
    let satellites: std::collections::BTreeSet<&str> = cells.iter().map(|c| c.0.as_str()).collect();
    Totals {
        detections: cells.iter().map(|c| c.2).sum(),
        species: species.len() as i64,
        satellites: satellites.len() as i64,
    }
}

/// Detections, species and satellites over a scope. One satellite's come from its own rows per
/// species; the team's from the per-species and per-satellite tables, which hold some fifty and
/// twenty rows a day where the per-satellite-and-species table holds eight hundred.
pub fn totals(conn: &Connection, scope: &Scope) -> Result<Totals> {
    if scope.satellite.is_some() || scope.species.is_some() {
        return Ok(totals_of(&by_satellite_species(conn, scope)?));
    }
    let params = scope.keyed(conn)?;
    let (detections, species) = summed(conn, &scope.counts("species_pk", Family::SPECIES), "species_pk", &params)?;
    let (_, satellites) = summed(conn, &scope.counts("satellite_pk", Family::SATELLITE), "satellite_pk", &params)?;
    Ok(Totals { detections, species, satellites })
}

/// Detections and the number of `key`s with any, over a counts subquery.
fn summed(conn: &Connection, counts: &str, key: &str, params: &[(&str, Value)]) -> Result<(i64, i64)> {
    let sql = format!(
        "SELECT coalesce(sum(c), 0), count(*) FROM (SELECT {key}, sum(c) AS c FROM {counts} GROUP BY {key} HAVING sum(c) > 0)"
    );
    Ok(rows(conn, &sql, params, |r| Ok((r.get(0)?, r.get(1)?)))?.pop().unwrap_or_default())
}

/// Detections of a scope, however rejected ones count (the per-satellite table: the fewest rows).
pub fn detections(conn: &Connection, scope: &Scope) -> Result<i64> {
    let sql = format!("SELECT coalesce(sum(c), 0) FROM {}", scope.counts("satellite_pk", Family::SATELLITE));
    Ok(rows(conn, &sql, &scope.keyed(conn)?, |r| r.get(0))?.pop().unwrap_or_default())
}

/// One species over a scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpeciesRow {
    pub code: String,
    pub detections: i64,
    pub satellites: i64,
}

/// Every species with counted detections, most detected first, then by code.
pub fn by_species(conn: &Connection, scope: &Scope) -> Result<Vec<SpeciesRow>> {
    let mut by: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for (_, species, n) in by_satellite_species(conn, scope)? {
        let e = by.entry(species).or_default();
        e.0 += n;
        e.1 += 1;
    }
    let mut out: Vec<SpeciesRow> =
        by.into_iter().map(|(code, (detections, satellites))| SpeciesRow { code, detections, satellites }).collect();
    out.sort_by(|a, b| b.detections.cmp(&a.detections).then_with(|| a.code.cmp(&b.code)));
    Ok(out)
}

/// Verdicts per species over a scope (its satellite, range and lowest band; whatever it says of
/// rejected ones): `species -> [confirmed, rejected, pending_review]`.
pub fn verdicts(conn: &Connection, scope: &Scope) -> Result<BTreeMap<String, [i64; 3]>> {
    let by_key = if scope.satellite.is_none() {
        by_status(conn, scope, "species_pk", Family::VERDICT_SPECIES)?
    } else {
        satellite_verdicts(conn, scope)?
    };
    let mut names = Names::new(conn);
    let mut out = BTreeMap::new();
    for (species, counts) in by_key {
        out.insert(names.species(species)?, counts);
    }
    Ok(out)
}

/// One satellite's verdicts per species key: its rows of the per-hour, per-band verdicts,
/// through its own index (the primary key would walk every satellite's).
fn satellite_verdicts(conn: &Connection, scope: &Scope) -> Result<BTreeMap<i64, [i64; 3]>> {
    let filter = scope.filter();
    let parts: Vec<String> = super::cut::cut(scope.from, scope.to, false)
        .iter()
        .zip(super::MONTH_CUT)
        .map(|(part, [a, b, x, y])| {
            let (table, span) = match part.grain {
                super::cut::Grain::Month => (
                    "stats_verdicts_monthly INDEXED BY stats_verdicts_monthly_satellite",
                    format!("month BETWEEN {a} AND {b}"),
                ),
                _ => ("stats_verdicts INDEXED BY stats_verdicts_satellite", format!("day BETWEEN {x} AND {y}")),
            };
            format!(
                "SELECT species_pk, status, n FROM {table}
                 WHERE tenant_pk = :tk AND status IN ('confirmed', 'rejected', 'pending_review') AND {span}
                   AND band >= :band{filter}"
            )
        })
        .collect();
    if parts.is_empty() {
        return Ok(BTreeMap::new());
    }
    tally(conn, scope, &parts.join(" UNION ALL "))
}

/// Adds up `(key, status, n)` rows into `key -> [confirmed, rejected, pending_review]`.
fn tally(conn: &Connection, scope: &Scope, sql: &str) -> Result<BTreeMap<i64, [i64; 3]>> {
    let mut out: BTreeMap<i64, [i64; 3]> = BTreeMap::new();
    each(conn, sql, &scope.keyed(conn)?, |r| {
        let slot = match r.get_ref(1)?.as_str().unwrap_or_default() {
            "confirmed" => 0,
            "rejected" => 1,
            _ => 2,
        };
        out.entry(r.get(0)?).or_default()[slot] += r.get::<_, i64>(2)?;
        Ok(())
    })?;
    Ok(out)
}

/// Verdicts per `key` (a key column) from a verdict family of migration 0028 (thresholds as
/// columns): `key -> [confirmed, rejected, pending_review]`.
fn by_status(conn: &Connection, scope: &Scope, key: &str, family: Family) -> Result<BTreeMap<i64, [i64; 3]>> {
    let col = scope.column();
    let filter = scope.filter();
    let parts: Vec<String> = super::cut::cut(scope.from, scope.to, false)
        .iter()
        .zip(super::MONTH_CUT)
        .map(|(part, [a, b, _, _])| {
            let (table, span) = match part.grain {
                super::cut::Grain::Month => (family.month, "month"),
                _ => (family.day, "day"),
            };
            format!(
                "SELECT {key} AS k, status, {col} AS n FROM {table} WHERE tenant_pk = :tk AND {span} BETWEEN {a} AND {b}{filter}"
            )
        })
        .collect();
    if parts.is_empty() {
        return Ok(BTreeMap::new());
    }
    tally(conn, scope, &parts.join(" UNION ALL "))
}

/// Verdicts over a scope (its satellite or all): `[confirmed, rejected, pending_review]`.
pub fn status_totals(conn: &Connection, scope: &Scope) -> Result<[i64; 3]> {
    let per = by_status(conn, scope, "satellite_pk", Family::VERDICT_SATELLITE)?;
    Ok(per.values().fold([0; 3], |acc, v| [acc[0] + v[0], acc[1] + v[1], acc[2] + v[2]]))
}

/// `(species, YYYY-MM, detections)` with counted detections (the per-species tables; one
/// satellite's from its own rows).
pub fn by_species_month(conn: &Connection, scope: &Scope) -> Result<Vec<(String, String, i64)>> {
    let counts =
        if scope.satellite.is_some() { scope.cells() } else { scope.counts("species_pk, month", Family::SPECIES) };
    let sql =
        format!("SELECT species_pk, month, sum(c) AS c FROM {counts} GROUP BY species_pk, month HAVING sum(c) > 0");
    let found =
        rows(conn, &sql, &scope.keyed(conn)?, |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get(2)?)))?;
    let mut names = Names::new(conn);
    let mut out = Vec::with_capacity(found.len());
    for (species, month, n) in found {
        out.push((names.species(species)?, month, n));
    }
    out.sort_unstable();
    Ok(out)
}

/// One species' counted detections per confidence band (0 to 20) over the scope's days and
/// months, all satellites; bands below the scope's lowest are zero. Read from the per-species
/// tables, whose kept columns leave rejected detections out.
pub fn species_bands(conn: &Connection, scope: &Scope, code: &str) -> Result<[i64; 21]> {
    let columns: Vec<String> = if scope.include_rejected {
        std::iter::once("n".to_owned()).chain(super::rollups::threshold_columns().map(|(_, c)| c)).collect()
    } else {
        std::iter::once("kn".to_owned()).chain(super::rollups::kept_columns().map(|(_, c)| c)).collect()
    };
    let summed: Vec<String> = columns.iter().map(|c| format!("coalesce(sum({c}), 0)")).collect();
    let parts: Vec<String> = super::cut::cut(scope.from, scope.to, false)
        .iter()
        .zip(super::MONTH_CUT)
        .map(|(part, [a, b, _, _])| {
            let (table, key) = match part.grain {
                super::cut::Grain::Month => (Family::SPECIES.month, "month"),
                _ => (Family::SPECIES.day, "day"),
            };
            format!(
                "SELECT {} FROM {table} WHERE tenant_pk = :tk AND {key} BETWEEN {a} AND {b} AND species_pk = :spk",
                columns.join(", ")
            )
        })
        .collect();
    let mut bands = [0i64; 21];
    if parts.is_empty() {
        return Ok(bands);
    }
    let sql = format!("SELECT {} FROM ({})", summed.join(", "), parts.join(" UNION ALL "));
    let params = Scope { species: Some(code.to_owned()), ..scope.clone() }.keyed(conn)?;
    let at_least: Vec<i64> =
        rows(conn, &sql, &params, |r| (0..21).map(|i| r.get::<_, i64>(i)).collect())?.pop().unwrap_or_default();
    for (b, slot) in bands.iter_mut().enumerate() {
        // Band b holds those at least b and not at least b + 1.
        *slot = at_least.get(b).copied().unwrap_or(0) - at_least.get(b + 1).copied().unwrap_or(0);
    }
    for slot in bands.iter_mut().take(usize::from(scope.min_band)) {
        *slot = 0;
    }
    Ok(bands)
}

/// A satellite of the team, with where it is and when it last detected anything.
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    pub id: String,
    pub name: String,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    pub last_seen_at: Option<String>,
    /// Its last heartbeat said it stopped (a clean stop): offline at once (issue 51, 17).
    pub stopped: bool,
    pub last_detection_at: Option<String>,
}

/// The team's current satellites (not removed ones) by name; the newest detection of each is
/// one index seek.
pub fn places(conn: &Connection, tenant: crate::ids::TenantId) -> Result<Vec<Place>> {
    let mut stmt = conn.prepare_cached(
        "SELECT s.id, s.name, s.latitude, s.longitude, s.last_seen_at,
                (SELECT max(d.detected_at) FROM detections d WHERE d.satellite_pk = s.pk),
                coalesce(s.heartbeat_state, '') = ?2
         FROM satellites s WHERE s.tenant_id = ?1 AND s.deleted_at IS NULL ORDER BY s.name, s.id",
    )?;
    let rows = stmt.query_map(rusqlite::params![tenant, crate::mqtt::protocol::STOPPED], |r| {
        Ok(Place {
            id: r.get(0)?,
            name: r.get(1)?,
            latitude: r.get(2)?,
            longitude: r.get(3)?,
            last_seen_at: r.get(4)?,
            stopped: r.get(6)?,
            last_detection_at: r.get::<_, Option<crate::time::Timestamp>>(5)?.map(|t| t.to_string()),
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
    pub detected_at: crate::time::Timestamp,
    pub latitude: f64,
    pub longitude: f64,
}

impl Point {
    /// From `id, satellite_id, species_code, confidence, detected_at, latitude, longitude`.
    fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Point {
            id: r.get::<_, crate::ids::DetectionId>(0)?.to_string(),
            satellite_id: r.get(1)?,
            species_code: r.get(2)?,
            confidence: r.get(3)?,
            detected_at: r.get(4)?,
            latitude: r.get(5)?,
            longitude: r.get(6)?,
        })
    }
}

/// The newest located detections of the scope (the chunk's position, else its satellite's),
/// at most `cap`, newest first. Reads the detections (time index), so the caller caps the range.
pub fn points(conn: &Connection, scope: &Scope, since: crate::time::Timestamp, cap: usize) -> Result<Vec<Point>> {
    let status = if scope.include_rejected { "" } else { "AND d.verification_status <> 'rejected'" };
    // One satellite's points are read through its own time index: through the team's, a page
    // of one satellite of twenty meant walking twenty times the rows.
    let (index, satellite) = match scope.satellite {
        Some(_) => ("detections_satellite_time", "d.satellite_pk = (SELECT pk FROM satellites WHERE id = ?3)"),
        None => ("detections_tenant_time", "?3 IS NULL"),
    };
    let sql = format!(
        "SELECT d.id, s.id, (SELECT species_code FROM species_labels WHERE pk = d.species_pk), d.confidence, d.detected_at,
                coalesce(c.latitude, s.latitude), coalesce(c.longitude, s.longitude)
         FROM detections d INDEXED BY {index} JOIN audio_chunks c ON c.pk = d.chunk_pk JOIN satellites s ON s.pk = d.satellite_pk
         WHERE d.tenant_pk = (SELECT pk FROM tenants WHERE id = ?1) AND d.detected_at >= ?2 AND {satellite}
           AND +d.confidence >= ?4 {status}
           AND coalesce(c.latitude, s.latitude) IS NOT NULL AND coalesce(c.longitude, s.longitude) IS NOT NULL
         ORDER BY d.detected_at DESC LIMIT ?5"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(
        rusqlite::params![scope.tenant, since.millis(), scope.satellite, f64::from(scope.min_band) / 20.0, cap as i64],
        Point::from_row,
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The newest detections of a species (the species-time index), newest first.
pub fn recent(conn: &Connection, scope: &Scope, code: &str, limit: usize) -> Result<Vec<Point>> {
    let status = if scope.include_rejected { "" } else { "AND d.verification_status <> 'rejected'" };
    let sql = format!(
        "SELECT d.id, s.id, (SELECT species_code FROM species_labels WHERE pk = d.species_pk), d.confidence, d.detected_at,
                coalesce(s.latitude, 0), coalesce(s.longitude, 0)
         FROM detections d JOIN satellites s ON s.pk = d.satellite_pk
         WHERE d.tenant_pk = (SELECT pk FROM tenants WHERE id = ?1) AND d.species_pk = (SELECT pk FROM species_labels WHERE species_code = ?2) AND +d.confidence >= ?3 {status}
         ORDER BY d.detected_at DESC LIMIT ?4"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(
        rusqlite::params![scope.tenant, code, f64::from(scope.min_band) / 20.0, limit as i64],
        Point::from_row,
    )?;
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
