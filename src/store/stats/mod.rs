//! Statistics reads (SPEC 4.8) over the rollup tables of migration 0009, never the detections
//! (the newest-detection lookups and the capped map points aside, which ride an index).
//!
//! A [`Scope`] is a team, an optional satellite, an inclusive range of local days, a lowest
//! confidence band and whether rejected detections count. Its [`Scope::cells`] is a subquery
//! over the range's whole months (`stats_monthly`) and its other days (`stats_daily`), so a
//! year's range reads about as many rows as a month's.

pub mod queries;
pub mod rollups;
pub mod series;

use chrono::{Datelike, Days, NaiveDate};
use rusqlite::types::Value;

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

impl Scope {
    /// The number a row adds: its detections, less the rejected ones unless they count.
    pub fn count(&self) -> &'static str {
        if self.include_rejected { "n" } else { "(n - rejected)" }
    }

    /// Parameters ?1 to ?3: the team, the lowest band and the satellite (or NULL).
    fn base(&self) -> Vec<Value> {
        vec![
            Value::Text(self.tenant.to_string()),
            Value::Integer(i64::from(self.min_band)),
            self.satellite.map_or(Value::Null, |s| Value::Text(s.to_string())),
        ]
    }

    /// A subquery of the range's rollup rows: `(satellite_id, species_code, band, month, n,
    /// rejected, confirmed, pending, confidence_sum, rejected_confidence)`, with its parameters (?1 to ?9).
    pub fn cells(&self) -> (&'static str, Vec<Value>) {
        const SQL: &str = "(SELECT satellite_id, species_code, band, substr(day, 1, 7) AS month, n, rejected, confirmed,
                    pending, confidence_sum, rejected_confidence
             FROM stats_daily WHERE tenant_id = ?1 AND day BETWEEN ?4 AND ?5 AND band >= ?2
               AND (?3 IS NULL OR satellite_id = ?3)
             UNION ALL
             SELECT satellite_id, species_code, band, substr(day, 1, 7), n, rejected, confirmed, pending, confidence_sum, rejected_confidence
             FROM stats_daily WHERE tenant_id = ?1 AND day BETWEEN ?6 AND ?7 AND band >= ?2
               AND (?3 IS NULL OR satellite_id = ?3)
             UNION ALL
             SELECT satellite_id, species_code, band, month, n, rejected, confirmed, pending, confidence_sum,
                    rejected_confidence
             FROM stats_monthly WHERE tenant_id = ?1 AND month BETWEEN ?8 AND ?9 AND band >= ?2
               AND (?3 IS NULL OR satellite_id = ?3))";
        let s = split(self.from, self.to);
        let mut p = self.base();
        p.extend([s.head.0, s.head.1, s.tail.0, s.tail.1].map(|d| Value::Text(day_key(d))));
        match s.months {
            Some((a, b)) => p.extend([Value::Text(month_key(a)), Value::Text(month_key(b))]),
            // An empty month range.
            None => p.extend([Value::Text("9".into()), Value::Text("0".into())]),
        }
        (SQL, p)
    }

    /// Parameters ?1 to ?5 for the day-keyed tables: team, lowest band, satellite, first and
    /// last day.
    pub fn days(&self) -> Vec<Value> {
        let mut p = self.base();
        p.extend([Value::Text(day_key(self.from)), Value::Text(day_key(self.to))]);
        p
    }
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
