//! The recording schedule resolved to real times (SPEC 2.5): `sunrise`/`sunset` entries are
//! minute offsets from the sun event at the satellite's position (NOAA, [`super::sun`]),
//! `absolute` entries are local `HH:MM`. An empty schedule records all day.

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};

use super::satellite_config::ScheduleEntry;
use super::sun::{SunDay, sun_day};

/// The `entry` of the single all-day window of an empty schedule (no entry produced it).
pub const ALL_DAY: usize = usize::MAX;

/// One resolved window; `end` may fall on the next day (a window across midnight).
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    /// Index of the schedule entry this window came from ([`ALL_DAY`] for an empty schedule).
    pub entry: usize,
}

/// An entry that could not be resolved on a day (no position, or no sunrise in polar night).
#[derive(Debug, Clone, PartialEq)]
pub struct Unresolved {
    pub entry: usize,
    pub reason: String,
}

/// The instant of local `naive` in `tz`: the earlier one when the clock repeats, and the first
/// minute after the gap when the clock skips it (spring forward).
fn local_instant<Tz: TimeZone>(tz: &Tz, naive: NaiveDateTime) -> DateTime<Utc> {
    for later in 0..=3 {
        let t = naive + Duration::minutes(30 * later);
        if let Some(at) = tz.from_local_datetime(&t).earliest() {
            return at.with_timezone(&Utc);
        }
    }
    naive.and_utc()
}

fn local_midnight<Tz: TimeZone>(tz: &Tz, date: NaiveDate) -> DateTime<Utc> {
    local_instant(tz, date.and_time(NaiveTime::MIN))
}

/// The windows of `date` (local to `tz`) at the position, if known.
pub fn windows_on<Tz: TimeZone>(
    entries: &[ScheduleEntry],
    position: Option<(f64, f64)>,
    date: NaiveDate,
    tz: &Tz,
) -> (Vec<Window>, Vec<Unresolved>) {
    if entries.is_empty() {
        let next = date.succ_opt().unwrap_or(date);
        let window = Window { start: local_midnight(tz, date), end: local_midnight(tz, next), entry: ALL_DAY };
        return (vec![window], Vec::new());
    }
    let mut sun: Option<SunDay<Tz>> = None;
    let (mut windows, mut unresolved) = (Vec::new(), Vec::new());
    for (entry, e) in entries.iter().enumerate() {
        let resolved = match e.reference.as_str() {
            "absolute" => resolve_absolute(e, date, tz),
            "sunrise" | "sunset" => match position {
                None => Err("the satellite has no position (latitude/longitude), so sun times are unknown".into()),
                Some((lat, lon)) => {
                    let day = sun.get_or_insert_with(|| sun_day(lat, lon, date, tz));
                    resolve_sun(e, day)
                }
            },
            other => Err(format!("unknown reference {other:?} (expected sunrise, sunset or absolute)")),
        };
        match resolved {
            Ok((start, end)) => windows.push(Window { start, end, entry }),
            Err(reason) => unresolved.push(Unresolved { entry, reason }),
        }
    }
    windows.sort_by_key(|w| (w.start, w.entry));
    (windows, unresolved)
}

type Span = Result<(DateTime<Utc>, DateTime<Utc>), String>;

fn resolve_absolute<Tz: TimeZone>(e: &ScheduleEntry, date: NaiveDate, tz: &Tz) -> Span {
    let Some((start, end)) = e.absolute_times() else {
        return Err(format!("absolute start/end must be HH:MM, got {:?}-{:?}", e.start, e.end));
    };
    // An end at or before the start is on the next day (`22:00`-`04:00`).
    let end_date = if end <= start { date.succ_opt().unwrap_or(date) } else { date };
    Ok((local_instant(tz, date.and_time(start)), local_instant(tz, end_date.and_time(end))))
}

fn resolve_sun<Tz: TimeZone>(e: &ScheduleEntry, day: &SunDay<Tz>) -> Span {
    let Some((start, end)) = e.minute_offsets() else {
        return Err(format!("{} start/end must be minute offsets, got {:?}-{:?}", e.reference, e.start, e.end));
    };
    if end <= start {
        return Err(format!("end offset {end} is not after start offset {start}"));
    }
    let event = match (day, e.reference.as_str()) {
        (SunDay::Normal { sunrise, .. }, "sunrise") => sunrise.with_timezone(&Utc),
        (SunDay::Normal { sunset, .. }, _) => sunset.with_timezone(&Utc),
        (SunDay::PolarDay { .. }, r) => {
            return Err(format!("no {r} on this date: polar day (the sun stays above the horizon)"));
        }
        (SunDay::PolarNight { .. }, r) => {
            return Err(format!("no {r} on this date: polar night (the sun stays below the horizon)"));
        }
    };
    Ok((event + Duration::minutes(start), event + Duration::minutes(end)))
}

/// Whether a satellite with this schedule records at `at` (an empty schedule always records;
/// windows of the previous day that run past midnight count).
pub fn active_at<Tz: TimeZone>(
    entries: &[ScheduleEntry],
    position: Option<(f64, f64)>,
    at: DateTime<Utc>,
    tz: &Tz,
) -> bool {
    if entries.is_empty() {
        return true;
    }
    let today = at.with_timezone(tz).date_naive();
    [today.pred_opt(), Some(today)]
        .into_iter()
        .flatten()
        .any(|date| windows_on(entries, position, date, tz).0.iter().any(|w| w.start <= at && at < w.end))
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
