//! Time zones (issue 37): IANA names, local days and seasons, and a zone's UTC offsets as the
//! step function the database stores (`zone_offsets`, migration 0024).
//!
//! A station's day is its own: a detection at 23:30 in New York is on that New York day, even
//! when it is the next morning in Berlin. Which zone a satellite is in is decided in
//! `usecases::zones`; this module only computes with a zone it is given.

use std::str::FromStr;

use chrono::{DateTime, Datelike, Duration, LocalResult, NaiveDate, Offset, TimeZone, Utc};
use chrono_tz::Tz;

/// A zone name that is not in the tz database.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a time zone name the hub knows: give a place's zone such as Europe/Berlin, America/New_York or UTC"
)]
pub struct ZoneError(pub String);

/// Reads an IANA zone name (`Europe/Berlin`, `UTC`). Abbreviations (`CET`, `EST`) and offsets
/// (`+01:00`) are refused: they do not know daylight saving time.
pub fn parse(name: &str) -> Result<Tz, ZoneError> {
    let trimmed = name.trim();
    let tz = Tz::from_str(trimmed).map_err(|_| ZoneError(name.to_owned()))?;
    // chrono-tz also knows the old POSIX-style aliases (`CET`, `EST5EDT`, `GMT+0`); only real
    // place names and UTC are what a person means by a zone.
    if trimmed.contains('/') || trimmed == "UTC" { Ok(tz) } else { Err(ZoneError(name.to_owned())) }
}

/// The local calendar day of `t` in `tz`.
pub fn local_day(t: DateTime<Utc>, tz: Tz) -> NaiveDate {
    t.with_timezone(&tz).date_naive()
}

/// The local hour (0 to 23) of `t` in `tz`.
pub fn local_hour(t: DateTime<Utc>, tz: Tz) -> u32 {
    chrono::Timelike::hour(&t.with_timezone(&tz))
}

/// The instant a local day starts in `tz`. Midnight can be skipped (a spring-forward at 00:00,
/// as in Santiago or Havana): the day then starts at the first instant that exists.
pub fn day_start(day: NaiveDate, tz: Tz) -> DateTime<Utc> {
    let midnight = day.and_hms_opt(0, 0, 0).unwrap_or_default();
    match tz.from_local_datetime(&midnight) {
        LocalResult::Single(t) => t.with_timezone(&Utc),
        LocalResult::Ambiguous(first, _) => first.with_timezone(&Utc),
        LocalResult::None => (1..=180)
            .find_map(|m| tz.from_local_datetime(&(midnight + Duration::minutes(m))).earliest())
            .map_or_else(|| Utc.from_utc_datetime(&midnight), |t| t.with_timezone(&Utc)),
    }
}

/// Start (inclusive) and end (exclusive), as UTC instants, of the local day in `tz` holding `t`.
pub fn day_bounds_in(t: DateTime<Utc>, tz: Tz) -> (DateTime<Utc>, DateTime<Utc>) {
    let day = local_day(t, tz);
    (day_start(day, tz), day_start(day.succ_opt().unwrap_or(day), tz))
}

/// Start (inclusive) and end (exclusive) of the meteorological season (winter Dec-Feb, spring
/// Mar-May, summer Jun-Aug, autumn Sep-Nov) holding `t`, by the local calendar of `tz`.
pub fn season_bounds_in(t: DateTime<Utc>, tz: Tz) -> (DateTime<Utc>, DateTime<Utc>) {
    let (first, next) = season_days(local_day(t, tz));
    (day_start(first, tz), day_start(next, tz))
}

/// The first day of the season holding `day`, and of the next season.
pub fn season_days(day: NaiveDate) -> (NaiveDate, NaiveDate) {
    let (y, m) = (day.year(), day.month());
    let (start_year, start_month) = match m {
        12 => (y, 12),
        1 | 2 => (y - 1, 12),
        _ => (y, ((m - 3) / 3) * 3 + 3),
    };
    let first = |yy: i32, mm: u32| NaiveDate::from_ymd_opt(yy, mm, 1).unwrap_or(day);
    let (end_year, end_month) =
        if start_month + 3 > 12 { (start_year + 1, start_month + 3 - 12) } else { (start_year, start_month + 3) };
    (first(start_year, start_month), first(end_year, end_month))
}

/// The zone's abbreviation at `t` ("CET", "EST"; numeric like "+0530" where the tz database has
/// no letters).
pub fn abbreviation(t: DateTime<Utc>, tz: Tz) -> String {
    t.with_timezone(&tz).format("%Z").to_string()
}

/// The UTC offset of `tz` at `t`, in seconds east of UTC.
pub fn offset_seconds(t: DateTime<Utc>, tz: Tz) -> i32 {
    tz.offset_from_utc_datetime(&t.naive_utc()).fix().local_minus_utc()
}

/// Looks positions' zones up offline (tzf-rs, with its bundled boundaries). Loading takes about
/// 0.05 s and 40 MB (`birdhub bench zones`), so the finder lives only while a batch of
/// satellites is resolved. glibc keeps the freed heap for reuse, so the process stays about
/// 40 MB larger after its first lookup (later loads reuse it; the crate forbids the `unsafe`
/// that `malloc_trim` would need).
pub struct Finder(tzf_rs::DefaultFinder);

impl Finder {
    pub fn load() -> Self {
        Self(tzf_rs::DefaultFinder::new())
    }

    /// The zone at latitude `lat`, longitude `lon` (at sea, the nautical `Etc/GMT±N` zones);
    /// `None` for coordinates off the globe.
    pub fn at(&self, lat: f64, lon: f64) -> Option<Tz> {
        if !(-90.0..=90.0).contains(&lat) || !(-180.0..=180.0).contains(&lon) {
            return None;
        }
        Tz::from_str(self.0.get_tz_name(lon, lat)).ok()
    }
}

/// The first instant the offsets table distinguishes (1900) and the last (2100): beyond them a
/// zone keeps its last offset.
const TABLE_FROM: i64 = -2_208_988_800; // 1900-01-01T00:00:00Z
const TABLE_TO: i64 = 4_102_444_800; // 2100-01-01T00:00:00Z

/// `tz`'s offsets as `(start_ms, offset_seconds)` steps, ascending: each applies from its start
/// until the next. The first starts at `i64::MIN`. Found by sampling every six hours and
/// bisecting each change to the second (no zone changes its offset twice within six hours).
pub fn offset_steps(tz: Tz) -> Vec<(i64, i32)> {
    let at = |s: i64| offset_seconds(DateTime::from_timestamp(s, 0).unwrap_or_default(), tz);
    let mut steps = vec![(i64::MIN, at(TABLE_FROM))];
    let step = 6 * 3600;
    let mut s = TABLE_FROM;
    let mut current = at(s);
    while s < TABLE_TO {
        let next = s + step;
        let off = at(next);
        if off != current {
            // The change is in (s, next]: find its first second.
            let (mut lo, mut hi) = (s, next);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if at(mid) == current { lo = mid } else { hi = mid }
            }
            steps.push((hi * 1000, off));
            current = off;
        }
        s = next;
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().expect("timestamp")
    }

    #[test]
    fn names_are_iana_places_or_utc() {
        assert_eq!(parse("Europe/Berlin"), Ok(chrono_tz::Europe::Berlin));
        assert_eq!(parse("UTC"), Ok(chrono_tz::UTC));
        for bad in ["CET", "EST", "+01:00", "Mars/Olympus", "", "berlin"] {
            let e = parse(bad).expect_err(bad);
            assert!(e.to_string().contains("Europe/Berlin"), "{e}");
        }
    }

    #[test]
    fn local_days_and_their_bounds() {
        let ny = chrono_tz::America::New_York;
        // 02:30 UTC on 15 May is 22:30 the evening before in New York.
        let t = at("2026-05-15T02:30:00Z");
        assert_eq!(local_day(t, ny), NaiveDate::from_ymd_opt(2026, 5, 14).expect("day"));
        assert_eq!(day_bounds_in(t, ny), (at("2026-05-14T04:00:00Z"), at("2026-05-15T04:00:00Z")));
        // The day daylight saving time starts has 23 hours.
        let (s, e) = day_bounds_in(at("2026-03-08T12:00:00Z"), ny);
        assert_eq!((e - s).num_hours(), 23);
        // Seasons are local too: 1 March 03:00 UTC is still winter (28 Feb evening) in New York.
        assert_eq!(season_bounds_in(at("2026-03-01T03:00:00Z"), ny).0, at("2025-12-01T05:00:00Z"));
        assert_eq!(season_bounds_in(at("2026-03-01T06:00:00Z"), ny).0, at("2026-03-01T05:00:00Z"));
        assert_eq!(local_hour(at("2026-07-01T04:59:00Z"), chrono_tz::Europe::Berlin), 6);
    }

    #[test]
    fn positions_find_their_zones() {
        let f = Finder::load();
        assert_eq!(f.at(40.7128, -74.0060), Some(chrono_tz::America::New_York));
        assert_eq!(f.at(52.52, 13.405), Some(chrono_tz::Europe::Berlin));
        assert_eq!(f.at(-33.87, 151.21), Some(chrono_tz::Australia::Sydney));
        assert_eq!(f.at(123.0, 0.0), None);
    }

    #[test]
    fn offset_steps_follow_daylight_saving_to_the_second() {
        let berlin = offset_steps(chrono_tz::Europe::Berlin);
        let in_force = |ms: i64| berlin.iter().rev().find(|(s, _)| *s <= ms).map(|(_, o)| *o);
        assert_eq!(berlin[0].0, i64::MIN);
        // 2026: CEST from 29 March 01:00 UTC to 25 October 01:00 UTC.
        let spring = at("2026-03-29T01:00:00Z").timestamp_millis();
        assert_eq!(in_force(spring - 1000), Some(3600));
        assert_eq!(in_force(spring), Some(7200));
        let autumn = at("2026-10-25T01:00:00Z").timestamp_millis();
        assert_eq!(in_force(autumn - 1000), Some(7200));
        assert_eq!(in_force(autumn), Some(3600));
        assert_eq!(offset_steps(chrono_tz::UTC), vec![(i64::MIN, 0)]);
        // Kathmandu's quarter hour.
        let ktm = offset_steps(chrono_tz::Asia::Kathmandu);
        assert_eq!(ktm.last().map(|s| s.1), Some(5 * 3600 + 45 * 60));
    }
}
