//! iNaturalist's bulk CSV import (FORMATS.md 2): a header row, then 8 columns by position. One
//! bad row makes iNaturalist reject the whole file, so [`check`] reads every row the way its
//! importer does before a file is handed out.
//!
//! One observation per species per group (satellite and day by default, or session, or every
//! detection): iNaturalist asks for one observation per encounter, and a robin singing all
//! morning is one encounter, not 400. The observation is its best-confidence detection.

use std::{collections::HashMap, str::FromStr};

use chrono::NaiveDateTime;
use serde::{Deserialize, Serialize};

use super::{GroupBy, Heard, cells::unquoted};

/// The header iNaturalist's own template uses (the importer reads columns by position).
pub const HEADER: [&str; 8] = [
    "Taxon name",
    "Date observed",
    "Description",
    "Place name",
    "Latitude / y coord / northing",
    "Longitude / x coord / easting",
    "Tags",
    "Geoprivacy",
];

/// Data rows a file may hold: the importer's page says fewer than 10,000.
pub const MAX_ROWS: usize = 9_999;
/// How many bad rows a refusal lists.
pub const LISTED_PROBLEMS: usize = 20;

/// Column 8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Geoprivacy {
    /// Blank: the coordinates are public.
    #[default]
    Open,
    Obscured,
    Private,
}

impl Geoprivacy {
    fn cell(self) -> &'static str {
        match self {
            Geoprivacy::Open => "",
            Geoprivacy::Obscured => "obscured",
            Geoprivacy::Private => "private",
        }
    }
}

/// One observation: the best detection of a species in its group, and how many there were.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub best: Heard,
    pub detections: u32,
}

/// Gathers detections into observations.
#[derive(Debug, Default)]
pub struct Builder {
    by: GroupBy,
    found: HashMap<(String, String), Observation>,
}

impl Builder {
    pub fn new(by: GroupBy) -> Self {
        Self { by, found: HashMap::new() }
    }

    pub fn add(&mut self, h: &Heard) {
        let key = (self.by.key(h), h.scientific_name.clone());
        let o = self.found.entry(key).or_insert_with(|| Observation { best: h.clone(), detections: 0 });
        o.detections += 1;
        if h.confidence > o.best.confidence {
            o.best = h.clone();
        }
    }

    /// How many observations so far (to stop reading early once past [`MAX_ROWS`]).
    pub fn len(&self) -> usize {
        self.found.len()
    }

    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// The observations, oldest first.
    pub fn finish(self) -> Vec<Observation> {
        let mut all: Vec<Observation> = self.found.into_values().collect();
        all.sort_by(|a, b| (a.best.start, &a.best.detection).cmp(&(b.best.start, &b.best.detection)));
        all
    }
}

/// The 8 cells of `o`. `audio` is a public link to its sound, where the hub can give one.
pub fn row(o: &Observation, audio: Option<&str>, geoprivacy: Geoprivacy) -> [String; 8] {
    let h = &o.best;
    let heard = if o.detections == 1 { "1 detection".to_owned() } else { format!("{} detections", o.detections) };
    let sound = match audio {
        Some(url) => format!("Audio: {url}"),
        None => "Audio: no public link (the hub has no public address configured).".to_owned(),
    };
    let description = format!(
        "{} heard by birdhub satellite {} ({heard}; best confidence {:.2}; identified automatically from audio). {sound}",
        h.common_name, h.satellite_name, h.confidence
    );
    let coordinate = |v: Option<f64>| v.map(|v| format!("{v:.6}")).unwrap_or_default();
    [
        unquoted(h.scientific_name.trim()),
        observed_on(h),
        unquoted(&description),
        unquoted(&h.satellite_name),
        coordinate(h.latitude),
        coordinate(h.longitude),
        "birdhub,audio".into(),
        geoprivacy.cell().into(),
    ]
}

/// Column 2: the station's local date and time, with its UTC offset when known
/// (`2026-05-14 23:30 -04:00`), so iNaturalist files it at the right instant whatever zone the
/// uploader's account is in.
fn observed_on(h: &Heard) -> String {
    let local = h.start.format("%Y-%m-%d %H:%M").to_string();
    match h.offset {
        Some(o) => format!("{local} {o}"),
        None => local,
    }
}

/// A row iNaturalist would refuse: its line in the file (the header is line 1) and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub line: usize,
    pub reason: String,
}

/// Every reason `rows` would be refused: too many rows, then the first [`LISTED_PROBLEMS`] bad
/// rows. Empty when iNaturalist would take the file. (A reader may stop gathering rows once it
/// has more than [`MAX_ROWS`]: the answer is the same.)
pub fn check(rows: &[[String; 8]]) -> Vec<Problem> {
    let mut problems = Vec::new();
    if rows.len() > MAX_ROWS {
        problems.push(Problem {
            line: MAX_ROWS + 2,
            reason: format!("more than {MAX_ROWS} observations; iNaturalist takes fewer than 10000 per file"),
        });
    }
    for (i, r) in rows.iter().enumerate() {
        if let Some(reason) = check_row(r) {
            problems.push(Problem { line: i + 2, reason });
            if problems.len() > LISTED_PROBLEMS {
                break;
            }
        }
    }
    problems
}

fn check_row(r: &[String; 8]) -> Option<String> {
    if let Some(i) = r.iter().position(|c| c.contains('"')) {
        return Some(format!("{} holds a double quote", HEADER[i]));
    }
    if r.iter().any(|c| c.contains(['\r', '\n'])) {
        return Some("a cell holds a line break".into());
    }
    if r[0].is_empty() {
        return Some("no taxon name".into());
    }
    let (local, offset) = (r[1].get(..16).unwrap_or(&r[1]), r[1].get(16..).unwrap_or_default());
    let offset_ok = offset.is_empty()
        || (offset.len() == 7 && offset.starts_with(' ') && chrono::FixedOffset::from_str(&offset[1..]).is_ok());
    if local.len() != 16 || NaiveDateTime::parse_from_str(local, "%Y-%m-%d %H:%M").is_err() || !offset_ok {
        return Some(format!("date {:?} is not YYYY-MM-DD HH:MM, optionally with an offset ±HH:MM", r[1]));
    }
    let number = |s: &str, max: f64, what: &str| match s.parse::<f64>() {
        _ if s.is_empty() => Err(format!("no {what} (the satellite has no location)")),
        Ok(v) if v.is_finite() && v.abs() <= max => Ok(()),
        _ => Err(format!("{what} {s:?} is not between -{max} and {max}")),
    };
    if let Err(e) = number(&r[4], 90.0, "latitude").and_then(|()| number(&r[5], 180.0, "longitude")) {
        return Some(e);
    }
    if !["", "obscured", "private"].contains(&r[7].as_str()) {
        return Some(format!("geoprivacy {:?} is not blank, obscured or private", r[7]));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{super::testing::*, *};

    fn observation(t: &str) -> Observation {
        Observation { best: heard("a", t), detections: 1 }
    }

    #[test]
    fn one_observation_per_species_and_day_from_its_best_detection() {
        let mut b = Builder::new(GroupBy::Day);
        let mut best = heard("a", "2026-05-01 06:00:00");
        best.confidence = 0.97;
        b.add(&heard("a", "2026-05-01 05:00:00"));
        b.add(&best);
        b.add(&heard("a", "2026-05-02 05:00:00"));
        let all = b.finish();
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].detections, all[0].best.confidence), (2, 0.97));
        let mut each = Builder::new(GroupBy::Detection);
        for t in ["2026-05-01 05:00:00", "2026-05-01 06:00:00"] {
            each.add(&heard("a", t));
        }
        assert_eq!(each.len(), 2);
    }

    #[test]
    fn rows_carry_the_link_or_say_there_is_none_and_pass_the_checks() {
        let o = Observation { best: heard("a", "2026-05-01 05:12:40"), detections: 3 };
        let r = row(&o, Some("https://birds.example/api/share/audio/1/t"), Geoprivacy::Obscured);
        assert_eq!(r[0], "Turdus migratorius");
        assert_eq!(r[1], "2026-05-01 05:12");
        assert!(r[2].contains("3 detections") && r[2].ends_with("Audio: https://birds.example/api/share/audio/1/t"));
        assert_eq!((r[4].as_str(), r[5].as_str(), r[7].as_str()), ("45.500000", "-73.600000", "obscured"));
        let none = row(&o, None, Geoprivacy::Open);
        assert!(none[2].contains("no public link"));
        assert_eq!(none[7], "");
        assert!(check(&[r, none]).is_empty());
    }

    #[test]
    fn the_date_carries_the_stations_offset_when_known() {
        let mut best = heard("a", "2026-05-14 23:30:10");
        best.offset = chrono::FixedOffset::west_opt(4 * 3600);
        let r = row(&Observation { best, detections: 1 }, None, Geoprivacy::Open);
        assert_eq!(r[1], "2026-05-14 23:30 -04:00");
        assert!(check(std::slice::from_ref(&r)).is_empty());
        for bad in ["2026-05-14 23:30 -4", "2026-05-14 23:30 EDT", "2026-05-14 23:30-04:00"] {
            let mut b = r.clone();
            b[1] = bad.into();
            assert_eq!(check(&[b]).len(), 1, "{bad}");
        }
    }

    #[test]
    fn every_kind_of_bad_row_is_named_with_its_line() {
        let good = row(&observation("2026-05-01 05:00:00"), None, Geoprivacy::Open);
        let bad = |f: &dyn Fn(&mut [String; 8])| {
            let mut r = good.clone();
            f(&mut r);
            r
        };
        let cases: Vec<([String; 8], &str)> = vec![
            (bad(&|r| r[0].clear()), "no taxon"),
            (bad(&|r| r[1] = "05/01/2026".into()), "YYYY-MM-DD HH:MM"),
            (bad(&|r| r[1] = "2026-05-01 05:00:00".into()), "YYYY-MM-DD HH:MM"),
            (bad(&|r| r[4] = "91".into()), "latitude"),
            (bad(&|r| r[5] = "-180.5".into()), "longitude"),
            (bad(&|r| r[4].clear()), "no latitude"),
            (bad(&|r| r[5] = "NaN".into()), "longitude"),
            (bad(&|r| r[3] = "the \"yard\"".into()), "double quote"),
            (bad(&|r| r[2] = "a\nb".into()), "line break"),
            (bad(&|r| r[7] = "public".into()), "geoprivacy"),
        ];
        for (r, want) in cases {
            let problems = check(&[good.clone(), r.clone()]);
            assert_eq!(problems.len(), 1, "{r:?}");
            assert_eq!(problems[0].line, 3);
            assert!(problems[0].reason.contains(want), "{want}: {}", problems[0].reason);
        }
    }

    #[test]
    fn ten_thousand_rows_are_too_many_and_problems_are_capped() {
        let good = row(&observation("2026-05-01 05:00:00"), None, Geoprivacy::Open);
        assert!(check(&vec![good.clone(); MAX_ROWS]).is_empty());
        let p = check(&vec![good.clone(); MAX_ROWS + 1]);
        assert!(p[0].reason.contains("more than 9999"), "{p:?}");
        let mut bad = good;
        bad[0].clear();
        assert_eq!(check(&vec![bad; 100]).len(), LISTED_PROBLEMS + 1);
    }
}
