//! A range of local days cut into the coarsest rollup rows that cover it exactly: whole months,
//! then whole dekads (thirds of a month: days 1-10, 11-20, 21 to the end), then single days. A
//! year's range then reads about twelve months, at most four dekads and eighteen days of rows,
//! whatever the detections; a month's about three dekads and a few days.

use chrono::{Datelike, Days, NaiveDate};

/// Which rollup rows a part reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grain {
    Day,
    Dekad,
    Month,
}

/// Consecutive days read at one grain: `from` and `to` are its first and last day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    pub grain: Grain,
    pub from: NaiveDate,
    pub to: NaiveDate,
}

impl Part {
    /// The rows' keys of its first and last day: `YYYY-MM-DD`, `YYYY-MM-N` or `YYYY-MM`.
    pub fn keys(&self) -> (String, String) {
        (key(self.grain, self.from), key(self.grain, self.to))
    }
}

/// The key of the row of `grain` holding day `d`.
pub fn key(grain: Grain, d: NaiveDate) -> String {
    match grain {
        Grain::Day => d.format("%Y-%m-%d").to_string(),
        Grain::Dekad => format!("{}-{}", d.format("%Y-%m"), dekad_of(d)),
        Grain::Month => d.format("%Y-%m").to_string(),
    }
}

/// 1, 2 or 3: the third of its month a day falls in.
fn dekad_of(d: NaiveDate) -> u32 {
    d.day().div_ceil(10).min(3)
}

fn first_of_month(d: NaiveDate) -> NaiveDate {
    d.with_day(1).unwrap_or(d)
}

fn last_of_month(d: NaiveDate) -> NaiveDate {
    let next = first_of_month(d).checked_add_months(chrono::Months::new(1)).unwrap_or(d);
    next.pred_opt().unwrap_or(d)
}

fn dekad_start(d: NaiveDate) -> NaiveDate {
    d.with_day(1 + (dekad_of(d) - 1) * 10).unwrap_or(d)
}

fn dekad_end(d: NaiveDate) -> NaiveDate {
    match dekad_of(d) {
        3 => last_of_month(d),
        n => d.with_day(n * 10).unwrap_or(d),
    }
}

fn prev(d: NaiveDate) -> NaiveDate {
    d.checked_sub_days(Days::new(1)).unwrap_or(d)
}

fn next(d: NaiveDate) -> NaiveDate {
    d.succ_opt().unwrap_or(d)
}

/// The first day on or after `d` where a unit starts, given its start and end.
fn align_up(d: NaiveDate, start: fn(NaiveDate) -> NaiveDate, end: fn(NaiveDate) -> NaiveDate) -> NaiveDate {
    if start(d) == d { d } else { next(end(d)) }
}

/// The last day on or before `d` where a unit ends.
fn align_down(d: NaiveDate, start: fn(NaiveDate) -> NaiveDate, end: fn(NaiveDate) -> NaiveDate) -> NaiveDate {
    if end(d) == d { d } else { prev(start(d)) }
}

/// `from..=to` in order as parts: days, dekads, months, dekads, days (empty parts left out).
pub fn cut(from: NaiveDate, to: NaiveDate, dekads: bool) -> Vec<Part> {
    let mut parts = Vec::new();
    if from > to {
        return parts;
    }
    let (m1, m2) = (align_up(from, first_of_month, last_of_month), align_down(to, first_of_month, last_of_month));
    if m1 <= m2 {
        edge(from, prev(m1), dekads, &mut parts);
        parts.push(Part { grain: Grain::Month, from: m1, to: m2 });
        edge(next(m2), to, dekads, &mut parts);
    } else {
        edge(from, to, dekads, &mut parts);
    }
    parts
}

/// Days between whole months: whole dekads in the middle (when asked for), single days around.
fn edge(from: NaiveDate, to: NaiveDate, dekads: bool, parts: &mut Vec<Part>) {
    if from > to {
        return;
    }
    let (k1, k2) = (align_up(from, dekad_start, dekad_end), align_down(to, dekad_start, dekad_end));
    if !dekads || k1 > k2 {
        parts.push(Part { grain: Grain::Day, from, to });
        return;
    }
    if from < k1 {
        parts.push(Part { grain: Grain::Day, from, to: prev(k1) });
    }
    parts.push(Part { grain: Grain::Dekad, from: k1, to: k2 });
    if k2 < to {
        parts.push(Part { grain: Grain::Day, from: next(k2), to });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        s.parse().expect("date")
    }

    fn shape(from: &str, to: &str, dekads: bool) -> Vec<(Grain, String, String)> {
        cut(d(from), d(to), dekads).iter().map(|p| (p.grain, p.from.to_string(), p.to.to_string())).collect()
    }

    #[test]
    fn a_year_with_edge_days_reads_months_dekads_and_few_days() {
        use Grain::*;
        let s = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        let got = shape("2025-11-15", "2026-11-14", true);
        let want = vec![
            (Day, s("2025-11-15", "2025-11-20")),
            (Dekad, s("2025-11-21", "2025-11-30")),
            (Month, s("2025-12-01", "2026-10-31")),
            (Dekad, s("2026-11-01", "2026-11-10")),
            (Day, s("2026-11-11", "2026-11-14")),
        ];
        assert_eq!(got, want.into_iter().map(|(g, (a, b))| (g, a, b)).collect::<Vec<_>>());
    }

    #[test]
    fn every_day_is_in_exactly_one_part_whatever_the_range() {
        let start = d("2024-01-25");
        for offset in 0..80u64 {
            for len in [0u64, 1, 5, 9, 10, 11, 29, 30, 31, 45, 61, 365] {
                let from = start + Days::new(offset);
                let to = from + Days::new(len);
                for dekads in [true, false] {
                    let parts = cut(from, to, dekads);
                    let mut day = from;
                    for p in &parts {
                        assert_eq!(p.from, day, "{from}..{to}: {parts:?}");
                        assert!(p.from <= p.to, "{parts:?}");
                        // Whole units only.
                        match p.grain {
                            Grain::Month => assert!(p.from.day() == 1 && p.to == last_of_month(p.to), "{p:?}"),
                            Grain::Dekad => {
                                assert!(dekads && dekad_start(p.from) == p.from && dekad_end(p.to) == p.to, "{p:?}")
                            }
                            Grain::Day => {}
                        }
                        day = next(p.to);
                    }
                    assert_eq!(prev(day), to, "{from}..{to}: {parts:?}");
                    let days: i64 =
                        parts.iter().filter(|p| p.grain == Grain::Day).map(|p| (p.to - p.from).num_days() + 1).sum();
                    if dekads {
                        assert!(days <= 18, "{from}..{to}: {days} single days");
                    }
                }
            }
        }
    }

    #[test]
    fn keys_name_the_rows() {
        assert_eq!(key(Grain::Dekad, d("2026-02-28")), "2026-02-3");
        assert_eq!(key(Grain::Dekad, d("2026-02-10")), "2026-02-1");
        assert_eq!(key(Grain::Dekad, d("2026-02-11")), "2026-02-2");
        assert_eq!(key(Grain::Month, d("2026-02-11")), "2026-02");
        assert_eq!(key(Grain::Day, d("2026-02-01")), "2026-02-01");
    }
}
