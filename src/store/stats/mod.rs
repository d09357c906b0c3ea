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
pub mod zoned;

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
    /// rejected detections are left out.
    pub fn params(&self) -> Vec<(&'static str, Value)> {
        let s = split(self.from, self.to);
        let (m1, m2) = match s.months {
            Some((a, b)) => (month_key(a), month_key(b)),
            // An empty month range.
            None => ("9".into(), "0".into()),
        };
        vec![
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
        ]
    }

    /// A subquery of the range's counts per `(satellite_id, species_code, month, c)`: the edge
    /// days from `stats_daily`, the whole months from `stats_monthly`, and (when rejected
    /// detections are left out) the rejected ones as negative rows from `stats_verdicts` and
    /// `stats_verdicts_monthly` split the same way.
    pub fn cells(&self) -> String {
        let col = self.column();
        format!(
            "(SELECT satellite_id, species_code, substr(day, 1, 7) AS month, {col} AS c FROM stats_daily
              WHERE tenant_id = :t AND day BETWEEN :h1 AND :h2 AND (:sat IS NULL OR satellite_id = :sat)
                AND (:sp IS NULL OR species_code = :sp)
              UNION ALL
              SELECT satellite_id, species_code, substr(day, 1, 7), {col} FROM stats_daily
              WHERE tenant_id = :t AND day BETWEEN :e1 AND :e2 AND (:sat IS NULL OR satellite_id = :sat)
                AND (:sp IS NULL OR species_code = :sp)
              UNION ALL
              SELECT satellite_id, species_code, month, {col} FROM stats_monthly
              WHERE tenant_id = :t AND month BETWEEN :m1 AND :m2 AND (:sat IS NULL OR satellite_id = :sat)
                AND (:sp IS NULL OR species_code = :sp)
              UNION ALL
              SELECT satellite_id, species_code, substr(day, 1, 7), -n FROM stats_verdicts
              WHERE :rej = 1 AND tenant_id = :t AND status = 'rejected' AND day BETWEEN :h1 AND :h2
                AND band >= :band AND (:sat IS NULL OR satellite_id = :sat)
                AND (:sp IS NULL OR species_code = :sp)
              UNION ALL
              SELECT satellite_id, species_code, substr(day, 1, 7), -n FROM stats_verdicts
              WHERE :rej = 1 AND tenant_id = :t AND status = 'rejected' AND day BETWEEN :e1 AND :e2
                AND band >= :band AND (:sat IS NULL OR satellite_id = :sat)
                AND (:sp IS NULL OR species_code = :sp)
              UNION ALL
              SELECT satellite_id, species_code, month, -n FROM stats_verdicts_monthly
              WHERE :rej = 1 AND tenant_id = :t AND status = 'rejected' AND month BETWEEN :m1 AND :m2
                AND band >= :band AND (:sat IS NULL OR satellite_id = :sat) AND (:sp IS NULL OR species_code = :sp))"
        )
    }

    /// The rejected detections of the range as negative rows of `stats_verdicts` with `keys`,
    /// for the day-keyed tables (empty when rejected ones count).
    pub fn rejected(&self, keys: &str) -> String {
        format!(
            "SELECT {keys}, -n AS c FROM stats_verdicts
             WHERE :rej = 1 AND tenant_id = :t AND status = 'rejected' AND day BETWEEN :from AND :to AND band >= :band
               AND (:sat IS NULL OR satellite_id = :sat)"
        )
    }
}

/// Runs `sql` with those of `params` it names, mapping each row.
pub fn rows<T>(
    conn: &rusqlite::Connection,
    sql: &str,
    params: &[(&str, Value)],
    mut map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> super::Result<Vec<T>> {
    let mut stmt = conn.prepare_cached(sql)?;
    for (name, value) in params {
        if let Some(i) = stmt.parameter_index(name)? {
            stmt.raw_bind_parameter(i, value)?;
        }
    }
    let mut found = stmt.raw_query();
    let mut out = Vec::new();
    while let Some(row) = found.next()? {
        out.push(map(row)?);
    }
    Ok(out)
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
