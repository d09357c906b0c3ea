//! Statistics reads (SPEC 4.8) over the rollup tables (migrations 0009, 0028 and 0032), never
//! the detections (the newest-detection lookups and the capped map points aside, which ride an
//! index).
//!
//! A [`Scope`] is a team, an optional satellite, an inclusive range of local days, a lowest
//! confidence band and whether rejected detections count. Its [`Scope::counts`] is a subquery
//! over the coarsest rows that cover the range (whole months, dekads, single days, see [`cut`]),
//! so a year's range reads about as many rows as a month's. The rollups key the team, satellite
//! and species by their integer keys (migration 0032): queries bind the scope's keys
//! ([`Scope::keyed`]) and read UUIDs and codes back with [`Names`].

pub mod cut;
pub mod queries;
pub mod rollups;
pub mod series;
pub mod zoned;

use std::collections::HashMap;

use chrono::{Datelike, Days, NaiveDate};
use rusqlite::{OptionalExtension, types::Value};

use crate::ids::{SatelliteId, TenantId};

/// What a statistic counts.
#[derive(Debug, Clone)]
pub struct Scope {
    pub tenant: TenantId,
    pub satellite: Option<SatelliteId>,
    /// First and last local day, inclusive.
    pub from: NaiveDate,
    pub to: NaiveDate,
    /// The lowest confidence band counted (`band = floor(confidence * 20)`).
    pub min_band: u8,
    pub include_rejected: bool,
    /// Only this species (a species profile); `None` for all.
    pub species: Option<String>,
}

/// `YYYY-MM-DD` of a day.
pub fn day_key(d: NaiveDate) -> String {
    d.format("%Y-%m-%d").to_string()
}

fn month_key(d: NaiveDate) -> String {
    d.format("%Y-%m").to_string()
}

fn first_of_month(d: NaiveDate) -> NaiveDate {
    d.with_day(1).unwrap_or(d)
}

fn last_of_month(d: NaiveDate) -> NaiveDate {
    let next = first_of_month(d).checked_add_months(chrono::Months::new(1)).unwrap_or(d);
    next.pred_opt().unwrap_or(d)
}

/// How a range splits: days before the first whole month, the whole months, days after them.
/// Empty parts have `from > to`.
#[derive(Debug, PartialEq, Eq)]
struct Split {
    head: (NaiveDate, NaiveDate),
    months: Option<(NaiveDate, NaiveDate)>,
    tail: (NaiveDate, NaiveDate),
}

fn split(from: NaiveDate, to: NaiveDate) -> Split {
    let first = if from.day() == 1 { from } else { last_of_month(from).succ_opt().unwrap_or(from) };
    let last = if to == last_of_month(to) { to } else { first_of_month(to).pred_opt().unwrap_or(to) };
    if first > last {
        return Split { head: (from, to), months: None, tail: (to.succ_opt().unwrap_or(to), to) };
    }
    Split {
        head: (from, first.checked_sub_days(Days::new(1)).unwrap_or(from)),
        months: Some((first, last)),
        tail: (last.succ_opt().unwrap_or(last), to),
    }
}

/// The rollup tables a count reads, per grain: day, dekad (if the family has one) and month.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    pub day: &'static str,
    pub dekad: Option<&'static str>,
    pub month: &'static str,
}

impl Family {
    /// Per satellite and species.
    pub const SATELLITE_SPECIES: Self =
        Self { day: "stats_pair_days", dekad: Some("stats_dekads"), month: "stats_pair_months" };
    /// Per species, all satellites.
    pub const SPECIES: Self = Self { day: "stats_species_days", dekad: None, month: "stats_species_months" };
    /// Per satellite, all species.
    pub const SATELLITE: Self = Self { day: "stats_satellite_days", dekad: None, month: "stats_satellite_months" };
    /// Verdicts per satellite and status (no dekads, no kept columns).
    pub const VERDICT_SATELLITE: Self =
        Self { day: "stats_verdict_satellite_days", dekad: None, month: "stats_verdict_satellite_months" };
    /// Verdicts per species and status.
    pub const VERDICT_SPECIES: Self =
        Self { day: "stats_verdict_species_days", dekad: None, month: "stats_verdict_species_months" };
    /// Per satellite and local hour.
    pub const HOUR_SATELLITE: Self = Self { day: "stats_hourly", dekad: None, month: "stats_hour_months" };
}

/// Parameter names of the parts of a cut with dekads (at most five parts) and without (three):
/// first and last row key, first and last day.
pub const DEKAD_CUT: [[&str; 4]; 5] = [
    [":ka0", ":kb0", ":kx0", ":ky0"],
    [":ka1", ":kb1", ":kx1", ":ky1"],
    [":ka2", ":kb2", ":kx2", ":ky2"],
    [":ka3", ":kb3", ":kx3", ":ky3"],
    [":ka4", ":kb4", ":kx4", ":ky4"],
];
pub const MONTH_CUT: [[&str; 4]; 3] =
    [[":ma0", ":mb0", ":mx0", ":my0"], [":ma1", ":mb1", ":mx1", ":my1"], [":ma2", ":mb2", ":mx2", ":my2"]];

impl Scope {
    /// The counting tables' column this scope counts: `n`, or the `geNN` of its lowest band.
    pub fn column(&self) -> String {
        rollups::threshold_columns()
            .find(|(band, _)| *band == self.min_band)
            .map_or_else(|| "n".to_owned(), |(_, column)| column)
    }

    /// The named parameters every statistic query may use (unused ones are not bound): `:t`
    /// team, `:sat` satellite or NULL, `:band` lowest band, `:from`/`:to` the range's days,
    /// `:h1`/`:h2` and `:e1`/`:e2` its edge days, `:m1`/`:m2` its whole months, `:rej` 1 when
    /// rejected detections are left out; and per part of the range's cuts ([`cut::cut`]) with
    /// and without dekads, its first and last row key and day ([`DEKAD_CUT`], [`MONTH_CUT`]).
    pub fn params(&self) -> Vec<(&'static str, Value)> {
        let s = split(self.from, self.to);
        let (m1, m2) = match s.months {
            Some((a, b)) => (month_key(a), month_key(b)),
            // An empty month range.
            None => ("9".into(), "0".into()),
        };
        let mut params = vec![
            (":t", Value::Text(self.tenant.to_string())),
            (":sat", self.satellite.map_or(Value::Null, |s| Value::Text(s.to_string()))),
            (":band", Value::Integer(i64::from(self.min_band))),
            (":from", Value::Text(day_key(self.from))),
            (":to", Value::Text(day_key(self.to))),
            (":h1", Value::Text(day_key(s.head.0))),
            (":h2", Value::Text(day_key(s.head.1))),
            (":e1", Value::Text(day_key(s.tail.0))),
            (":e2", Value::Text(day_key(s.tail.1))),
            (":m1", Value::Text(m1)),
            (":m2", Value::Text(m2)),
            (":rej", Value::Integer(i64::from(!self.include_rejected))),
            (":sp", self.species.clone().map_or(Value::Null, Value::Text)),
        ];
        for (dekads, names) in [(true, &DEKAD_CUT[..]), (false, &MONTH_CUT[..])] {
            for (part, [a, b, x, y]) in cut::cut(self.from, self.to, dekads).iter().zip(names) {
                let (first, last) = part.keys();
                params.push((a, Value::Text(first)));
                params.push((b, Value::Text(last)));
                params.push((x, Value::Text(day_key(part.from))));
                params.push((y, Value::Text(day_key(part.to))));
            }
        }
        params
    }

    /// [`Scope::params`], and the keys the rollups hold the scope's team, satellite and species
    /// under: `:tk`, `:sk` and `:spk` (NULL for none, or for a species the hub never stored a
    /// detection of, which no rollup row matches). Bound as values, not subqueries: a subquery
    /// that filters rows rather than seeks them costs a few steps on every row it tests.
    pub fn keyed(&self, conn: &rusqlite::Connection) -> super::Result<Vec<(&'static str, Value)>> {
        let key = |sql: &str, of: Option<String>| -> super::Result<Value> {
            let Some(of) = of else { return Ok(Value::Null) };
            let pk: Option<i64> = conn.prepare_cached(sql)?.query_row([of], |r| r.get(0)).optional()?;
            Ok(pk.map_or(Value::Null, Value::Integer))
        };
        let mut params = self.params();
        params.push((":tk", key("SELECT pk FROM tenants WHERE id = ?1", Some(self.tenant.to_string()))?));
        params.push((":sk", key("SELECT pk FROM satellites WHERE id = ?1", self.satellite.map(|s| s.to_string()))?));
        params.push((":spk", key("SELECT pk FROM species_labels WHERE species_code = ?1", self.species.clone())?));
        Ok(params)
    }

    /// A subquery of the range's counts per `(satellite_pk, species_pk, month, c)`: the range's
    /// days from `stats_pair_days`, dekads from `stats_dekads` and months from
    /// `stats_pair_months`, whose kept columns leave rejected detections out. See [`Scope::counts`].
    pub fn cells(&self) -> String {
        self.counts("satellite_pk, species_pk, month", Family::SATELLITE_SPECIES)
    }

    /// A subquery of the scope's counts `c` per `keys`, read from the coarsest rows of `family`
    /// that cover the range exactly ([`cut::cut`]), rejected detections left out unless the
    /// scope counts them: by the kept columns of migration 0028's tables, or as negative rows of
    /// the verdicts over the same days for the older ones. `keys` are columns all the tables
    /// read have; `month` may be named and is computed where a table has none.
    ///
    /// The SQL names only the parts and filters this scope has (no `:sat IS NULL OR ...` for
    /// SQLite to test on every row), and one satellite's or species' rows are read through
    /// their own indexes, so a request reads the rollup rows it counts and few others: the
    /// cost follows the days, species and satellites of the range, never the detections.
    pub fn counts(&self, keys: &str, family: Family) -> String {
        format!("({})", self.parts(keys, family))
    }

    /// [`Scope::counts`] without the parentheses: a compound SELECT of the rows to add up, to
    /// read as it is when the caller adds them up itself.
    pub fn parts(&self, keys: &str, family: Family) -> String {
        let filter = self.filter();
        let names: &[[&str; 4]] = if family.dekad.is_some() { &DEKAD_CUT } else { &MONTH_CUT };
        let mut parts = Vec::new();
        for (part, [a, b, x, y]) in cut::cut(self.from, self.to, family.dekad.is_some()).iter().zip(names) {
            let (table, key) = match part.grain {
                cut::Grain::Day => (family.day, "day"),
                cut::Grain::Dekad => (family.dekad.unwrap_or(family.day), "dekad"),
                cut::Grain::Month => (family.month, "month"),
            };
            let month = if key == "month" { "month".to_owned() } else { format!("substr({key}, 1, 7)") };
            let select = keys.replace("month", &format!("{month} AS month"));
            let kept = rollups::GRAINS.contains(&table);
            let col = if kept && !self.include_rejected { self.kept_column() } else { self.column() };
            parts.push(format!(
                "SELECT {select}, {col} AS c FROM {table}{} WHERE tenant_pk = :tk AND {key} BETWEEN {a} AND {b}{filter}",
                self.index_for(table)
            ));
            if !kept && !self.include_rejected {
                let (verdicts, span) = match part.grain {
                    cut::Grain::Month => ("stats_verdicts_monthly", format!("month BETWEEN {a} AND {b}")),
                    _ => ("stats_verdicts", format!("day BETWEEN {x} AND {y}")),
                };
                let month = if verdicts == "stats_verdicts" { "substr(day, 1, 7)" } else { "month" };
                let select = keys.replace("month", &format!("{month} AS month"));
                parts.push(format!(
                    "SELECT {select}, -n AS c FROM {verdicts}{}
                     WHERE tenant_pk = :tk AND status = 'rejected' AND {span} AND band >= :band{filter}",
                    self.index_for(verdicts)
                ));
            }
        }
        if parts.is_empty() {
            // An empty range (`from` after `to`, which the use cases refuse): no rows.
            let select = keys.replace("month", "substr(day, 1, 7) AS month");
            return format!("SELECT {select}, 0 AS c FROM {} WHERE 0", family.day);
        }
        parts.join(" UNION ALL ")
    }

    /// The SQL conditions of the scope's satellite and species, if it has them (` AND ...`).
    pub fn filter(&self) -> String {
        let mut filter = String::new();
        if self.satellite.is_some() {
            filter.push_str(" AND satellite_pk = :sk");
        }
        if self.species.is_some() {
            filter.push_str(" AND species_pk = :spk");
        }
        filter
    }

    /// The index a one-satellite or one-species scope reads `table` through, if it has one (the
    /// planner, without statistics, would walk every satellite's rows of the range instead).
    fn index_for(&self, table: &str) -> String {
        let by = if self.satellite.is_some() {
            "satellite"
        } else if self.species.is_some() {
            "species"
        } else {
            return String::new();
        };
        match (table, by) {
            ("stats_pair_days" | "stats_dekads" | "stats_pair_months", _)
            | ("stats_hourly" | "stats_verdicts" | "stats_verdicts_monthly", "satellite")
            | ("stats_verdicts", "species") => format!(" INDEXED BY {table}_{by}"),
            _ => String::new(),
        }
    }

    /// The kept-count column of migration 0028's tables this scope counts: `kn`, or the `kNN`
    /// of its lowest band.
    pub fn kept_column(&self) -> String {
        rollups::kept_columns()
            .find(|(band, _)| *band == self.min_band)
            .map_or_else(|| "kn".to_owned(), |(_, column)| column)
    }

    /// The rejected detections of the range as negative rows of `stats_verdicts` with `keys`,
    /// for the day-keyed tables (no rows when rejected ones count).
    pub fn rejected(&self, keys: &str) -> String {
        if self.include_rejected {
            return format!("SELECT {keys}, 0 AS c FROM stats_verdicts WHERE 0");
        }
        let sat = if self.satellite.is_some() { " AND satellite_pk = :sk" } else { "" };
        format!(
            "SELECT {keys}, -n AS c FROM stats_verdicts{}
             WHERE tenant_pk = :tk AND status = 'rejected' AND day BETWEEN :from AND :to AND band >= :band{sat}",
            if self.satellite.is_some() { " INDEXED BY stats_verdicts_satellite" } else { "" }
        )
    }
}

/// The satellites' UUIDs and the species' codes of the keys a read met, each looked up once.
pub struct Names<'c> {
    conn: &'c rusqlite::Connection,
    satellites: HashMap<i64, String>,
    species: HashMap<i64, String>,
}

impl<'c> Names<'c> {
    pub fn new(conn: &'c rusqlite::Connection) -> Self {
        Self { conn, satellites: HashMap::new(), species: HashMap::new() }
    }

    /// The UUID of satellite `pk` (a removed one's too: its row stays).
    pub fn satellite(&mut self, pk: i64) -> super::Result<String> {
        if let Some(id) = self.satellites.get(&pk) {
            return Ok(id.clone());
        }
        let id: String =
            self.conn.prepare_cached("SELECT id FROM satellites WHERE pk = ?1")?.query_row([pk], |r| r.get(0))?;
        self.satellites.insert(pk, id.clone());
        Ok(id)
    }

    /// The code of species `pk`.
    pub fn species(&mut self, pk: i64) -> super::Result<String> {
        if let Some(code) = self.species.get(&pk) {
            return Ok(code.clone());
        }
        let code: String = self
            .conn
            .prepare_cached("SELECT species_code FROM species_labels WHERE pk = ?1")?
            .query_row([pk], |r| r.get(0))?;
        self.species.insert(pk, code.clone());
        Ok(code)
    }
}

/// Runs `sql` with those of `params` it names, mapping each row.
pub fn rows<T>(
    conn: &rusqlite::Connection,
    sql: &str,
    params: &[(&str, Value)],
    mut map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> super::Result<Vec<T>> {
    let mut out = Vec::new();
    each(conn, sql, params, |row| {
        out.push(map(row)?);
        Ok(())
    })?;
    Ok(out)
}

/// Runs `sql` with those of `params` it names, handing each row to `f` as it comes.
pub fn each(
    conn: &rusqlite::Connection,
    sql: &str,
    params: &[(&str, Value)],
    mut f: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<()>,
) -> super::Result<()> {
    let mut stmt = conn.prepare_cached(sql)?;
    for (name, value) in params {
        if let Some(i) = stmt.parameter_index(name)? {
            stmt.raw_bind_parameter(i, value)?;
        }
    }
    let mut found = stmt.raw_query();
    while let Some(row) = found.next()? {
        f(row)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        s.parse().expect("date")
    }

    #[test]
    fn a_range_splits_into_edge_days_and_whole_months() {
        let s = split(d("2025-11-15"), d("2026-11-14"));
        assert_eq!(s.head, (d("2025-11-15"), d("2025-11-30")));
        assert_eq!(s.months, Some((d("2025-12-01"), d("2026-10-31"))));
        assert_eq!(s.tail, (d("2026-11-01"), d("2026-11-14")));
    }

    #[test]
    fn whole_months_leave_no_edge_days() {
        let s = split(d("2026-01-01"), d("2026-02-28"));
        assert!(s.head.0 > s.head.1 && s.tail.0 > s.tail.1, "{s:?}");
        assert_eq!(s.months, Some((d("2026-01-01"), d("2026-02-28"))));
    }

    #[test]
    fn a_range_within_a_month_reads_days_only() {
        let s = split(d("2026-03-05"), d("2026-04-03"));
        assert_eq!(s.head, (d("2026-03-05"), d("2026-04-03")));
        assert_eq!(s.months, None);
        assert!(s.tail.0 > s.tail.1);
        // One whole month in the middle.
        let s = split(d("2026-02-27"), d("2026-04-02"));
        assert_eq!(s.months, Some((d("2026-03-01"), d("2026-03-31"))));
        assert_eq!(s.head, (d("2026-02-27"), d("2026-02-28")));
        assert_eq!(s.tail, (d("2026-04-01"), d("2026-04-02")));
    }
}

#[cfg(test)]
mod rollups_tests;
