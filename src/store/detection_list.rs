//! `GET /detections` (SPEC 4.2): filters, sorts and pages over a table a busy hub fills with
//! millions of rows, so every path is an index walk that stops after one page.
//!
//! - Species names are resolved through `tenant_species` (a few hundred rows) into species codes,
//!   never by a `LIKE` over the detections.
//! - Where several species match and they are common, the time index is walked and the codes are
//!   checked per row (`+species_code` keeps the planner off the species index); where they are
//!   rare, the species index is used and the few rows sorted.
//! - Totals without other filters are sums of the per-species counts the triggers keep.
//! - `calibrated_confidence` comes from one read of the team's curves per page.

use rusqlite::{Connection, types::Value};

use super::{Result, calibration, detections::Stored};
use crate::ids::{SatelliteId, TenantId};

/// `sortBy` of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    Date,
    Confidence,
    Species,
}

#[derive(Debug, Clone)]
pub struct Query {
    pub satellite_id: Option<SatelliteId>,
    pub species_code: Option<String>,
    pub species_search: Option<String>,
    pub min_confidence: Option<f64>,
    pub verification_status: Option<String>,
    pub sort_by: SortBy,
    pub descending: bool,
    pub limit: u32,
    pub offset: u32,
    pub with_count: bool,
}

/// Matching species rows above this many make the time-ordered walk cheaper than sorting them.
const SORT_AT_MOST: i64 = 20_000;

/// A species the team has detected, with how often.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TeamSpecies {
    pub species_code: String,
    pub common_name: String,
    pub scientific_name: String,
    pub detection_count: i64,
}

/// Every species of the team (for name search and counts).
pub fn team_species(conn: &Connection, tenant: TenantId) -> Result<Vec<TeamSpecies>> {
    let mut stmt = conn.prepare_cached(
        "SELECT species_code, common_name, scientific_name, detection_count FROM tenant_species WHERE tenant_id = ?1",
    )?;
    let rows = stmt.query_map([tenant], |r| {
        Ok(TeamSpecies {
            species_code: r.get(0)?,
            common_name: r.get(1)?,
            scientific_name: r.get(2)?,
            detection_count: r.get(3)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The codes the species filters leave (`None`: no species filter), with their detection counts.
fn species_codes(conn: &Connection, tenant: TenantId, q: &Query) -> Result<Option<Vec<(String, i64)>>> {
    if q.species_code.is_none() && q.species_search.is_none() {
        return Ok(None);
    }
    let needle = q.species_search.as_deref().map(str::to_lowercase);
    let codes = team_species(conn, tenant)?
        .into_iter()
        .filter(|s| q.species_code.as_ref().is_none_or(|c| *c == s.species_code))
        .filter(|s| {
            needle.as_ref().is_none_or(|n| {
                s.common_name.to_lowercase().contains(n.as_str())
                    || s.scientific_name.to_lowercase().contains(n.as_str())
            })
        })
        .map(|s| (s.species_code, s.detection_count))
        .collect();
    Ok(Some(codes))
}

/// One page of detections and, unless `with_count` is false, the total matching.
pub fn list(conn: &Connection, tenant: TenantId, q: &Query) -> Result<(Vec<Stored>, Option<u64>)> {
    let codes = species_codes(conn, tenant, q)?;
    if codes.as_ref().is_some_and(Vec::is_empty) {
        return Ok((Vec::new(), q.with_count.then_some(0)));
    }
    let mut clauses = vec!["d.tenant_id = ?".to_owned()];
    let mut args: Vec<Value> = vec![Value::Text(tenant.to_string())];
    if let Some(s) = q.satellite_id {
        clauses.push("d.satellite_id = ?".into());
        args.push(Value::Text(s.to_string()));
    }
    if let Some(codes) = &codes {
        let rows: i64 = codes.iter().map(|(_, n)| n).sum();
        // One code: its index gives the order. Several common ones: walk by time and check each.
        let column = if codes.len() == 1 || rows <= SORT_AT_MOST { "d.species_code" } else { "+d.species_code" };
        clauses.push(format!("{column} IN ({})", vec!["?"; codes.len()].join(",")));
        args.extend(codes.iter().map(|(c, _)| Value::Text(c.clone())));
    }
    if let Some(min) = q.min_confidence {
        clauses.push("d.confidence >= ?".into());
        args.push(Value::Real(min));
    }
    if let Some(status) = &q.verification_status {
        clauses.push("d.verification_status = ?".into());
        args.push(Value::Text(status.clone()));
    }
    let filter = clauses.join(" AND ");
    let dir = if q.descending { "DESC" } else { "ASC" };
    let order = match q.sort_by {
        SortBy::Date => format!("d.detected_at {dir}, d.rowid {dir}"),
        SortBy::Confidence => format!("d.confidence {dir}, d.rowid {dir}"),
        SortBy::Species => format!("d.common_name {dir}, d.detected_at {dir}, d.rowid {dir}"),
    };
    let sql = format!("{} WHERE {filter} ORDER BY {order} LIMIT ? OFFSET ?", super::detections::SELECT);
    let mut page_args = args.clone();
    page_args.push(Value::Integer(i64::from(q.limit)));
    page_args.push(Value::Integer(i64::from(q.offset)));
    let mut rows = conn
        .prepare_cached(&sql)?
        .query_map(rusqlite::params_from_iter(page_args), super::detections::from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    calibration::apply(conn, tenant, &mut rows)?;
    if !q.with_count {
        return Ok((rows, None));
    }
    let only_species = q.satellite_id.is_none() && q.min_confidence.is_none() && q.verification_status.is_none();
    let total = match (&codes, only_species) {
        (Some(codes), true) => codes.iter().map(|(_, n)| n).sum(),
        (None, true) => conn
            .prepare_cached("SELECT coalesce(sum(detection_count), 0) FROM tenant_species WHERE tenant_id = ?1")?
            .query_row([tenant], |r| r.get(0))?,
        _ => conn
            .prepare_cached(&format!("SELECT count(*) FROM detections d WHERE {filter}"))?
            .query_row(rusqlite::params_from_iter(args), |r| r.get::<_, i64>(0))?,
    };
    Ok((rows, Some(total.max(0) as u64)))
}
