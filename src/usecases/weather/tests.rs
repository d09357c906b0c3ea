//! The range rules of the weather use case; the whole path runs in `tests/weather.rs`.

use chrono::NaiveDate;

use super::*;

fn ask(days: Option<i64>, from: Option<&str>, to: Option<&str>) -> Ask {
    let date = |s: &str| s.parse::<NaiveDate>().expect("date");
    Ask {
        tenant: TenantId::new(),
        satellite: None,
        days,
        from: from.map(date),
        to: to.map(date),
        include_rejected: false,
        min_confidence: None,
    }
}

fn today() -> NaiveDate {
    "2026-11-20".parse().expect("date")
}

fn days(r: (NaiveDate, NaiveDate)) -> (String, String) {
    (r.0.to_string(), r.1.to_string())
}

#[test]
fn ranges_end_today_by_default_or_run_from_to() {
    let ok = |a: Ask| days(range(&a, today()).expect("range"));
    assert_eq!(ok(ask(None, None, None)), ("2026-10-22".into(), "2026-11-20".into()), "30 days, today included");
    assert_eq!(ok(ask(Some(1), None, None)), ("2026-11-20".into(), "2026-11-20".into()));
    assert_eq!(ok(ask(Some(366), None, None)), ("2025-11-20".into(), "2026-11-20".into()));
    assert_eq!(ok(ask(None, Some("2025-01-01"), Some("2025-12-31"))), ("2025-01-01".into(), "2025-12-31".into()));
    assert_eq!(
        ok(ask(None, Some("2024-01-01"), Some("2024-12-31"))),
        ("2024-01-01".into(), "2024-12-31".into()),
        "366 days of a leap year"
    );
}

#[test]
fn bad_ranges_are_refused_saying_why() {
    let cases = [
        (ask(Some(0), None, None), "days must be 1 to 366, not 0"),
        (ask(Some(-3), None, None), "not -3"),
        (ask(Some(100_000), None, None), "not 100000"),
        (ask(None, Some("2026-11-02"), Some("2026-11-01")), "is after to"),
        (ask(None, Some("2025-01-01"), Some("2026-01-02")), "is 367 days"),
        (ask(None, Some("2024-12-31"), Some("2026-01-01")), "the most is 366"),
        (ask(None, Some("2026-11-01"), Some("2026-11-21")), "after today (2026-11-20 on the hub)"),
        (ask(Some(3), Some("2026-11-01"), None), "not both"),
        (ask(Some(3), None, Some("2026-11-01")), "not both"),
        (ask(None, Some("2026-11-01"), None), "together"),
        (ask(None, None, Some("2026-11-01")), "together"),
    ];
    for (a, needle) in cases {
        let err = range(&a, today()).expect_err(needle).to_string();
        assert!(err.contains(needle), "{a:?}: {err}");
    }
}
