//! Timestamps as the SPEC writes them: ISO 8601 UTC with milliseconds and a `Z`.
//!
//! Inside the code a time is a [`Timestamp`] (a `DateTime<Utc>` that reads and writes the SPEC's
//! text in SQLite and JSON). Comparing times never compares strings, and a stored value that does
//! not parse is an error, never "now".

use std::{fmt, str::FromStr};

use chrono::{DateTime, SecondsFormat, Utc};
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub mod hours;

/// `2026-11-21T17:05:19.123Z`: sorts correctly as text, which the SQLite schema relies on.
pub fn format(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The current time, formatted.
pub fn now() -> String {
    format(Utc::now())
}

/// The hub's own zone: `TZ` when it names an IANA zone, else the system's, else UTC.
pub fn hub_zone() -> chrono_tz::Tz {
    std::env::var("TZ")
        .ok()
        .map(|z| z.trim_start_matches(':').to_owned())
        .into_iter()
        .chain(iana_time_zone::get_timezone().ok())
        .find_map(|z| chrono_tz::Tz::from_str(&z).ok())
        .unwrap_or(chrono_tz::Tz::UTC)
}

/// A time as alert texts (webhook, chat and mail bodies, the alert's message) write it for a
/// person: "04:10 UTC on 27 Nov", in the hub's zone with its abbreviation. Every alert text goes
/// through this one function, so giving teams their own zone changes only this.
/// The dashboard shows them on each viewer's clock with [`hours::text_as`].
pub fn readable(t: Timestamp) -> String {
    readable_in(t, hub_zone())
}

/// [`readable`] in `zone`.
pub fn readable_in(t: Timestamp, zone: chrono_tz::Tz) -> String {
    t.0.with_timezone(&zone).format("%H:%M %Z on %-d %b").to_string()
}

/// A calendar day as alert texts write it: "26 Nov".
pub fn readable_day(day: chrono::NaiveDate) -> String {
    day.format("%-d %b").to_string()
}

/// A point in time, stored and serialised in the SPEC's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, utoipa::ToSchema)]
#[schema(value_type = String, format = DateTime)]
pub struct Timestamp(pub DateTime<Utc>);

/// A text that is not an RFC 3339 time.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0:?} is not an RFC 3339 timestamp")]
pub struct BadTimestamp(pub String);

impl Timestamp {
    pub fn at(self) -> DateTime<Utc> {
        self.0
    }

    /// Whole milliseconds from `self` to `later` (negative when `later` is earlier).
    pub fn millis_until(self, later: Timestamp) -> i64 {
        (later.0 - self.0).num_milliseconds()
    }

    /// Milliseconds since the Unix epoch: how the big tables store a time (migration 0017), and
    /// what a query binds when it compares with `audio_chunks.recorded_at` or
    /// `detections.detected_at`.
    pub fn millis(self) -> i64 {
        self.0.timestamp_millis()
    }
}

impl From<DateTime<Utc>> for Timestamp {
    fn from(t: DateTime<Utc>) -> Self {
        Self(t)
    }
}

impl FromStr for Timestamp {
    type Err = BadTimestamp;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DateTime::parse_from_rfc3339(s).map(|t| Self(t.with_timezone(&Utc))).map_err(|_| BadTimestamp(s.to_owned()))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format(self.0))
    }
}

impl PartialEq<DateTime<Utc>> for Timestamp {
    fn eq(&self, other: &DateTime<Utc>) -> bool {
        self.0 == *other
    }
}

impl PartialOrd<DateTime<Utc>> for Timestamp {
    fn partial_cmp(&self, other: &DateTime<Utc>) -> Option<std::cmp::Ordering> {
        self.0.partial_cmp(other)
    }
}

impl ToSql for Timestamp {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(format(self.0)))
    }
}

/// Reads the SPEC's text, or milliseconds since the Unix epoch (the big tables' integer times).
impl FromSql for Timestamp {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        if let ValueRef::Integer(ms) = value {
            return DateTime::from_timestamp_millis(ms).map(Self).ok_or(FromSqlError::OutOfRange(ms));
        }
        let text = value.as_str()?;
        text.parse().map_err(|e: BadTimestamp| FromSqlError::Other(Box::new(e)))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(self.0))
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_sqlite_and_json_in_the_spec_format() {
        let t: Timestamp = "2026-11-21T17:05:19.123Z".parse().expect("parse");
        assert_eq!(t.to_string(), "2026-11-21T17:05:19.123Z");
        assert_eq!(serde_json::to_string(&t).expect("json"), "\"2026-11-21T17:05:19.123Z\"");
        let conn = rusqlite::Connection::open_in_memory().expect("db");
        let back: Timestamp = conn.query_row("SELECT ?1", [t], |r| r.get(0)).expect("row");
        assert_eq!(back, t);
        // Other offsets are normalised to UTC.
        let shifted: Timestamp = "2026-11-21T18:05:19.123+01:00".parse().expect("parse");
        assert_eq!(shifted, t);
    }

    #[test]
    fn milliseconds_since_the_epoch_read_as_the_same_time_and_agree_with_sqlite() {
        let t: Timestamp = "2026-11-21T17:05:19.123Z".parse().expect("parse");
        let conn = rusqlite::Connection::open_in_memory().expect("db");
        let (back, text, day): (Timestamp, String, String) = conn
            .query_row(
                "SELECT ?1, strftime('%Y-%m-%dT%H:%M:%fZ', ?1 / 1000.0, 'unixepoch'), date(?1 / 1000, 'unixepoch')",
                [t.millis()],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .expect("row");
        assert_eq!((back, text.as_str(), day.as_str()), (t, "2026-11-21T17:05:19.123Z", "2026-11-21"));
    }

    #[test]
    fn readable_times_name_the_zone_and_never_look_like_iso() {
        let t: Timestamp = "2026-11-27T04:10:41.685Z".parse().expect("parse");
        assert_eq!(readable_in(t, chrono_tz::Tz::UTC), "04:10 UTC on 27 Nov");
        assert_eq!(readable_in(t, chrono_tz::Europe::Berlin), "05:10 CET on 27 Nov");
        assert_eq!(readable_in(t, chrono_tz::America::New_York), "23:10 EST on 26 Nov");
        assert_eq!(readable_day(t.at().date_naive()), "27 Nov");
    }

    #[test]
    fn a_stored_value_that_does_not_parse_is_an_error_not_now() {
        let conn = rusqlite::Connection::open_in_memory().expect("db");
        let bad: rusqlite::Result<Timestamp> = conn.query_row("SELECT 'yesterday'", [], |r| r.get(0));
        assert!(bad.is_err());
        let null: rusqlite::Result<Option<Timestamp>> = conn.query_row("SELECT NULL", [], |r| r.get(0));
        assert_eq!(null.expect("null is fine"), None);
    }
}
