//! The `total` of `GET /detections` (SPEC 4.2) at a cost that does not grow with the detections.
//! A `count(*)` over a filter walks every matching row: 39 ms for `minConfidence=0.9` on the
//! benchmark's 2,000,000 detections. So the total is, in order of preference:
//!
//! - exact from counts the triggers keep: `tenant_species` for the species filters alone;
//!   `stats_pair_months` (every detection per month, satellite and species, with `geNN`: those with
//!   a confidence band `CAST(confidence * 20 AS INTEGER)` of at least NN/5) and
//!   `stats_verdicts_monthly` (the confirmed, rejected and pending ones per band; for the whole
//!   team their own index `detections_tenant_status_confidence` counts them, cheaper) when
//!   `minConfidence` is absent or on a 0.05 step ([`least_of_band`]; a step that is a double or
//!   two off the band's least takes off the rows in between, read through the confidence index).
//!   The list has no time range, so the months (each station's local ones) add up to every
//!   detection whatever their zone;
//! - exact from the detections when a species filter leaves at most [`CAP`] of them;
//! - otherwise (a `minConfidence` between two steps) the rollups' exact count from the next step
//!   up plus the rows of the partial band `[minConfidence, step)`, read through a confidence
//!   index for at most [`CAP`] rows. When that read stops at the cap the total is a lower bound
//!   ([`Total::is_lower_bound`]; the API says `totalIsLowerBound`, the page "10,000+").
//!
//! Confidences are in [0, 1] (the classifier's and the importers' checks), so `minConfidence=0`
//! is every detection.

use rusqlite::{Connection, types::Value};

use super::{Result, detection_list::SpeciesFilter};
use crate::ids::{SatelliteId, TenantId};

/// The most detection rows a count reads before it settles for a lower bound.
pub const CAP: u64 = 10_000;

/// A list's total: exact, or a lower bound when counting more would read too many rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Total {
    pub n: u64,
    pub is_lower_bound: bool,
}

impl Total {
    fn exact(n: i64) -> Self {
        Total { n: n.max(0) as u64, is_lower_bound: false }
    }
}

/// One filter of the list as SQL over `detections d` with its arguments.
#[derive(Debug, Clone, Default)]
pub struct Part {
    pub sql: String,
    pub args: Vec<Value>,
}

impl Part {
    pub fn new(sql: impl Into<String>, args: Vec<Value>) -> Self {
        Part { sql: sql.into(), args }
    }
}

/// The list's filter, a part per query parameter, so the count can choose what an index serves.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub tenant: Part,
    pub satellite: Option<Part>,
    pub species: Option<Part>,
    pub confidence: Option<Part>,
    pub status: Option<Part>,
}

impl Filter {
    /// Every part, `AND`ed, with the arguments in order.
    pub fn all(&self) -> (String, Vec<Value>) {
        join([
            Some(&self.tenant),
            self.satellite.as_ref(),
            self.species.as_ref(),
            self.confidence.as_ref(),
            self.status.as_ref(),
        ])
    }
}

fn join<'a>(parts: impl IntoIterator<Item = Option<&'a Part>>) -> (String, Vec<Value>) {
    let (mut sql, mut args) = (Vec::new(), Vec::new());
    for p in parts.into_iter().flatten() {
        sql.push(p.sql.as_str());
        args.extend(p.args.iter().cloned());
    }
    (sql.join(" AND "), args)
}

/// What the count needs of the query besides the SQL filter.
#[derive(Debug, Clone, Copy)]
pub struct Wanted<'a> {
    pub satellite: Option<SatelliteId>,
    pub min_confidence: Option<f64>,
    pub status: Option<&'a str>,
}

/// The confidence band the rollups file a detection under, as their triggers compute it
/// (`CAST(confidence * 20 AS INTEGER)`: SQLite multiplies the stored double and truncates, as
/// Rust does here).
fn band(c: f64) -> i64 {
    (c * 20.0) as i64
}

/// The least confidence whose band is at least `k`: the rollups' `geNN` column (`k` = NN/5)
/// holds exactly the detections with `confidence >= least_of_band(k)`, as rounded
/// multiplication is monotonic. It is 0.05 times `k` or a double or two below it (0.45 * 20
/// rounds up to 9 from the double under 0.45 too).
pub fn least_of_band(k: u8) -> f64 {
    let k = i64::from(k);
    if k == 0 {
        return 0.0;
    }
    let mut x = k as f64 / 20.0;
    while band(x) < k {
        x = x.next_up();
    }
    while band(x.next_down()) >= k {
        x = x.next_down();
    }
    x
}

/// The total of the list that `filter` selects (`species` is what its species filters left).
pub(super) fn total(
    conn: &Connection,
    tenant: TenantId,
    wanted: Wanted<'_>,
    species: Option<&SpeciesFilter>,
    filter: &Filter,
    cap: u64,
) -> Result<Total> {
    let only_species = wanted.satellite.is_none() && wanted.min_confidence.is_none() && wanted.status.is_none();
    if only_species {
        return Ok(Total::exact(match species {
            Some(s) => s.rows(),
            None => conn
                .prepare_cached("SELECT coalesce(sum(detection_count), 0) FROM tenant_species WHERE tenant_id = ?1")?
                .query_row([tenant], |r| r.get(0))?,
        }));
    }
    if let Some(s) = species
        && s.rows() <= cap as i64
    {
        // A few species' own rows: at most `cap` of them, read through their index.
        let (sql, args) = filter.all();
        let sql = format!("SELECT count(*) FROM detections d INDEXED BY detections_tenant_species_day WHERE {sql}");
        return Ok(Total::exact(conn.prepare_cached(&sql)?.query_row(rusqlite::params_from_iter(args), |r| r.get(0))?));
    }
    let codes: Option<Vec<&str>> = species.map(|s| s.codes.iter().map(|(c, _)| c.as_str()).collect());
    let codes = codes.as_deref();
    let min = wanted.min_confidence.unwrap_or(0.0).clamp(0.0, 1.0);
    let k = band(min).clamp(0, 20) as u8;
    let lo = least_of_band(k);
    if min == lo {
        return Ok(Total::exact(rolled_up(conn, tenant, wanted, codes, k)?));
    }
    let by_status = wanted.status.is_some();
    if min <= f64::from(k) / 20.0 {
        // On a step as people write it (0.45), a double or two above the band's least: the
        // band's column less the rows between, which are none or next to none.
        let (counted, read) = partial_band(conn, filter, by_status, (lo, Some(min)), cap)?;
        if read < cap as i64 {
            return Ok(Total::exact(rolled_up(conn, tenant, wanted, codes, k)? - counted));
        }
    }
    // Between two steps: the rollups from the next step up, the partial band from the rows.
    let (above, upper) = match k {
        20 => (0, None),
        _ => (rolled_up(conn, tenant, wanted, codes, k + 1)?, Some(least_of_band(k + 1))),
    };
    let (counted, read) = partial_band(conn, filter, by_status, (min, upper), cap)?;
    Ok(Total { n: (above + counted).max(0) as u64, is_lower_bound: read >= cap as i64 })
}

/// The detections with a band of at least `band` that match the satellite, species and status,
/// from the monthly rollups.
fn rolled_up(conn: &Connection, tenant: TenantId, w: Wanted<'_>, codes: Option<&[&str]>, band: u8) -> Result<i64> {
    let mut scope = String::new();
    let mut scope_args = Vec::new();
    if let Some(s) = w.satellite {
        scope.push_str(" AND satellite_pk = (SELECT pk FROM satellites WHERE id = ?)");
        scope_args.push(Value::Text(s.to_string()));
    }
    if let Some(codes) = codes {
        scope.push_str(&format!(
            " AND species_pk IN (SELECT pk FROM species_labels WHERE species_code IN ({}))",
            vec!["?"; codes.len()].join(",")
        ));
        scope_args.extend(codes.iter().map(|c| Value::Text((*c).to_owned())));
    }
    let team = Value::Text(tenant.to_string());
    let verdicts = |statuses: &[&str]| -> Result<i64> {
        if scope.is_empty() {
            // The whole team: the verdicts' own index counts them without reading a row, and
            // reads fewer entries than the rollup has rows.
            let sql = format!(
                "SELECT count(*) FROM detections d INDEXED BY detections_tenant_status_confidence
                 WHERE d.tenant_pk = (SELECT pk FROM tenants WHERE id = ?) AND d.verification_status IN ({})
                   AND d.confidence >= ?",
                vec!["?"; statuses.len()].join(",")
            );
            let mut args = vec![team.clone()];
            args.extend(statuses.iter().map(|s| Value::Text((*s).to_owned())));
            args.push(Value::Real(least_of_band(band)));
            return Ok(conn.prepare_cached(&sql)?.query_row(rusqlite::params_from_iter(args), |r| r.get(0))?);
        }
        let sql = format!(
            "SELECT coalesce(sum(n), 0) FROM stats_verdicts_monthly
             WHERE tenant_pk = (SELECT pk FROM tenants WHERE id = ?) AND status IN ({}) AND band >= ?{scope}",
            vec!["?"; statuses.len()].join(",")
        );
        let mut args = vec![team.clone()];
        args.extend(statuses.iter().map(|s| Value::Text((*s).to_owned())));
        args.push(Value::Integer(i64::from(band)));
        args.extend(scope_args.iter().cloned());
        Ok(conn.prepare_cached(&sql)?.query_row(rusqlite::params_from_iter(args), |r| r.get(0))?)
    };
    let every = || -> Result<i64> {
        let column = if band == 0 { "n".to_owned() } else { format!("ge{:02}", u32::from(band) * 5) };
        let sql = format!(
            "SELECT coalesce(sum({column}), 0) FROM stats_pair_months WHERE tenant_pk = (SELECT pk FROM tenants WHERE id = ?){scope}"
        );
        let mut args = vec![team.clone()];
        args.extend(scope_args.iter().cloned());
        Ok(conn.prepare_cached(&sql)?.query_row(rusqlite::params_from_iter(args), |r| r.get(0))?)
    };
    match w.status {
        None => every(),
        // The rollups keep verdicts apart: the unverified are the rest.
        Some("unverified") => Ok(every()? - verdicts(&["confirmed", "rejected", "pending_review"])?),
        Some(status) => verdicts(&[status]),
    }
}

/// The rows that match the satellite, species and status with a confidence in `[from, below)`,
/// reading at most `cap` rows of a confidence index: (matching, read).
fn partial_band(
    conn: &Connection,
    filter: &Filter,
    by_status: bool,
    (from, below): (f64, Option<f64>),
    cap: u64,
) -> Result<(i64, i64)> {
    let lower = Part::new("d.confidence >= ?", vec![Value::Real(from)]);
    let upper = below.map(|b| Part::new("d.confidence < ?", vec![Value::Real(b)]));
    let (index, status) = match by_status {
        true => ("detections_tenant_status_confidence", filter.status.as_ref()),
        false => ("detections_tenant_confidence", None),
    };
    let (walk, mut args) = join([Some(&filter.tenant), status, Some(&lower), upper.as_ref()]);
    let (rest, rest_args) = join([filter.satellite.as_ref(), filter.species.as_ref()]);
    let keep = if rest.is_empty() { "1".to_owned() } else { format!("({rest})") };
    // The limit applies to the index walk; the other filters are judged on the rows it read.
    let sql = format!(
        "SELECT count(*), coalesce(sum(keep), 0) FROM (SELECT {keep} AS keep FROM detections d INDEXED BY {index}
         WHERE {walk} LIMIT ?)"
    );
    let mut all = rest_args;
    all.append(&mut args);
    all.push(Value::Integer(cap as i64));
    let (read, counted) =
        conn.prepare_cached(&sql)?.query_row(rusqlite::params_from_iter(all), |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok((counted, read))
}
