//! A satellite's clock, judged by the hub (issue 37; docs/satellites.md "The satellite's clock").
//! No I/O: the use cases hand in what the hub knows.
//!
//! - A heartbeat's `timestamp` minus the hub's receive time is the satellite's clock offset
//!   ([`offset_ms`]); past [`WRONG_AFTER`] either way the clock is wrong ([`is_wrong`]).
//! - A chunk's `recordedAt` is plausible when it lies between [`earliest_plausible`] and its arrival
//!   plus [`SLACK`], and (when the satellite's last heartbeat said how many chunks wait in its
//!   outbox) no earlier than that backlog allows ([`SECONDS_PER_QUEUED_CHUNK`] each, plus [`SLACK`]).
//!   An implausible stamp is corrected ([`judge`]): from the offset measured at send time when
//!   there is a recent one, else from the chunk's arrival. A plausible stamp is kept as sent.

use chrono::{DateTime, Duration, Utc};

/// How far a satellite's clock may be from the hub's before it is wrong (and how much leeway a
/// chunk's stamp gets around its arrival).
pub const WRONG_AFTER: Duration = Duration::minutes(2);
/// The leeway of a chunk's stamp around its arrival (transit, the chunk's own length).
pub const SLACK: Duration = Duration::minutes(2);
/// An offset measured longer ago than this is not used to correct a chunk.
pub const OFFSET_FRESH_FOR: Duration = Duration::minutes(10);
/// How long one chunk waiting in a satellite's outbox adds to the age of the chunks behind it.
pub const SECONDS_PER_QUEUED_CHUNK: i64 = 3;
/// How long a chunk may wait in an outbox at most (`outbox_max_age_hours` is at most a year), so
/// how much older than this build a genuine chunk can be.
pub const LONGEST_OUTBOX_WAIT: Duration = Duration::days(365);

/// When this package was built (Unix seconds, set by `build.rs`).
pub const BUILD_EPOCH: &str = env!("COMPILED_BUILD_EPOCH");

/// This package's build date.
pub fn build_date() -> DateTime<Utc> {
    BUILD_EPOCH.parse().ok().and_then(|s| DateTime::from_timestamp(s, 0)).unwrap_or(DateTime::UNIX_EPOCH)
}

/// The earliest stamp a genuine chunk can carry: the build date, less the longest a chunk can
/// wait in an outbox (a hub built today still receives last week's backlog). A 1970 stamp, a
/// Pi that booted without a real-time clock, is far before it.
pub fn earliest_plausible(build: DateTime<Utc>) -> DateTime<Utc> {
    build - LONGEST_OUTBOX_WAIT
}

/// The satellite's clock minus the hub's, from a heartbeat stamped `sent` and received at `received`.
pub fn offset_ms(sent: DateTime<Utc>, received: DateTime<Utc>) -> i64 {
    (sent - received).num_milliseconds()
}

/// Whether an offset makes the satellite's clock wrong.
pub fn is_wrong(offset_ms: i64) -> bool {
    offset_ms.unsigned_abs() > WRONG_AFTER.num_milliseconds().unsigned_abs()
}

/// What the hub knew of the satellite when a chunk arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Known {
    /// The offset of a heartbeat received within [`OFFSET_FRESH_FOR`] of the chunk, if any.
    pub recent_offset_ms: Option<i64>,
    /// The `outboxStats.unackedCount` of a heartbeat received within [`OFFSET_FRESH_FOR`].
    pub backlog: Option<u64>,
}

/// How an implausible stamp was replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Correction {
    /// Reported time minus the offset measured at send time.
    FromOffset,
    /// No recent offset: the chunk's arrival, less its length.
    FromArrival,
}

/// What becomes of a chunk's stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Keep,
    Corrected { at: DateTime<Utc>, how: Correction },
}

/// Whether a stamp needs no knowledge of the satellite to be plausible: between the floor and
/// the arrival plus slack, and no older than the slack (so any backlog allows it). The ingest
/// reads nothing more for such a chunk, which is every chunk of a satellite that keeps up.
pub fn surely_plausible(reported: DateTime<Utc>, arrival: DateTime<Utc>, floor: DateTime<Utc>) -> bool {
    reported >= floor && reported <= arrival + SLACK && reported >= arrival - SLACK
}

fn within(t: DateTime<Utc>, arrival: DateTime<Utc>, floor: DateTime<Utc>) -> bool {
    t >= floor && t <= arrival + SLACK
}

/// Judges a chunk stamped `reported` that arrived at `arrival` and lasts `duration_ms`.
pub fn judge(
    reported: DateTime<Utc>,
    arrival: DateTime<Utc>,
    duration_ms: i64,
    floor: DateTime<Utc>,
    known: Known,
) -> Verdict {
    let backlog_ok = known.backlog.is_none_or(|n| {
        let waited = Duration::seconds(SECONDS_PER_QUEUED_CHUNK.saturating_mul(n.min(u32::MAX.into()) as i64));
        reported >= arrival - waited - SLACK
    });
    if within(reported, arrival, floor) && backlog_ok {
        return Verdict::Keep;
    }
    let from_arrival =
        Verdict::Corrected { at: arrival - Duration::milliseconds(duration_ms.max(0)), how: Correction::FromArrival };
    match known.recent_offset_ms {
        // The clock is right now: an old chunk of a backlog the last heartbeat did not know of.
        Some(off) if !is_wrong(off) && within(reported, arrival, floor) => Verdict::Keep,
        Some(off) if is_wrong(off) => {
            let at = Duration::try_milliseconds(off).and_then(|d| reported.checked_sub_signed(d));
            match at.filter(|t| within(*t, arrival, floor)) {
                Some(at) => Verdict::Corrected { at, how: Correction::FromOffset },
                None => from_arrival,
            }
        }
        _ => from_arrival,
    }
}

/// An offset in words, in the unit a person would use: "3 s", "4 min", "56 years" (rounded to
/// the nearest unit; years are whole years gone by, as an age is).
pub fn amount(ms: i64) -> String {
    let s = (ms.unsigned_abs() + 500) / 1000;
    let near = |unit: u64| (s + unit / 2) / unit;
    let (n, unit) = match s {
        0..120 => (s, "s"),
        120..7200 => (near(60), "min"),
        7200..172_800 => (near(3600), "h"),
        172_800..63_072_000 => (near(86_400), "days"),
        _ => (s / 31_557_600, "years"),
    };
    format!("{n} {unit}")
}

/// The offset as a person reads it: "Clock right", "Clock 3 s ahead", "Clock wrong: 56 years
/// behind the hub".
pub fn describe(offset_ms: i64) -> String {
    let side = if offset_ms > 0 { "ahead of" } else { "behind" };
    if is_wrong(offset_ms) {
        format!("Clock wrong: {} {side} the hub", amount(offset_ms))
    } else if offset_ms.abs() < 1000 {
        "Clock right".to_owned()
    } else {
        format!("Clock {} {}", amount(offset_ms), if offset_ms > 0 { "ahead" } else { "behind" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        s.parse().expect("time")
    }

    const NOW: &str = "2026-11-27T12:00:00Z";

    fn floor() -> DateTime<Utc> {
        earliest_plausible(t("2026-11-01T00:00:00Z"))
    }

    #[test]
    fn offsets_read_as_a_person_says_them() {
        let year_1970 = offset_ms(t("1970-01-01T00:00:00Z"), t(NOW));
        let cases = [
            (0, "Clock right"),
            (400, "Clock right"),
            (3_000, "Clock 3 s ahead"),
            (-90_000, "Clock 90 s behind"),
            (-150_000, "Clock wrong: 3 min behind the hub"),
            (-140_000, "Clock wrong: 2 min behind the hub"),
            (3 * 3_600_000, "Clock wrong: 3 h ahead of the hub"),
            (3 * 3_600_000 - 2, "Clock wrong: 3 h ahead of the hub"),
            (-10 * 86_400_000, "Clock wrong: 10 days behind the hub"),
            (year_1970, "Clock wrong: 56 years behind the hub"),
        ];
        for (ms, words) in cases {
            assert_eq!(describe(ms), words, "{ms} ms");
        }
        assert!(!is_wrong(120_000) && is_wrong(120_001) && is_wrong(-120_001));
    }

    #[test]
    fn a_chunk_stamped_in_1970_is_corrected_from_the_offset_measured_at_send_time() {
        let (now, reported) = (t(NOW), t("1970-01-01T00:00:05Z"));
        let off = offset_ms(t("1970-01-01T00:00:00Z"), now - Duration::seconds(20));
        let known = Known { recent_offset_ms: Some(off), backlog: Some(0) };
        assert_eq!(
            judge(reported, now, 3000, floor(), known),
            Verdict::Corrected { at: t("2026-11-27T11:59:45Z"), how: Correction::FromOffset }
        );
    }

    #[test]
    fn without_a_recent_offset_the_arrival_stamps_the_chunk() {
        let now = t(NOW);
        let got = judge(t("1970-01-01T00:00:05Z"), now, 3000, floor(), Known::default());
        assert_eq!(got, Verdict::Corrected { at: t("2026-11-27T11:59:57Z"), how: Correction::FromArrival });
        // Far in the future, too.
        let got = judge(t("2035-01-01T00:00:00Z"), now, 3000, floor(), Known::default());
        assert_eq!(got, Verdict::Corrected { at: t("2026-11-27T11:59:57Z"), how: Correction::FromArrival });
        // A recent offset that would put the chunk in the future again is not trusted.
        let known = Known { recent_offset_ms: Some(-3_600_000), backlog: None };
        let got = judge(t("2026-11-27T12:30:00Z"), now, 3000, floor(), known);
        assert_eq!(got, Verdict::Corrected { at: t("2026-11-27T11:59:57Z"), how: Correction::FromArrival });
    }

    #[test]
    fn plausible_stamps_are_kept_as_sent() {
        let now = t(NOW);
        let cases = [
            // Just recorded, with or without knowledge of the satellite.
            ("2026-11-27T11:59:57Z", Known::default()),
            ("2026-11-27T12:01:00Z", Known::default()),
            // An hour-old chunk: a backlog of 1,300 chunks (65 min) allows it.
            ("2026-11-27T11:00:00Z", Known { recent_offset_ms: Some(0), backlog: Some(1300) }),
            // No heartbeat said how long the backlog is: last month's chunk is believed.
            ("2026-10-27T11:00:00Z", Known::default()),
            // The clock is right now, the backlog report is stale: kept.
            ("2026-11-27T11:00:00Z", Known { recent_offset_ms: Some(500), backlog: Some(0) }),
        ];
        for (reported, known) in cases {
            assert_eq!(judge(t(reported), now, 3000, floor(), known), Verdict::Keep, "{reported} {known:?}");
        }
        assert!(surely_plausible(t("2026-11-27T11:59:57Z"), now, floor()));
        assert!(!surely_plausible(t("2026-11-27T11:50:00Z"), now, floor()));
    }

    #[test]
    fn a_clock_minutes_behind_is_corrected_when_the_backlog_cannot_explain_the_age() {
        let now = t(NOW);
        let known = Known { recent_offset_ms: Some(-600_000), backlog: Some(2) };
        assert_eq!(
            judge(t("2026-11-27T11:50:00Z"), now, 3000, floor(), known),
            Verdict::Corrected { at: now, how: Correction::FromOffset }
        );
    }

    #[test]
    fn the_floor_lies_a_year_before_the_build() {
        assert_eq!(earliest_plausible(t("2026-11-01T00:00:00Z")), t("2025-11-01T00:00:00Z"));
        assert!(build_date() > t("2026-01-01T00:00:00Z"), "build.rs set the build date: {}", build_date());
    }
}
