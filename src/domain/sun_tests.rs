//! Expected times are published almanac values rounded to the minute, as shown by the NOAA Solar
//! Calculator (gml.noaa.gov/grad/solcalc) and timeanddate.com's sunrise tables for the same
//! coordinates; both use this algorithm's 90.833° zenith. Tolerance ±2 minutes.

use super::*;
use chrono::{FixedOffset, Offset};

fn d(y: i32, m: u32, day: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, day).expect("valid date")
}

/// Asserts a normal day whose local sunrise and sunset (HH:MM) and UTC offset (hours) match.
fn assert_day<Tz: TimeZone>(s: SunDay<Tz>, rise: (u32, u32), set: (u32, u32), offset_h: i32) {
    let SunDay::Normal { sunrise, noon, sunset } = s else { panic!("expected a normal day") };
    for (t, (h, m)) in [(&sunrise, rise), (&sunset, set)] {
        let want = t.date_naive().and_hms_opt(h, m, 0).expect("valid time");
        let diff = (t.naive_local() - want).num_seconds().abs();
        assert!(diff <= 120, "got {}, want {h:02}:{m:02}", t.naive_local());
        assert_eq!(t.offset().fix().local_minus_utc(), offset_h * 3600);
    }
    assert!(sunrise < noon && noon < sunset);
}

#[test]
fn london_summer_and_winter_solstice() {
    let tz = chrono_tz::Europe::London;
    assert_day(sun_day(51.5074, -0.1278, d(2024, 6, 20), &tz), (4, 43), (21, 21), 1);
    assert_day(sun_day(51.5074, -0.1278, d(2024, 12, 21), &tz), (8, 4), (15, 54), 0);
}

#[test]
fn boulder_summer_and_winter_solstice() {
    let tz = chrono_tz::America::Denver;
    assert_day(sun_day(40.0150, -105.2705, d(2024, 6, 20), &tz), (5, 32), (20, 33), -6);
    assert_day(sun_day(40.0150, -105.2705, d(2024, 12, 21), &tz), (7, 20), (16, 39), -7);
}

#[test]
fn quito_equatorial_equinox() {
    let tz = FixedOffset::west_opt(5 * 3600).expect("valid offset");
    assert_day(sun_day(-0.1807, -78.4678, d(2024, 3, 20), &tz), (6, 18), (18, 24), -5);
}

#[test]
fn sydney_southern_winter_and_summer() {
    let tz = chrono_tz::Australia::Sydney;
    assert_day(sun_day(-33.8688, 151.2093, d(2024, 6, 21), &tz), (7, 0), (16, 54), 10);
    assert_day(sun_day(-33.8688, 151.2093, d(2024, 12, 21), &tz), (5, 41), (20, 5), 11);
}

#[test]
fn tromso_polar_day_and_night() {
    let tz = chrono_tz::Europe::Oslo;
    let summer = sun_day(69.6492, 18.9553, d(2024, 6, 21), &tz);
    assert!(matches!(summer, SunDay::PolarDay { .. }), "{summer:?}");
    let winter = sun_day(69.6492, 18.9553, d(2024, 12, 21), &tz);
    assert!(matches!(winter, SunDay::PolarNight { .. }), "{winter:?}");
    // Solar noon still exists and falls on the requested local date, near 12:46 CEST / 11:42 CET.
    assert_eq!(summer.noon().date_naive(), d(2024, 6, 21));
    assert_eq!(winter.noon().date_naive(), d(2024, 12, 21));
    // Sun-relative schedules need the day to flip back: Tromsø has sunrise and sunset in March.
    assert!(matches!(sun_day(69.6492, 18.9553, d(2024, 3, 20), &tz), SunDay::Normal { .. }));
}

#[test]
fn across_dst_start_the_offset_changes_and_times_shift_an_hour() {
    // London, BST starts 2024-03-31 01:00 UTC.
    let tz = chrono_tz::Europe::London;
    assert_day(sun_day(51.5074, -0.1278, d(2024, 3, 30), &tz), (5, 39), (18, 31), 0);
    assert_day(sun_day(51.5074, -0.1278, d(2024, 3, 31), &tz), (6, 37), (19, 33), 1);
    // Denver, MDT starts 2024-03-10.
    let tz = chrono_tz::America::Denver;
    assert_day(sun_day(40.0150, -105.2705, d(2024, 3, 9), &tz), (6, 21), (18, 2), -7);
    assert_day(sun_day(40.0150, -105.2705, d(2024, 3, 10), &tz), (7, 19), (19, 3), -6);
}

#[test]
fn zone_far_from_its_meridian_keeps_the_requested_date() {
    // Kiritimati (UTC+14 at 157° W): solar noon is on the next UTC date.
    let tz = FixedOffset::east_opt(14 * 3600).expect("valid offset");
    let s = sun_day(1.87, -157.4, d(2024, 6, 21), &tz);
    assert_eq!(s.noon().date_naive(), d(2024, 6, 21));
}
