//! Five-field cron expressions (SPEC 2.17) and when they fire in a time zone.
//!
//! The `cron` crate wants a seconds field, numbers Sunday as 1 and ANDs day-of-month with
//! day-of-week. People write classic cron: `minute hour day-of-month month day-of-week`, Sunday
//! is 0 or 7, and when both day fields are restricted a day matching either one fires (Vixie cron).
//! So the five fields are checked and expanded here, then handed to the crate as explicit lists
//! behind a `0 ` seconds field (two schedules when both day fields are restricted).
//!
//! Wall-clock times are evaluated in the schedule's zone: a time that does not exist on a
//! spring-forward day fires when the clock shows it an hour later; a time that happens twice on a
//! fall-back day fires once, the first time.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;

/// A checked five-field expression, ready to evaluate.
#[derive(Debug, Clone)]
pub struct CronSchedule {
    /// What the user wrote, trimmed, fields separated by one space.
    pub source: String,
    /// One schedule, or two whose union is the expression (day-of-month OR day-of-week).
    parts: Vec<::cron::Schedule>,
}

/// Why an expression was refused; the message says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CronError(pub String);

struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const FIELDS: [Field; 5] = [
    Field { name: "minute", min: 0, max: 59, names: &[] },
    Field { name: "hour", min: 0, max: 23, names: &[] },
    Field { name: "day-of-month", min: 1, max: 31, names: &[] },
    Field {
        name: "month",
        min: 1,
        max: 12,
        names: &["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
    },
    Field { name: "day-of-week", min: 0, max: 7, names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"] },
];

/// How far ahead a schedule is looked for before it counts as never firing.
const SEARCH_LIMIT: usize = 2000;

impl CronSchedule {
    /// Checks a five-field expression; six fields (seconds) and out-of-range values are refused.
    pub fn parse(expr: &str) -> Result<Self, CronError> {
        let fields: Vec<&str> = expr.split_whitespace().collect();
        if fields.len() != 5 {
            let hint = if fields.len() == 6 { " (a seconds field is not supported)" } else { "" };
            return Err(CronError(format!(
                "cron must have five fields: minute hour day-of-month month day-of-week, e.g. \"0 6 * * 1\"; got {}{hint}",
                fields.len()
            )));
        }
        let mut sets = Vec::with_capacity(5);
        for (text, field) in fields.iter().zip(FIELDS.iter()) {
            sets.push(expand(text, field)?);
        }
        // Sunday is 0 or 7 to people and 1 to the crate; Monday is 1 to people and 2 to the crate.
        let dow: BTreeSet<u32> = sets[4].iter().map(|d| d % 7 + 1).collect();
        let list = |s: &BTreeSet<u32>| s.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let (min, hour, dom, month, dow) = (list(&sets[0]), list(&sets[1]), list(&sets[2]), list(&sets[3]), list(&dow));
        let dom_any = fields[2].starts_with('*');
        let dow_any = fields[4].starts_with('*');
        let exprs = match (dom_any, dow_any) {
            (false, false) => {
                vec![format!("0 {min} {hour} {dom} {month} *"), format!("0 {min} {hour} * {month} {dow}")]
            }
            _ => vec![format!("0 {min} {hour} {dom} {month} {dow}")],
        };
        let parts = exprs
            .iter()
            .map(|e| e.parse::<::cron::Schedule>().map_err(|err| CronError(format!("cron {expr:?}: {err}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let schedule = Self { source: fields.join(" "), parts };
        // From a fixed date, so the check reads no clock: 29 February counts, 31 February never fires.
        let since = Utc.with_ymd_and_hms(2000, 1, 1, 0, 0, 0).single().unwrap_or_default();
        if schedule.next_after(since, Tz::UTC).is_none() {
            return Err(CronError(format!("cron {expr:?} never fires (no such date)")));
        }
        Ok(schedule)
    }

    /// The first time strictly after `t` at which the schedule fires in `tz`.
    pub fn next_after(&self, t: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
        self.parts.iter().filter_map(|p| next_of(p, t, tz)).min()
    }

    /// The next `n` firing times after `t`, in `tz`.
    pub fn upcoming(&self, t: DateTime<Utc>, tz: Tz, n: usize) -> Vec<DateTime<Tz>> {
        let mut out = Vec::with_capacity(n);
        let mut at = t;
        while out.len() < n {
            let Some(next) = self.next_after(at, tz) else { break };
            out.push(next.with_timezone(&tz));
            at = next;
        }
        out
    }
}

/// The crate walks wall-clock times; they are read as naive times (in UTC, which has no
/// transitions) and placed in `tz` here, so gaps and repeats follow the rule in the module doc.
fn next_of(schedule: &::cron::Schedule, t: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
    // Start an hour early: on a fall-back day a wall time after `t` can sit before `t`'s wall time.
    let start = t.with_timezone(&tz).naive_local() - Duration::hours(1);
    schedule
        .after(&Utc.from_utc_datetime(&start))
        .take(SEARCH_LIMIT)
        .filter_map(|wall| place(wall.naive_utc(), tz))
        .find(|at| *at > t)
}

fn place(wall: NaiveDateTime, tz: Tz) -> Option<DateTime<Utc>> {
    match tz.from_local_datetime(&wall) {
        LocalResult::Single(t) => Some(t.with_timezone(&Utc)),
        LocalResult::Ambiguous(first, _) => Some(first.with_timezone(&Utc)),
        LocalResult::None => match tz.from_local_datetime(&(wall + Duration::hours(1))) {
            LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => Some(t.with_timezone(&Utc)),
            LocalResult::None => None,
        },
    }
}

/// The values one field names: `*`, `n`, `a-b`, any of those with `/step`, comma lists, and
/// month or weekday names.
fn expand(text: &str, f: &Field) -> Result<BTreeSet<u32>, CronError> {
    let mut out = BTreeSet::new();
    for item in text.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((r, s)) => {
                let step: u32 = s.parse().ok().filter(|s| *s > 0).ok_or_else(|| {
                    CronError(format!("{}: step {s:?} in {item:?} must be a whole number above 0", f.name))
                })?;
                (r, step)
            }
            None => (item, 1),
        };
        let (lo, hi) = if range == "*" {
            (f.min, if f.name == "day-of-week" { 6 } else { f.max })
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a, f)?, value(b, f)?)
        } else {
            let v = value(range, f)?;
            // `a/step` runs from `a` to the end of the field, as in Vixie cron.
            (v, if item.contains('/') { f.max } else { v })
        };
        if lo > hi {
            return Err(CronError(format!("{}: range {range:?} runs backwards", f.name)));
        }
        out.extend((lo..=hi).step_by(step as usize));
    }
    Ok(out)
}

fn value(text: &str, f: &Field) -> Result<u32, CronError> {
    let lower = text.to_ascii_lowercase();
    if let Some(i) = f.names.iter().position(|n| *n == lower) {
        return Ok(i as u32 + if f.name == "month" { 1 } else { 0 });
    }
    let range = || format!("{}-{}", f.min, f.max);
    let v: u32 = text.parse().map_err(|_| {
        let names = if f.names.is_empty() { String::new() } else { format!(" or a name ({})", f.names.join(", ")) };
        CronError(format!("{}: {text:?} is not a number in {}{names}", f.name, range()))
    })?;
    if v < f.min || v > f.max {
        return Err(CronError(format!("{}: {v} is out of range {}", f.name, range())));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("time").with_timezone(&Utc)
    }

    fn next3(expr: &str, from: &str, tz: Tz) -> Vec<String> {
        let s = CronSchedule::parse(expr).expect("valid");
        s.upcoming(utc(from), tz, 3).iter().map(|t| t.to_rfc3339()).collect()
    }

    #[test]
    fn refuses_what_is_not_five_valid_fields() {
        for bad in [
            "61 * * * *",
            "0 0 * * * *",
            "* * * *",
            "",
            "0 24 * * *",
            "0 0 0 * *",
            "0 0 * 13 *",
            "0 0 * * 8",
            "*/0 * * * *",
            "5-1 * * * *",
            "a * * * *",
            "0 0 31 2 *",
        ] {
            assert!(CronSchedule::parse(bad).is_err(), "{bad:?} was accepted");
        }
        let six = CronSchedule::parse("0 0 6 * * 1").expect_err("six fields");
        assert!(six.0.contains("five fields") && six.0.contains("seconds"), "{six}");
        let range = CronSchedule::parse("61 * * * *").expect_err("61");
        assert!(range.0.contains("minute") && range.0.contains("0-59"), "{range}");
    }

    #[test]
    fn weekdays_count_from_sunday_zero_as_people_write_them() {
        // 2026-11-23 is a Monday.
        assert_eq!(
            next3("30 6 * * 1-5", "2026-11-27T12:00:00Z", Tz::UTC),
            ["2026-11-30T06:30:00+00:00", "2026-12-01T06:30:00+00:00", "2026-12-02T06:30:00+00:00"]
        );
        let sundays = next3("0 8 * * 0", "2026-11-23T00:00:00Z", Tz::UTC);
        assert_eq!(sundays, next3("0 8 * * 7", "2026-11-23T00:00:00Z", Tz::UTC));
        assert_eq!(sundays, next3("0 8 * * SUN", "2026-11-23T00:00:00Z", Tz::UTC));
        assert_eq!(sundays[0], "2026-11-29T08:00:00+00:00");
    }

    #[test]
    fn both_day_fields_restricted_fire_on_either() {
        // The 1st of the month or any Friday.
        assert_eq!(
            next3("0 0 1 * 5", "2026-11-23T00:00:00Z", Tz::UTC),
            ["2026-11-27T00:00:00+00:00", "2026-12-01T00:00:00+00:00", "2026-12-04T00:00:00+00:00"]
        );
    }

    #[test]
    fn evaluates_in_the_zone_across_daylight_saving_changes() {
        let berlin: Tz = "Europe/Berlin".parse().expect("zone");
        assert_eq!(
            next3("0 7 * * *", "2026-03-28T00:00:00Z", berlin),
            ["2026-03-28T07:00:00+01:00", "2026-03-29T07:00:00+02:00", "2026-03-30T07:00:00+02:00"]
        );
        // 02:30 does not exist on 29 March in Berlin: it fires at 03:30 that day.
        assert_eq!(
            next3("30 2 * * *", "2026-03-28T12:00:00Z", berlin),
            ["2026-03-29T03:30:00+02:00", "2026-03-30T02:30:00+02:00", "2026-03-31T02:30:00+02:00"]
        );
        // 02:30 happens twice on 25 October: it fires once.
        assert_eq!(
            next3("30 2 * * *", "2026-10-24T12:00:00Z", berlin),
            ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00", "2026-10-27T02:30:00+01:00"]
        );
    }

    #[test]
    fn steps_lists_and_names() {
        assert_eq!(
            next3("*/20 9-10 * jan,Feb mon", "2026-11-23T00:00:00Z", Tz::UTC),
            ["2027-01-04T09:00:00+00:00", "2027-01-04T09:20:00+00:00", "2027-01-04T09:40:00+00:00"]
        );
    }
}
