use super::*;
use chrono::{FixedOffset, Timelike};

fn d(y: i32, m: u32, day: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, day).expect("valid date")
}

fn entry(start: &str, end: &str, reference: &str) -> ScheduleEntry {
    ScheduleEntry { start: start.into(), end: end.into(), reference: reference.into() }
}

fn utc(y: i32, m: u32, day: u32, h: u32, min: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, m, day, h, min, 0).single().expect("valid instant")
}

const LONDON: (f64, f64) = (51.5074, -0.1278);
const TROMSO: (f64, f64) = (69.6492, 18.9553);

#[test]
fn an_empty_schedule_records_all_day() {
    let tz = chrono_tz::Europe::London;
    let (w, u) = windows_on(&[], None, d(2024, 6, 20), &tz);
    assert!(u.is_empty());
    assert_eq!(w.len(), 1);
    assert_eq!((w[0].start, w[0].end, w[0].entry), (utc(2024, 6, 19, 23, 0), utc(2024, 6, 20, 23, 0), ALL_DAY));
    assert!(active_at(&[], None, utc(2024, 6, 20, 3, 17), &tz));
}

#[test]
fn sun_entries_are_offsets_from_the_event_at_the_position() {
    let tz = chrono_tz::Europe::London;
    let date = d(2024, 6, 20);
    let SunDay::Normal { sunrise, sunset, .. } = sun_day(LONDON.0, LONDON.1, date, &tz) else { panic!("normal day") };
    let entries = [entry("-30", "90", "sunrise"), entry("-60", "0", "sunset")];
    let (w, u) = windows_on(&entries, Some(LONDON), date, &tz);
    assert!(u.is_empty(), "{u:?}");
    assert_eq!(w.len(), 2);
    assert_eq!(w[0].entry, 0);
    assert_eq!(w[0].start, sunrise.with_timezone(&Utc) - Duration::minutes(30));
    assert_eq!(w[0].end, sunrise.with_timezone(&Utc) + Duration::minutes(90));
    assert_eq!(w[1].entry, 1);
    assert_eq!(w[1].start, sunset.with_timezone(&Utc) - Duration::hours(1));
    assert_eq!(w[1].end, sunset.with_timezone(&Utc));
    assert!(active_at(&entries, Some(LONDON), sunrise.with_timezone(&Utc), &tz));
    assert!(!active_at(&entries, Some(LONDON), utc(2024, 6, 20, 12, 0), &tz));
}

#[test]
fn absolute_entries_are_local_and_may_cross_midnight() {
    // London is on BST (UTC+1) in June.
    let tz = chrono_tz::Europe::London;
    let entries = [entry("22:00", "04:00", "absolute"), entry("12:00", "12:30", "absolute")];
    let (w, u) = windows_on(&entries, None, d(2024, 6, 20), &tz);
    assert!(u.is_empty(), "{u:?}");
    assert_eq!(w.len(), 2);
    // Sorted by start: the noon window first.
    assert_eq!((w[0].entry, w[0].start, w[0].end), (1, utc(2024, 6, 20, 11, 0), utc(2024, 6, 20, 11, 30)));
    assert_eq!((w[1].entry, w[1].start, w[1].end), (0, utc(2024, 6, 20, 21, 0), utc(2024, 6, 21, 3, 0)));
    // 02:00 local on the 21st is inside the previous day's window.
    assert!(active_at(&entries, None, utc(2024, 6, 21, 1, 0), &tz));
    assert!(!active_at(&entries, None, utc(2024, 6, 21, 3, 0), &tz), "the end is exclusive");
    assert!(!active_at(&entries, None, utc(2024, 6, 21, 9, 0), &tz));
}

#[test]
fn absolute_times_in_a_fixed_offset() {
    let tz = FixedOffset::east_opt(2 * 3600).expect("valid offset");
    let (w, _) = windows_on(&[entry("06:15", "07:00", "absolute")], None, d(2024, 1, 5), &tz);
    assert_eq!(w[0].start.with_timezone(&tz).hour(), 6);
    assert_eq!(w[0].start, utc(2024, 1, 5, 4, 15));
}

#[test]
fn sun_entries_without_a_position_are_unresolved() {
    let tz = chrono_tz::Europe::London;
    let entries = [entry("-30", "90", "sunrise"), entry("05:00", "06:00", "absolute")];
    let (w, u) = windows_on(&entries, None, d(2024, 6, 20), &tz);
    assert_eq!(w.iter().map(|w| w.entry).collect::<Vec<_>>(), [1]);
    assert_eq!(u.len(), 1);
    assert_eq!(u[0].entry, 0);
    assert!(u[0].reason.contains("no position"), "{}", u[0].reason);
    // An unresolved entry never records.
    assert!(!active_at(&entries[..1], None, utc(2024, 6, 20, 4, 0), &tz));
}

#[test]
fn polar_day_and_night_have_no_sun_event() {
    let tz = chrono_tz::Europe::Oslo;
    let entries = [entry("0", "60", "sunrise")];
    let (w, u) = windows_on(&entries, Some(TROMSO), d(2024, 6, 21), &tz);
    assert!(w.is_empty());
    assert!(u[0].reason.contains("polar day"), "{}", u[0].reason);
    let (w, u) = windows_on(&[entry("0", "60", "sunset")], Some(TROMSO), d(2024, 12, 21), &tz);
    assert!(w.is_empty());
    assert!(u[0].reason.contains("polar night"), "{}", u[0].reason);
}

#[test]
fn dst_gap_moves_an_absolute_time_to_after_the_gap() {
    // London skips 01:00-02:00 local on 2024-03-31.
    let tz = chrono_tz::Europe::London;
    let (w, _) = windows_on(&[entry("01:30", "03:00", "absolute")], None, d(2024, 3, 31), &tz);
    assert_eq!(w[0].start, utc(2024, 3, 31, 1, 0));
    assert_eq!(w[0].end, utc(2024, 3, 31, 2, 0));
}
