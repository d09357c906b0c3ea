//! The recording schedule resolved to real times (SPEC 2.5): `sunrise`/`sunset` entries are
//! minute offsets from the sun event at the satellite's position (NOAA, [`super::sun`]),
//! `absolute` entries are local `HH:MM`. An empty schedule records all day.

use chrono::{DateTime, NaiveDate, TimeZone, Utc};

use super::satellite_config::ScheduleEntry;

/// One resolved window; `end` may fall on the next day (a window across midnight).
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    /// Index of the schedule entry this window came from.
    pub entry: usize,
}

/// An entry that could not be resolved on a day (no position, or no sunrise in polar night).
#[derive(Debug, Clone, PartialEq)]
pub struct Unresolved {
    pub entry: usize,
    pub reason: String,
}

/// The windows of `date` (local to `tz`) at the position, if known.
pub fn windows_on<Tz: TimeZone>(
    _entries: &[ScheduleEntry],
    _position: Option<(f64, f64)>,
    _date: NaiveDate,
    _tz: &Tz,
) -> (Vec<Window>, Vec<Unresolved>) {
    todo!("schedule helper")
}

/// Whether a satellite with this schedule records at `at` (an empty schedule always records;
/// windows of the previous day that run past midnight count).
pub fn active_at<Tz: TimeZone>(
    _entries: &[ScheduleEntry],
    _position: Option<(f64, f64)>,
    _at: DateTime<Utc>,
    _tz: &Tz,
) -> bool {
    todo!("schedule helper")
}
