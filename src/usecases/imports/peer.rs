//! What an importer reads from an old station (issue 38), whatever software wrote it: one
//! [`PeerSource`] per database, giving rows in batches after a cursor so an import streams and
//! can resume. BirdNET-Pi's reader lives in `birdnet_pi.rs`, BirdNET-Go's in `birdnet_go.rs`;
//! the engine in `mod.rs` maps names, converts times, copies clips and writes the rows.

use std::path::PathBuf;

use chrono::{DateTime, NaiveDateTime, Utc};

/// Which software wrote the station's database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PeerKind {
    BirdnetPi,
    BirdnetGo,
}

/// The schema a database has, decided from its tables' columns, never from a table name alone:
/// BirdNET-Pi's table and BirdNET-Go v2's are both called `detections` (IMPORTS.md A, B.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Schema {
    /// `detections` with `Date`, `Time`, `Sci_Name`, `Com_Name`, `File_Name` … (since 2022-02).
    BirdnetPi,
    /// BirdNET-Go's GORM `notes` table and its review, comment and lock tables.
    BirdnetGoLegacy,
    /// BirdNET-Go's normalised v2 tables (`detections` with `label_id`, `detected_at` …).
    BirdnetGoV2,
}

/// When a row says its detection happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowTime {
    /// A wall-clock time of the station's zone (BirdNET-Pi, BirdNET-Go legacy `date`/`time`);
    /// the engine converts it with the zone the user gives, or the team's.
    Local(NaiveDateTime),
    /// An absolute instant (BirdNET-Go v2 `detected_at`).
    Instant(DateTime<Utc>),
}

/// A person's verdict on a row, where the source keeps one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Correct,
    FalsePositive,
}

/// A comment a person left on a row.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerComment {
    pub text: String,
    pub at: Option<DateTime<Utc>>,
}

/// Where a row's clip is.
#[derive(Debug, Clone, PartialEq)]
pub enum ClipRef {
    /// The file exists at this path (every path component was validated: no `/`, `\`, `..`
    /// taken from the database).
    Found(PathBuf),
    /// The row names a clip that is not on disk (purged, or not copied); the text is the
    /// path as the row names it, for the report.
    Missing(String),
}

/// One detection as the old station stored it.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerRow {
    /// Stable for this row within one station across reruns (and, for BirdNET-Go, across its
    /// own legacy → v2 migration): the import's de-duplication key.
    pub key: String,
    pub time: RowTime,
    pub scientific_name: String,
    /// As stored, in whatever language the station used then; BirdNET-Go v2 stores none.
    pub common_name: Option<String>,
    /// 0–1.
    pub confidence: f64,
    /// The station's confidence threshold when it wrote the row (BirdNET-Pi `Cutoff`).
    pub threshold: Option<f64>,
    pub sensitivity: Option<f64>,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
    pub clip: Option<ClipRef>,
    pub verdict: Option<Verdict>,
    pub locked: bool,
    pub comments: Vec<PeerComment>,
    /// A person renamed the species on the station (BirdNET-Pi writes confidence 0 then).
    pub reidentified: bool,
}

/// One item of a batch: a row, or a row that could not be read (counted and listed, never fatal).
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    Row(PeerRow),
    Corrupt {
        /// Where in the source, in words: `row 1234 of the old database`.
        at: String,
        reason: String,
    },
}

/// Rows after a cursor, and the cursor to resume after them. An empty `items` means the end.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    pub items: Vec<Read>,
    pub cursor: i64,
}

/// What the source says about the station itself (BirdNET-Pi `birdnet.conf`, BirdNET-Go
/// `config.yaml` when present beside the database).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StationInfo {
    pub name: Option<String>,
    pub latitude: Option<f64>,
    pub longitude: Option<f64>,
}

/// Why a source could not be opened or read. Opening writes nothing anywhere.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The path holds no database of the kind asked for.
    #[error("{path}: no {expected} found; found {found}")]
    NotFound { path: String, expected: String, found: String },
    /// A database whose tables or columns match no schema this importer knows.
    #[error("{path}: unknown schema: expected {expected}; found {found}")]
    UnknownSchema { path: String, expected: String, found: String },
    /// The database is of the other peer (a BirdNET-Go file given to `import birdnet-pi` …).
    #[error("{path}: this is a {found} database, not a {expected} one")]
    WrongKind { path: String, expected: String, found: String },
    #[error("{path}: {message}")]
    Unreadable { path: String, message: String },
    #[error("reading the source database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("reading the source: {0}")]
    Io(#[from] std::io::Error),
}

/// An old station's database, opened read-only.
pub trait PeerSource: Send {
    fn kind(&self) -> PeerKind;
    fn schema(&self) -> Schema;
    /// One line for people: what was opened, e.g. "BirdNET-Pi database /home/pi/birds.db".
    fn describe(&self) -> String;
    fn station(&self) -> StationInfo;
    /// Rows in the source (for progress and the time left).
    fn total_rows(&mut self) -> Result<u64, SourceError>;
    /// Up to `limit` rows after `cursor` (0 = from the start), in the source's own order.
    fn next_batch(&mut self, cursor: i64, limit: usize) -> Result<Batch, SourceError>;
}
