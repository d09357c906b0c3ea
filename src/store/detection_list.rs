//! `GET /detections` (SPEC 4.2): filters, sorts and pages over a table a busy hub fills with
//! millions of rows, so every path reads one index and stops after one page (or sorts a set
//! known to be small).
//!
//! - Species names are resolved through `tenant_species` (a few hundred rows) into species codes,
//!   never by a `LIKE` over the detections; its counts also size each species filter.
//! - The index is chosen here ([`index_for`]) and named with `INDEXED BY`: without statistics,
//!   SQLite's planner was seen to take a confidence range index and sort 400 000 rows for a
//!   date-ordered page (3 s instead of 2 ms on the benchmark's year).
//! - The total is counted in [`detection_count`]: from kept counts, or bounded.
//! - `calibrated_confidence` comes from one read of the team's curves per page.

use rusqlite::{Connection, OptionalExtension, types::Value};

use super::{
    Result, calibration,
    detection_count::{self, Filter, Part, Total, Wanted},
    detections::Stored,
};
use crate::ids::{SatelliteId, TenantId};

/// `sortBy` of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    Date,
    Confidence,
    Species,
}

impl crate::domain::sort::SortField for SortBy {
    const FIELDS: &'static [(&'static str, Self)] =
        &[("date", SortBy::Date), ("confidence", SortBy::Confidence), ("species", SortBy::Species)];
}

#[derive(Debug, Clone)]
pub struct Query {
    pub satellite_id: Option<SatelliteId>,
    pub species_code: Option<String>,
    pub species_search: Option<String>,
    /// Species codes whose common name in the viewer's or the team's languages holds
    /// `species_search` (the use case looks them up in the model's label files); they match too.
    pub named: Vec<String>,
    pub min_confidence: Option<f64>,
    pub verification_status: Option<String>,
    pub sort_by: SortBy,
    pub descending: bool,
    pub limit: u32,
    pub offset: u32,
    pub with_count: bool,
}

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

/// What the species filters leave: the codes with their detection counts, and the team's total.
pub(super) struct SpeciesFilter {
    pub(super) codes: Vec<(String, i64)>,
    team_total: i64,
}

impl SpeciesFilter {
    /// The detections of these species (the counts `tenant_species` keeps).
    pub(super) fn rows(&self) -> i64 {
        self.codes.iter().map(|(_, n)| n).sum()
    }
}

/// A species code as people write it: `Parus major`, `parus-major` and `parus_major` are one.
fn code_key(code: &str) -> String {
    code.trim().to_lowercase().replace([' ', '-'], "_")
}

fn species_filter(conn: &Connection, tenant: TenantId, q: &Query) -> Result<Option<SpeciesFilter>> {
    if q.species_code.is_none() && q.species_search.is_none() {
        return Ok(None);
    }
    let needle = q.species_search.as_deref().map(str::to_lowercase);
    let all = team_species(conn, tenant)?;
    let team_total = all.iter().map(|s| s.detection_count).sum();
    let codes = all
        .into_iter()
        .filter(|s| {
            q.species_code.as_ref().is_none_or(|c| *c == s.species_code || code_key(c) == code_key(&s.species_code))
        })
        .filter(|s| {
            needle.as_ref().is_none_or(|n| {
                s.common_name.to_lowercase().contains(n.as_str())
                    || s.scientific_name.to_lowercase().contains(n.as_str())
                    || s.species_code.contains(n.replace([' ', '-'], "_").as_str())
                    || q.named.contains(&s.species_code)
            })
        })
        .map(|s| (s.species_code, s.detection_count))
        .collect();
    Ok(Some(SpeciesFilter { codes, team_total }))
}

/// The index the page is read through. Named rather than left to the planner: without
/// statistics SQLite can pick a range index and sort hundreds of thousands of rows. The rule:
/// an index that both narrows and orders wins; a species set is read through its own index (and
/// sorted) when that is fewer rows than walking the sort's index until a page of them turns up;
/// verified statuses are rare (people set them), so their index is used, `unverified` is not.
fn index_for(q: &Query, species: Option<&SpeciesFilter>) -> &'static str {
    let page_end = i64::from(q.offset) + i64::from(q.limit);
    let species_first = species.is_some_and(|s| {
        let rows = s.rows().max(1);
        // Walking another index meets matching rows spread through it (not so for names,
        // which cluster), so about this many rows are read before the page is full.
        let walk = page_end.saturating_mul(s.team_total) / rows;
        (s.codes.len() == 1 && q.sort_by != SortBy::Confidence) || q.sort_by == SortBy::Species || rows < walk
    });
    let rare_status = q.verification_status.as_deref().is_some_and(|s| s != "unverified");
    match q.sort_by {
        _ if species_first => "detections_tenant_species_day",
        SortBy::Date if rare_status => "detections_tenant_status_time",
        SortBy::Date if q.satellite_id.is_some() => "detections_satellite_time",
        SortBy::Date => "detections_tenant_time",
        SortBy::Confidence if rare_status => "detections_tenant_status_confidence",
        SortBy::Confidence => "detections_tenant_confidence",
        SortBy::Species if rare_status => "detections_tenant_status_time",
        SortBy::Species => NAME_WALK,
    }
}

/// The name sort without a species filter: the team's species in name order
/// (`tenant_species_name`, a few hundred rows), each one's detections by time
/// (`detections_tenant_species_day`). Both loops are ordered, so the page ends the walk.
const NAME_WALK: &str = "tenant_species_name";

/// Every index [`index_for`] can name: its rule over every kind of query.
/// Whether `tenant` kept a detection of `species` that people did not reject (the public page
/// shows only species heard for sure). Walks the species' index; stops at the first one.
pub fn heard_unrejected(conn: &Connection, tenant: TenantId, species: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM detections WHERE tenant_pk = (SELECT pk FROM tenants WHERE id = ?1)
               AND species_pk = (SELECT pk FROM species_labels WHERE species_code = ?2)
               AND verification_status <> 'rejected' LIMIT 1",
        )?
        .query_row(rusqlite::params![tenant, species], |_| Ok(()))
        .optional()?
        .is_some())
}

#[cfg(test)]
pub(super) fn every_index() -> Vec<&'static str> {
    use crate::domain::sort::SortField;
    let mut names = Vec::new();
    for (_, sort_by) in SortBy::FIELDS {
        for status in [None, Some("unverified"), Some("confirmed")] {
            for satellite in [None, Some(SatelliteId::new())] {
                // No species filter; one species (read through its own index); many rare ones.
                let filters =
                    [None, Some(vec![("a".to_owned(), 5)]), Some(vec![("a".to_owned(), 1), ("b".to_owned(), 1)])];
                for codes in filters {
                    let q = Query {
                        satellite_id: satellite,
                        species_code: None,
                        species_search: None,
                        named: Vec::new(),
                        min_confidence: None,
                        verification_status: status.map(str::to_owned),
                        sort_by: *sort_by,
                        descending: true,
                        limit: 50,
                        offset: 0,
                        with_count: false,
                    };
                    let species = codes.map(|codes| SpeciesFilter { codes, team_total: 1_000_000 });
                    names.push(index_for(&q, species.as_ref()));
                }
            }
        }
    }
    names
}

/// One page of detections and, unless `with_count` is false, the total matching (exact, or a
/// lower bound past [`detection_count::CAP`] rows read: see [`detection_count`]).
pub fn list(conn: &Connection, tenant: TenantId, q: &Query) -> Result<(Vec<Stored>, Option<Total>)> {
    list_capped(conn, tenant, q, detection_count::CAP)
}

/// [`list`] with the count's cap as an argument, so tests can pass a small one.
pub(super) fn list_capped(
    conn: &Connection,
    tenant: TenantId,
    q: &Query,
    cap: u64,
) -> Result<(Vec<Stored>, Option<Total>)> {
    let species = species_filter(conn, tenant, q)?;
    if species.as_ref().is_some_and(|s| s.codes.is_empty()) {
        return Ok((Vec::new(), q.with_count.then_some(Total { n: 0, is_lower_bound: false })));
    }
    let index = index_for(q, species.as_ref());
    let mut filter = Filter {
        tenant: Part::new("d.tenant_pk = (SELECT pk FROM tenants WHERE id = ?)", vec![Value::Text(tenant.to_string())]),
        ..Filter::default()
    };
    if let Some(s) = q.satellite_id {
        filter.satellite = Some(Part::new(
            "d.satellite_pk = (SELECT pk FROM satellites WHERE id = ?)",
            vec![Value::Text(s.to_string())],
        ));
    }
    if let Some(s) = &species {
        let mut key = conn.prepare_cached("SELECT pk FROM species_labels WHERE species_code = ?1")?;
        let mut keys = Vec::new();
        for (code, _) in &s.codes {
            keys.push(Value::Integer(key.query_row([code], |r| r.get(0)).optional()?.unwrap_or(-1)));
        }
        filter.species = Some(Part::new(format!("d.species_pk IN ({})", vec!["?"; s.codes.len()].join(",")), keys));
    }
    if let Some(min) = q.min_confidence {
        filter.confidence = Some(Part::new("d.confidence >= ?", vec![Value::Real(min)]));
    }
    if let Some(status) = &q.verification_status {
        filter.status = Some(Part::new("d.verification_status = ?", vec![Value::Text(status.clone())]));
    }
    let (filter_sql, args) = filter.all();
    let dir = if q.descending { "DESC" } else { "ASC" };
    let order = match q.sort_by {
        SortBy::Date => format!("d.detected_at {dir}, d.rowid {dir}"),
        SortBy::Confidence => format!("d.confidence {dir}, d.rowid {dir}"),
        // One species has one name: its own index then gives the order by time.
        SortBy::Species if species.as_ref().is_some_and(|s| s.codes.len() == 1) => {
            format!("d.detected_at {dir}, d.rowid {dir}")
        }
        SortBy::Species if index == NAME_WALK => {
            format!("t.common_name {dir}, t.species_code {dir}, d.detected_at {dir}, d.rowid {dir}")
        }
        SortBy::Species => format!("l.common_name {dir}, d.detected_at {dir}, d.rowid {dir}"),
    };
    let mut page_args = Vec::new();
    let (from, walk) = if index == NAME_WALK {
        page_args.push(Value::Text(tenant.to_string()));
        let from = super::detections::SELECT.replacen(
            "FROM detections d ",
            "FROM tenant_species t INDEXED BY tenant_species_name CROSS JOIN species_labels l \
             CROSS JOIN detections d INDEXED BY detections_tenant_species_day ",
            1,
        );
        let from = from.replacen(" JOIN species_labels l ON l.pk = d.species_pk", "", 1);
        (from, "t.tenant_id = ? AND l.species_code = t.species_code AND d.species_pk = l.pk AND ")
    } else {
        (
            super::detections::SELECT.replacen(
                "FROM detections d ",
                &format!("FROM detections d INDEXED BY {index} "),
                1,
            ),
            "",
        )
    };
    let sql = format!("{from} WHERE {walk}{filter_sql} ORDER BY {order} LIMIT ? OFFSET ?");
    page_args.extend(args);
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
    let wanted = Wanted {
        satellite: q.satellite_id,
        min_confidence: q.min_confidence,
        status: q.verification_status.as_deref(),
    };
    Ok((rows, Some(detection_count::total(conn, tenant, wanted, species.as_ref(), &filter, cap)?)))
}
