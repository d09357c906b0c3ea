//! Reading BirdNET-Go's column values leniently: GORM and the Go SQLite driver wrote the same
//! field as text, integer or real across versions (IMPORTS.md B "quirks"), so every value is
//! taken as SQLite gives it and converted here.

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use rusqlite::types::Value;

use crate::usecases::imports::peer::Verdict;

pub(super) fn text(v: &Value) -> Option<String> {
    match v {
        Value::Text(s) => {
            let s = s.trim();
            (!s.is_empty()).then(|| s.to_owned())
        }
        Value::Integer(i) => Some(i.to_string()),
        Value::Real(r) => Some(r.to_string()),
        Value::Null | Value::Blob(_) => None,
    }
}

pub(super) fn number(v: &Value) -> Option<f64> {
    let n = match v {
        Value::Integer(i) => *i as f64,
        Value::Real(r) => *r,
        Value::Text(s) => s.trim().parse().ok()?,
        Value::Null | Value::Blob(_) => return None,
    };
    n.is_finite().then_some(n)
}

pub(super) fn integer(v: &Value) -> Option<i64> {
    match v {
        Value::Integer(i) => Some(*i),
        Value::Text(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A position of 0 means "not set" in BirdNET-Go (and v2 stores NULL then).
pub(super) fn position(v: &Value) -> Option<f64> {
    number(v).filter(|n| *n != 0.0)
}

/// The legacy `date` + `time` columns as a wall-clock time. The date may carry a time part
/// (`2024-05-01T00:00:00Z` from a driver that bound a time value); the time may carry fractions.
pub(super) fn local_time(date: &Value, time: &Value) -> Option<NaiveDateTime> {
    let date = text(date)?;
    let day = date.get(..10).and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())?;
    let time = text(time)?;
    let clock =
        NaiveTime::parse_from_str(&time, "%H:%M:%S%.f").or_else(|_| NaiveTime::parse_from_str(&time, "%H:%M")).ok()?;
    Some(day.and_time(clock))
}

/// An instant: Unix seconds (or milliseconds, when the number is too large for seconds), or a
/// GORM datetime text `YYYY-MM-DD HH:MM:SS[.f]±HH:MM` (a text without offset is taken as UTC).
pub(super) fn instant(v: &Value) -> Option<DateTime<Utc>> {
    match v {
        Value::Integer(i) => epoch(*i),
        Value::Real(r) if r.is_finite() => epoch(*r as i64),
        Value::Text(s) => {
            let s = s.trim();
            if let Ok(i) = s.parse::<i64>() {
                return epoch(i);
            }
            for fmt in ["%Y-%m-%d %H:%M:%S%.f%:z", "%Y-%m-%d %H:%M:%S%.f%z", "%Y-%m-%dT%H:%M:%S%.f%:z"] {
                if let Ok(t) = DateTime::parse_from_str(s, fmt) {
                    return Some(t.with_timezone(&Utc));
                }
            }
            if let Ok(t) = DateTime::parse_from_rfc3339(s) {
                return Some(t.with_timezone(&Utc));
            }
            let naive = s.get(..19.min(s.len()))?;
            NaiveDateTime::parse_from_str(naive, "%Y-%m-%d %H:%M:%S")
                .or_else(|_| NaiveDateTime::parse_from_str(naive, "%Y-%m-%dT%H:%M:%S"))
                .ok()
                .map(|t| t.and_utc())
        }
        _ => None,
    }
}

fn epoch(n: i64) -> Option<DateTime<Utc>> {
    // Seconds until the year 5138; anything larger is milliseconds.
    if n.abs() >= 100_000_000_000 { DateTime::from_timestamp_millis(n) } else { DateTime::from_timestamp(n, 0) }
}

/// A review's `verified` text.
pub(super) fn verdict(v: &Value) -> Option<Verdict> {
    match text(v)?.to_lowercase().as_str() {
        "correct" => Some(Verdict::Correct),
        "false_positive" => Some(Verdict::FalsePositive),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Value {
        Value::Text(s.into())
    }

    #[test]
    fn legacy_wall_clock_times_parse_in_every_written_shape() {
        let want = NaiveDate::from_ymd_opt(2024, 5, 1).and_then(|d| d.and_hms_opt(6, 12, 3));
        assert_eq!(local_time(&t("2024-05-01"), &t("06:12:03")), want);
        assert_eq!(
            local_time(&t("2024-05-01T00:00:00Z"), &t("06:12:03.250")).map(|d| d.date()),
            want.map(|d| d.date())
        );
        assert_eq!(local_time(&t("2024-13-01"), &t("06:12:03")), None);
        assert_eq!(local_time(&t("2024-05-01"), &t("noon")), None);
        assert_eq!(local_time(&Value::Null, &t("06:12:03")), None);
    }

    #[test]
    fn instants_read_seconds_millis_and_gorm_text() {
        let want = DateTime::from_timestamp(1_714_543_923, 0);
        assert_eq!(instant(&Value::Integer(1_714_543_923)), want);
        assert_eq!(instant(&Value::Integer(1_714_543_923_000)), want);
        assert_eq!(instant(&t("2024-05-01 08:12:03+02:00")), want);
        assert_eq!(instant(&t("2024-05-01 08:12:03.000000000+02:00")), want);
        assert_eq!(instant(&t("2024-05-01 06:12:03")), want);
        assert_eq!(instant(&t("yesterday")), None);
    }

    #[test]
    fn numbers_and_positions_are_lenient() {
        assert_eq!(number(&t(" 0.87 ")), Some(0.87));
        assert_eq!(number(&Value::Integer(1)), Some(1.0));
        assert_eq!(number(&t("high")), None);
        assert_eq!(position(&Value::Real(0.0)), None);
        assert_eq!(position(&Value::Real(60.17)), Some(60.17));
        assert_eq!(verdict(&t("false_positive")), Some(Verdict::FalsePositive));
        assert_eq!(verdict(&t("maybe")), None);
    }
}
