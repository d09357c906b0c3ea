//! UTC days and seasons (meteorological: winter Dec-Feb, spring Mar-May, summer Jun-Aug, autumn
//! Sep-Nov), for figures that have no station. The "first of day" and "first of season" flags
//! use the detecting station's own calendar ([`super::zone::day_bounds_in`]).

use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc};

/// Start (inclusive) and end (exclusive) of the UTC day containing `t`.
pub fn day_bounds(t: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let start = Utc.from_utc_datetime(&t.date_naive().and_hms_opt(0, 0, 0).unwrap_or_default());
    (start, start + chrono::Duration::days(1))
}

/// Start (inclusive) and end (exclusive) of the meteorological season containing `t`.
pub fn season_bounds(t: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let (y, m) = (t.year(), t.month());
    // The first month of the season, and its year (December starts next year's winter).
    let (start_year, start_month) = match m {
        12 => (y, 12),
        1 | 2 => (y - 1, 12),
        _ => (y, ((m - 3) / 3) * 3 + 3),
    };
    let first = |yy: i32, mm: u32| {
        let date = NaiveDate::from_ymd_opt(yy, mm, 1).unwrap_or_default();
        Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0).unwrap_or_default())
    };
    let start = first(start_year, start_month);
    let (end_year, end_month) =
        if start_month + 3 > 12 { (start_year + 1, start_month + 3 - 12) } else { (start_year, start_month + 3) };
    (start, first(end_year, end_month))
}

/// The season's name, for display.
pub fn season_name(t: DateTime<Utc>) -> &'static str {
    match t.month() {
        12 | 1 | 2 => "winter",
        3..=5 => "spring",
        6..=8 => "summer",
        _ => "autumn",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().expect("timestamp")
    }

    #[test]
    fn seasons_wrap_the_year() {
        assert_eq!(season_bounds(at("2026-01-15T10:00:00Z")), (at("2025-12-01T00:00:00Z"), at("2026-03-01T00:00:00Z")));
        assert_eq!(season_bounds(at("2026-12-31T23:59:59Z")), (at("2026-12-01T00:00:00Z"), at("2027-03-01T00:00:00Z")));
        assert_eq!(season_bounds(at("2026-05-31T00:00:00Z")), (at("2026-03-01T00:00:00Z"), at("2026-06-01T00:00:00Z")));
        assert_eq!(season_bounds(at("2026-09-01T00:00:00Z")).0, at("2026-09-01T00:00:00Z"));
        assert_eq!(season_name(at("2026-10-01T00:00:00Z")), "autumn");
        assert_eq!(day_bounds(at("2026-05-03T17:00:00Z")), (at("2026-05-03T00:00:00Z"), at("2026-05-04T00:00:00Z")));
    }
}
