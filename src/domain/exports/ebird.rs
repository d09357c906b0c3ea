//! eBird "Record Format (Extended)" (FORMATS.md 1): 19 columns A-S in a fixed order, no header
//! row, no `"`, commas or line breaks inside a cell, files of at most 1 MB.
//!
//! Choices where FORMATS.md says "unverified" (also in docs/exports.md):
//! - Number is `X` ("present, not counted"): an audio detector hears a species, it cannot count
//!   individuals. The number of detections and the best confidence go into Species Comments.
//! - All observations reported? is `N` unless the caller asks for `Y` (`allReported=true`): a
//!   classifier names only the species it knows, above its threshold.
//! - Start Time is 24-hour `HH:MM`; Protocol is `Stationary`; one observer; distance and area
//!   blank (stationary); State/Province and Country blank (eBird places the checklist from its
//!   latitude and longitude when the location is chosen during import).

use std::collections::BTreeMap;

use chrono::NaiveDateTime;

use super::{GroupBy, Heard, cells::plain};

/// The columns by position (labels are never uploaded; here for docs and tests).
pub const COLUMNS: [&str; 19] = [
    "Common Name",
    "Genus",
    "Species",
    "Number",
    "Species Comments",
    "Location Name",
    "Latitude",
    "Longitude",
    "Date",
    "Start Time",
    "State/Province",
    "Country Code",
    "Protocol",
    "Number of Observers",
    "Duration",
    "All observations reported?",
    "Effort Distance Miles",
    "Effort area acres",
    "Submission Comments",
];

/// The largest file eBird takes: 1 MB, read as 1,000,000 bytes to stay on the safe side.
pub const MAX_FILE_BYTES: usize = 1_000_000;

/// The longest stationary checklist: one local day.
const MAX_MINUTES: i64 = 24 * 60;

/// One species of a checklist.
#[derive(Debug, Clone, PartialEq)]
pub struct Species {
    pub common_name: String,
    pub scientific_name: String,
    pub detections: u32,
    pub best_confidence: f64,
}

/// One eBird checklist: one place, one start, one protocol.
#[derive(Debug, Clone, PartialEq)]
pub struct Checklist {
    pub location_name: String,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    pub start: NaiveDateTime,
    pub end: NaiveDateTime,
    /// In the order first heard.
    pub species: Vec<Species>,
}

impl Checklist {
    /// Whole minutes from start to end, rounded up, at least 1 and at most a day.
    pub fn duration_minutes(&self) -> i64 {
        let secs = (self.end - self.start).num_seconds().max(0);
        ((secs + 59) / 60).clamp(1, MAX_MINUTES)
    }
}

/// Gathers detections into checklists: per satellite place and day, or per recording session.
#[derive(Debug, Default)]
pub struct Builder {
    by: GroupBy,
    lists: BTreeMap<String, Checklist>,
}

impl Builder {
    pub fn new(by: GroupBy) -> Self {
        Self { by, lists: BTreeMap::new() }
    }

    pub fn add(&mut self, h: &Heard) {
        // A checklist spans the recording that heard its species (the sessions, cut to the day),
        // or the calls themselves where no session is known.
        let day_start = h.start.date().and_hms_opt(0, 0, 0).unwrap_or(h.start);
        let day_end = day_start + chrono::Duration::days(1);
        let (start, end) = match (&h.session, self.by) {
            (Some((_, s, e)), GroupBy::Session) => (*s, *e),
            (Some((_, s, e)), _) => ((*s).max(day_start), (*e).min(day_end)),
            (None, _) => (h.start, h.end),
        };
        let list = self.lists.entry(self.by.key(h)).or_insert_with(|| Checklist {
            location_name: h.satellite_name.clone(),
            latitude: h.latitude,
            longitude: h.longitude,
            start,
            end,
            species: Vec::new(),
        });
        list.start = list.start.min(start).min(h.start);
        list.end = list.end.max(end).max(h.end);
        match list.species.iter_mut().find(|s| s.scientific_name == h.scientific_name) {
            Some(s) => {
                s.detections += 1;
                s.best_confidence = s.best_confidence.max(h.confidence);
            }
            None => list.species.push(Species {
                common_name: h.common_name.clone(),
                scientific_name: h.scientific_name.clone(),
                detections: 1,
                best_confidence: h.confidence,
            }),
        }
    }

    /// The checklists, oldest first.
    pub fn finish(self) -> Vec<Checklist> {
        let mut lists: Vec<Checklist> = self.lists.into_values().collect();
        lists.sort_by(|a, b| (a.start, &a.location_name).cmp(&(b.start, &b.location_name)));
        lists
    }
}

/// What goes into the columns a detector cannot know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Column P: `Y` only when the person says the list is complete.
    pub all_reported: bool,
    /// Column S, before the automatic note.
    pub comment: String,
}

fn coordinate(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.6}")).unwrap_or_default()
}

/// The rows of one checklist, one per species, every cell already clean.
pub fn rows(list: &Checklist, opts: &Options) -> Vec<[String; 19]> {
    let comment = plain(&format!(
        "{} Recorded automatically by birdhub audio detection; species identified by a classifier.",
        opts.comment
    ));
    list.species
        .iter()
        .map(|s| {
            let mut words = s.scientific_name.split_whitespace();
            let genus = words.next().unwrap_or_default();
            let epithet = words.collect::<Vec<_>>().join(" ");
            [
                plain(&s.common_name),
                plain(genus),
                plain(&epithet),
                "X".into(),
                plain(&format!("{} audio detections; best confidence {:.2}", s.detections, s.best_confidence)),
                plain(&list.location_name),
                coordinate(list.latitude),
                coordinate(list.longitude),
                list.start.format("%m/%d/%Y").to_string(),
                list.start.format("%H:%M").to_string(),
                String::new(),
                String::new(),
                "Stationary".into(),
                "1".into(),
                list.duration_minutes().to_string(),
                if opts.all_reported { "Y" } else { "N" }.into(),
                String::new(),
                String::new(),
                comment.clone(),
            ]
        })
        .collect()
}

/// One checklist as the lines of the file (`\r\n` after each row).
pub fn encode(list: &Checklist, opts: &Options) -> String {
    rows(list, opts).iter().map(|r| r.join(",") + "\r\n").collect()
}

/// Encoded checklists packed in order into files of at most `limit` bytes, never splitting a
/// checklist. A checklist alone over the limit gets a file of its own (the caller refuses it).
pub fn pack(lists: Vec<String>, limit: usize) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for list in lists {
        match files.last_mut() {
            Some(f) if f.len() + list.len() <= limit => f.push_str(&list),
            _ => files.push(list),
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::{super::testing::*, *};

    fn opts() -> Options {
        Options { all_reported: false, comment: String::new() }
    }

    #[test]
    fn a_day_at_one_satellite_is_one_checklist_with_one_row_per_species() {
        let mut b = Builder::new(GroupBy::Day);
        b.add(&heard("a", "2026-05-01 05:12:30"));
        let mut wren = heard("a", "2026-05-01 06:40:00");
        wren.common_name = "House Wren".into();
        wren.scientific_name = "Troglodytes aedon".into();
        wren.confidence = 0.7;
        b.add(&wren);
        b.add(&heard("a", "2026-05-01 07:00:00"));
        b.add(&heard("b", "2026-05-01 05:00:00"));
        b.add(&heard("a", "2026-05-02 05:00:00"));
        let lists = b.finish();
        assert_eq!(lists.len(), 3);
        let first =
            lists.iter().find(|l| l.location_name == "Garden a" && l.start.to_string().starts_with("2026-05-01"));
        let first = first.expect("a's first day");
        assert_eq!(first.species.len(), 2);
        assert_eq!(first.species[0].detections, 2);
        let rows = rows(first, &opts());
        assert_eq!(rows.len(), 2);
        let r = &rows[0];
        assert_eq!(&r[..4], ["American Robin", "Turdus", "migratorius", "X"]);
        assert_eq!(r[4], "2 audio detections; best confidence 0.90");
        assert_eq!((r[6].as_str(), r[7].as_str()), ("45.500000", "-73.600000"));
        assert_eq!((r[8].as_str(), r[9].as_str()), ("05/01/2026", "05:12"));
        assert_eq!((r[12].as_str(), r[13].as_str(), r[14].as_str(), r[15].as_str()), ("Stationary", "1", "108", "N"));
    }

    #[test]
    fn sessions_set_the_effort_and_can_be_the_checklists() {
        let session = |id: &str, s: &str, e: &str| Some((id.to_owned(), at(s), at(e)));
        let mut h1 = heard("a", "2026-05-01 05:30:00");
        h1.session = session("s1", "2026-05-01 05:00:00", "2026-05-01 06:00:00");
        let mut h2 = heard("a", "2026-05-01 19:10:00");
        h2.session = session("s2", "2026-05-01 19:00:00", "2026-05-01 19:45:30");
        let mut by_day = Builder::new(GroupBy::Day);
        let mut by_session = Builder::new(GroupBy::Session);
        for h in [&h1, &h2] {
            by_day.add(h);
            by_session.add(h);
        }
        let day = by_day.finish();
        assert_eq!(day.len(), 1);
        assert_eq!((day[0].start, day[0].duration_minutes()), (at("2026-05-01 05:00:00"), 14 * 60 + 46));
        let sessions = by_session.finish();
        assert_eq!(sessions.iter().map(Checklist::duration_minutes).collect::<Vec<_>>(), [60, 46]);
        // A session over midnight is cut to the day when grouping by day.
        let mut late = heard("a", "2026-05-02 00:10:00");
        late.session = session("s3", "2026-05-01 23:00:00", "2026-05-02 01:00:00");
        let mut b = Builder::new(GroupBy::Day);
        b.add(&late);
        let l = b.finish();
        assert_eq!((l[0].start, l[0].duration_minutes()), (at("2026-05-02 00:00:00"), 60));
    }

    #[test]
    fn rows_have_19_clean_cells_and_all_reported_follows_the_option() {
        let mut h = heard("a", "2026-05-01 05:00:00");
        h.satellite_name = "Mont \"Royal\", north\nside".into();
        let mut b = Builder::new(GroupBy::Day);
        b.add(&h);
        let list = &b.finish()[0];
        let o = Options { all_reported: true, comment: "Dawn, \"chorus\"".into() };
        let line = encode(list, &o);
        assert!(line.ends_with("\r\n"));
        let cells: Vec<&str> = line.trim_end().split(',').collect();
        assert_eq!(cells.len(), 19, "{line}");
        assert_eq!(cells[5], "Mont Royal north side");
        assert_eq!(cells[15], "Y");
        assert!(cells[18].starts_with("Dawn chorus Recorded automatically"));
        assert!(!line.trim_end().contains(['"', '\n']));
    }

    #[test]
    fn files_stay_under_the_limit_and_keep_checklists_whole() {
        let lists: Vec<String> = (0..10).map(|i| format!("{i}").repeat(30) + "\r\n").collect();
        let files = pack(lists.clone(), 100);
        assert_eq!(files.len(), 4);
        assert!(files.iter().all(|f| f.len() <= 100));
        assert_eq!(files.concat(), lists.concat());
        assert_eq!(pack(vec!["x".repeat(150)], 100).len(), 1);
        assert!(pack(Vec::new(), 100).is_empty());
    }
}
