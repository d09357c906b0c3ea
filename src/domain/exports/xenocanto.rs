//! The metadata of a xeno-canto-style recording bundle (FORMATS.md 3): one row per audio file,
//! its columns named after xeno-canto's recording fields (API v3 names: `lon`, not `lng`).
//!
//! xeno-canto has no upload API and its web form is unverified, so the bundle prepares a
//! submission rather than performs one. Choices (also in docs/exports.md):
//! - one recording per 3 s chunk; its main species is the best detection in it, the others go
//!   into `also`;
//! - `type` (song, call ...) is left blank: the classifier does not tell them apart;
//! - `auto` is `yes`; `dvc` names the satellite; `lic` defaults to CC BY-NC-SA 4.0.

use chrono::NaiveDateTime;

use super::cells::unquoted;

/// The columns of `metadata.csv`.
pub const COLUMNS: [&str; 20] = [
    "file-name",
    "gen",
    "sp",
    "ssp",
    "en",
    "rec",
    "cnt",
    "loc",
    "lat",
    "lon",
    "type",
    "date",
    "time",
    "length",
    "smp",
    "auto",
    "dvc",
    "also",
    "rmk",
    "lic",
];

/// The licence the bundle offers by default.
pub const DEFAULT_LICENSE: &str = "https://creativecommons.org/licenses/by-nc-sa/4.0/";

/// A species heard in a recording.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub common_name: String,
    pub scientific_name: String,
    pub confidence: f64,
    pub start_ms: i64,
    pub end_ms: i64,
}

/// One audio file of the bundle.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// Its name in the ZIP; `None` when the hub no longer has the audio.
    pub file_name: Option<String>,
    pub satellite_name: String,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    /// When the recording starts (local).
    pub start: NaiveDateTime,
    pub duration_ms: i64,
    pub sample_rate: i64,
    /// Best first.
    pub calls: Vec<Call>,
}

/// The cells of `r` under [`COLUMNS`], with `recordist` as `rec`.
pub fn row(r: &Recording, recordist: &str, license: &str) -> Vec<String> {
    let main = r.calls.first();
    let (genus, epithet, ssp) = main.map_or_else(Default::default, |c| {
        let mut w = c.scientific_name.split_whitespace();
        let g = w.next().unwrap_or_default().to_owned();
        let sp = w.next().unwrap_or_default().to_owned();
        (g, sp, w.collect::<Vec<_>>().join(" "))
    });
    let also: Vec<&str> = r.calls.iter().skip(1).map(|c| c.scientific_name.as_str()).collect();
    let mut remarks: Vec<String> = r
        .calls
        .iter()
        .map(|c| {
            format!(
                "{} at {:.1}-{:.1} s with confidence {:.2}",
                c.common_name,
                c.start_ms as f64 / 1000.0,
                c.end_ms as f64 / 1000.0,
                c.confidence
            )
        })
        .collect();
    remarks.insert(0, "Automatic recording by a birdhub satellite; identified by a classifier:".into());
    if r.file_name.is_none() {
        remarks.push("The audio file is missing on the hub and is not in this bundle.".into());
    }
    let secs = r.duration_ms / 1000;
    let coordinate = |v: Option<f64>| v.map(|v| format!("{v:.6}")).unwrap_or_default();
    let mut cells = vec![
        r.file_name.clone().unwrap_or_default(),
        genus,
        epithet,
        ssp,
        main.map(|c| c.common_name.clone()).unwrap_or_default(),
        recordist.to_owned(),
        String::new(),
        r.satellite_name.clone(),
        coordinate(r.latitude),
        coordinate(r.longitude),
        String::new(),
        r.start.format("%Y-%m-%d").to_string(),
        r.start.format("%H:%M").to_string(),
        format!("{}:{:02}", secs / 60, secs % 60),
        r.sample_rate.to_string(),
        "yes".into(),
        format!("birdhub satellite {}", r.satellite_name),
        also.join(";"),
        remarks.join(" "),
    ];
    cells.push(license.to_owned());
    cells.iter_mut().for_each(|c| *c = unquoted(c));
    cells
}

#[cfg(test)]
mod tests {
    use super::{super::testing::at, *};

    fn call(name: &str, sci: &str, confidence: f64) -> Call {
        Call { common_name: name.into(), scientific_name: sci.into(), confidence, start_ms: 0, end_ms: 3000 }
    }

    #[test]
    fn a_recording_names_its_best_species_the_others_and_the_confidences() {
        let r = Recording {
            file_name: Some("0001-turdus-migratorius.wav".into()),
            satellite_name: "Garden".into(),
            latitude: Some(45.5),
            longitude: Some(-73.6),
            start: at("2026-05-01 05:12:40"),
            duration_ms: 3000,
            sample_rate: 48_000,
            calls: vec![
                call("American Robin", "Turdus migratorius", 0.93),
                call("House Wren", "Troglodytes aedon", 0.6),
            ],
        };
        let cells = row(&r, "Ann Birder", DEFAULT_LICENSE);
        assert_eq!(cells.len(), COLUMNS.len());
        let get = |name: &str| cells[COLUMNS.iter().position(|c| *c == name).expect("column")].as_str();
        assert_eq!((get("gen"), get("sp"), get("en")), ("Turdus", "migratorius", "American Robin"));
        assert_eq!((get("date"), get("time"), get("length")), ("2026-05-01", "05:12", "0:03"));
        assert_eq!((get("lat"), get("lon"), get("rec")), ("45.500000", "-73.600000", "Ann Birder"));
        assert_eq!(get("also"), "Troglodytes aedon");
        assert!(get("rmk").contains("confidence 0.93") && get("rmk").contains("confidence 0.60"));
        assert_eq!(cells.last().map(String::as_str), Some(DEFAULT_LICENSE));
        let missing = row(&Recording { file_name: None, ..r }, "Ann", DEFAULT_LICENSE);
        assert_eq!(missing[0], "");
        assert!(missing[18].contains("missing"));
    }
}
