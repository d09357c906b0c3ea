//! Timestamps as the SPEC writes them: ISO 8601 UTC with milliseconds and a `Z`.

use chrono::{DateTime, SecondsFormat, Utc};

/// `2026-11-21T17:05:19.123Z`: sorts correctly as text, which the SQLite schema relies on.
pub fn format(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The current time, formatted.
pub fn now() -> String {
    format(Utc::now())
}
