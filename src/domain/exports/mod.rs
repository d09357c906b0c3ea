//! Export formats of the services birders send data to (SPEC 4.7, `shared/FORMATS.md`): the pure
//! rules that turn detections into their rows and check them. No I/O: the use cases in
//! `usecases::exports` read the detections and hand these functions plain values.
//!
//! - [`cells`]: cleaning free text for formats that cannot quote.
//! - [`ebird`]: eBird's "Record Format (Extended)": checklists, rows, files under 1 MB.
//! - [`inaturalist`]: iNaturalist's bulk CSV rows and the checks that keep a file importable.
//! - [`xenocanto`]: the metadata rows of a xeno-canto-style recording bundle.

pub mod cells;
pub mod ebird;
pub mod inaturalist;
pub mod xenocanto;

use chrono::{FixedOffset, NaiveDateTime};

/// One detection as an export format sees it, times local to its station (its effective zone).
#[derive(Debug, Clone, PartialEq)]
pub struct Heard {
    /// The satellite (its id as text): detections of two satellites never share a checklist.
    pub satellite: String,
    pub satellite_name: String,
    /// Where the chunk was recorded (the chunk's own position, else the satellite's).
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    /// The recording session of the chunk: its id, start and end (local).
    pub session: Option<(String, NaiveDateTime, NaiveDateTime)>,
    pub species_code: String,
    /// The name the services match: the model's English common name.
    pub common_name: String,
    pub scientific_name: String,
    pub confidence: f64,
    /// When the call starts and ends (local).
    pub start: NaiveDateTime,
    pub end: NaiveDateTime,
    /// The station's UTC offset at `start`, for formats that carry the zone (iNaturalist).
    pub offset: Option<FixedOffset>,
    /// The detection's id (links, file names).
    pub detection: String,
}

/// How detections are gathered into checklists (eBird) or observations (iNaturalist).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum GroupBy {
    /// One per satellite location and local day.
    #[default]
    Day,
    /// One per recording session (a detection without a session falls back to its day).
    Session,
    /// One per detection (iNaturalist only: an eBird checklist is never a single call).
    Detection,
}

impl GroupBy {
    /// The group `h` falls in: satellite, place (to ~100 m) and day, or its session.
    pub fn key(self, h: &Heard) -> String {
        let place = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
        let day = format!("{}|{}|{}|{}", h.satellite, place(h.latitude), place(h.longitude), h.start.date());
        match (self, &h.session) {
            (GroupBy::Detection, _) => h.detection.clone(),
            (GroupBy::Session, Some((id, ..))) => format!("{}|{id}", h.satellite),
            _ => day,
        }
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    pub fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").expect("time")
    }

    /// A robin heard at `t` (local) by satellite `sat`, at 45.5/-73.6.
    pub fn heard(sat: &str, t: &str) -> Heard {
        let start = at(t);
        Heard {
            satellite: sat.into(),
            satellite_name: format!("Garden {sat}"),
            latitude: Some(45.5),
            longitude: Some(-73.6),
            session: None,
            species_code: "amerob".into(),
            common_name: "American Robin".into(),
            scientific_name: "Turdus migratorius".into(),
            confidence: 0.9,
            start,
            end: start + chrono::Duration::seconds(3),
            offset: None,
            detection: format!("d-{sat}-{t}"),
        }
    }
}
