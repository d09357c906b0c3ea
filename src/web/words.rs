//! Dates, weeks, places and counts written in words for text the hub composes itself (an error
//! above a form, a map's caption, the range model's week, "1 chunk waiting"). Days a page shows on
//! their own go through `layout::day`, which the browser writes in the viewer's language; these are
//! for the places a date, a position or a count sits inside a sentence the server writes.

use chrono::{Datelike, NaiveDate};

use crate::inference::range;

/// A count and the noun that agrees with it: "1 detection", "2 detections", "12,000 clips".
/// Both forms are given whole, never built by adding an "s": "species", "entry"/"entries" and
/// "row was"/"rows were" all need their own. The browser's twin is `bh.count` in `app.js`.
pub fn count(n: impl TryInto<u64>, one: &str, many: &str) -> String {
    let n = n.try_into().unwrap_or(0);
    format!("{} {}", super::layout::grouped(n), noun(n, one, many))
}

/// The noun alone, for a count shown apart from its words (a big number above "detections today").
pub fn noun<'a>(n: impl TryInto<u64>, one: &'a str, many: &'a str) -> &'a str {
    if n.try_into().is_ok_and(|n| n == 1) { one } else { many }
}

/// A calendar day in words: "5 Dec 2026" (never `2026-12-05`).
pub fn date(day: NaiveDate) -> String {
    day.format("%-d %b %Y").to_string()
}

/// The days of BirdNET's `week` (four a month, 1..=48) in `year`: "1–7 Dec", "22–31 Dec".
/// People count weeks from January or by date, never in 48ths, so a page names the days.
pub fn birdnet_week(week: u32, year: i32) -> String {
    match range::week_days(year, week) {
        Some((first, last)) => format!("{}–{} {}", first.day(), last.day(), first.format("%b")),
        None => format!("week {week} of 48"),
    }
}

/// A position as people read it: "51.51° N, 0.13° W", hemisphere letters and no minus sign,
/// to about a kilometre.
pub fn place(lat: f64, lon: f64) -> String {
    place_to(lat, lon, 2)
}

/// [`place`] with at most `decimals` places (a station's own page shows its exact position).
pub fn place_to(lat: f64, lon: f64, decimals: usize) -> String {
    format!("{}, {}", degrees(lat, "N", "S", decimals), degrees(lon, "E", "W", decimals))
}

/// The latitudes from `south` to `north`: "51.30°–51.70° N", "33.90° S – 51.50° N".
pub fn latitudes(south: f64, north: f64) -> String {
    span(south, north, "N", "S")
}

/// The longitudes from `west` to `east`: "74.00°–81.40° W", "81.40° W – 7.39° E".
pub fn longitudes(west: f64, east: f64) -> String {
    span(west, east, "E", "W")
}

fn span(low: f64, high: f64, plus: &str, minus: &str) -> String {
    let (low_side, high_side) = (side(low, plus, minus, 2), side(high, plus, minus, 2));
    if low_side != high_side {
        return format!("{} – {}", degrees(low, plus, minus, 2), degrees(high, plus, minus, 2));
    }
    // One hemisphere: the smaller distance from the equator (or the meridian) first.
    let (a, b) = if low.abs() <= high.abs() { (low, high) } else { (high, low) };
    format!("{}°–{}° {low_side}", number(a.abs(), 2), number(b.abs(), 2))
}

/// The hemisphere `v` is in as written with `decimals` places: "0.00° N", never "0.00° S".
fn side<'a>(v: f64, plus: &'a str, minus: &'a str, decimals: usize) -> &'a str {
    let zero = number(v.abs(), decimals).chars().all(|c| c == '0' || c == '.');
    if v < 0.0 && !zero { minus } else { plus }
}

fn degrees(v: f64, plus: &str, minus: &str, decimals: usize) -> String {
    format!("{}° {}", number(v.abs(), decimals), side(v, plus, minus, decimals))
}

/// `decimals` places: "81.40", "7.39".
fn number(v: f64, decimals: usize) -> String {
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_agree_with_their_nouns() {
        assert_eq!(count(1_u64, "chunk waiting", "chunks waiting"), "1 chunk waiting");
        assert_eq!(count(0_usize, "detection", "detections"), "0 detections");
        assert_eq!(count(2_i64, "satellite", "satellites"), "2 satellites");
        assert_eq!(count(12_000_u64, "clip", "clips"), "12,000 clips");
        assert_eq!(count(1_i64, "entry", "entries"), "1 entry");
        assert_eq!(count(-1_i64, "row", "rows"), "0 rows");
        assert_eq!(noun(1_usize, "detection today", "detections today"), "detection today");
        assert_eq!(noun(21_u32, "detection today", "detections today"), "detections today");
    }

    #[test]
    fn dates_are_written_in_words() {
        let d = |y, m, day| NaiveDate::from_ymd_opt(y, m, day).expect("date");
        assert_eq!(date(d(2026, 12, 5)), "5 Dec 2026");
        assert_eq!(date(d(2025, 5, 1)), "1 May 2025");
    }

    #[test]
    fn a_birdnet_week_is_its_days() {
        assert_eq!(birdnet_week(45, 2026), "1–7 Dec");
        assert_eq!(birdnet_week(48, 2026), "22–31 Dec");
        assert_eq!(birdnet_week(8, 2028), "22–29 Feb");
        assert_eq!(birdnet_week(8, 2026), "22–28 Feb");
        assert_eq!(birdnet_week(19, 2026), "15–21 May");
        assert_eq!(birdnet_week(0, 2026), "week 0 of 48");
    }

    #[test]
    fn places_have_hemispheres_and_no_minus_sign() {
        assert_eq!(place(51.51, -0.13), "51.51° N, 0.13° W");
        assert_eq!(place(-33.87, 151.21), "33.87° S, 151.21° E");
        assert_eq!(place(7.389, -81.399), "7.39° N, 81.40° W");
        assert_eq!(place(-0.001, 0.0), "0.00° N, 0.00° E");
        assert_eq!(place_to(40.71283, -74.00601, 4), "40.7128° N, 74.0060° W");
    }

    #[test]
    fn spans_name_each_hemisphere_once() {
        assert_eq!(longitudes(-81.399, 7.389), "81.40° W – 7.39° E");
        assert_eq!(longitudes(-81.4, -74.0), "74.00°–81.40° W");
        assert_eq!(latitudes(51.3, 51.7), "51.30°–51.70° N");
        assert_eq!(latitudes(-33.9, 51.5), "33.90° S – 51.50° N");
    }
}
