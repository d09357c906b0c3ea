//! Old stations to import (issue 38), built honestly from the schemas IMPORTS.md documents (no
//! peer code): BirdNET-Pi's `birds.db` of each era, its `birdnet.conf`, its clips (MP3 48 kHz
//! stereo made with ffmpeg from the project's real recording) at `By_Date/<Date>/<ComDir>/<File>`,
//! and its backup tar. BirdNET-Go's builders can join this file.

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

use rusqlite::{Connection, params};

/// Which BirdNET-Pi wrote the database (IMPORTS.md A.8, A.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PiEra {
    /// mcguirepr89 (and Nachtzuster before 2024-01-02): 48-week `Week`, apostrophes stripped
    /// from `Com_Name`, every row of a recording at its start second; indexes on Com_Name and
    /// (Date, Time).
    Mcguirepr89,
    /// Nachtzuster 2024-01-02 … 2024-11-09: ISO week, apostrophes kept, recording start.
    Nachtzuster2024,
    /// Nachtzuster since 2024-11-10: detection time, RTSP stream id in the file names; a
    /// Sci_Name index too.
    NachtzusterLate,
}

/// One row of BirdNET-Pi's `detections` table, as the station wrote it.
#[derive(Debug, Clone)]
pub struct PiRow {
    pub date: String,
    pub time: String,
    pub sci: String,
    pub com: String,
    pub confidence: f64,
    pub file_name: String,
}

impl PiRow {
    /// A row whose file name follows A.4 for its era (`rtsp`: the stream number, if any).
    pub fn new(date: &str, time: &str, sci: &str, com: &str, confidence: f64, rtsp: Option<u8>) -> Self {
        let stream = rtsp.map(|n| format!("RTSP_{n}-")).unwrap_or_default();
        let file_name =
            format!("{}-{}-{date}-birdnet-{stream}{time}.mp3", com_dir(com), (confidence * 100.0).round() as i64);
        Self { date: date.into(), time: time.into(), sci: sci.into(), com: com.into(), confidence, file_name }
    }

    /// Where BirdNET-Pi keeps the row's clip, under the `Extracted` directory.
    pub fn clip_path(&self) -> PathBuf {
        Path::new("By_Date").join(&self.date).join(com_dir(&self.com)).join(&self.file_name)
    }
}

/// BirdNET-Pi's directory name for a species: apostrophes removed, spaces to `_` (A.1).
pub fn com_dir(common: &str) -> String {
    common.replace('\'', "").replace(' ', "_")
}

/// The ISO week (Nachtzuster ≥ 2024) or BirdNET's 48-week index (older) of a date.
fn week(date: &str, era: PiEra) -> i64 {
    let d = chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").unwrap_or_default();
    use chrono::Datelike;
    match era {
        PiEra::Mcguirepr89 => i64::from((d.month() - 1) * 4 + ((d.day() - 1) / 7).min(3) + 1),
        _ => i64::from(d.iso_week().week()),
    }
}

/// Writes `birds.db` with the exact schema of IMPORTS.md A.2 (scripts/createdb.sh) and the
/// era's indexes, and the rows (Lat/Lon, Cutoff, Sens, Overlap as the station was configured).
pub fn pi_database(path: &Path, era: PiEra, rows: &[PiRow], place: (f64, f64)) {
    let c = Connection::open(path).expect("create birds.db");
    c.execute_batch(
        "CREATE TABLE IF NOT EXISTS detections (
          Date DATE,
          Time TIME,
          Sci_Name VARCHAR(100) NOT NULL,
          Com_Name VARCHAR(100) NOT NULL,
          Confidence FLOAT,
          Lat FLOAT,
          Lon FLOAT,
          Cutoff FLOAT,
          Week INT,
          Sens FLOAT,
          Overlap FLOAT,
          File_Name VARCHAR(100) NOT NULL);
        CREATE INDEX IF NOT EXISTS detections_Com_Name ON detections (Com_Name);
        CREATE INDEX IF NOT EXISTS detections_Date_Time ON detections (Date DESC, Time DESC);",
    )
    .expect("schema");
    if era == PiEra::NachtzusterLate {
        c.execute_batch("CREATE INDEX IF NOT EXISTS detections_Sci_Name ON detections (Sci_Name);").expect("index");
    }
    let tx = c.unchecked_transaction().expect("tx");
    {
        let mut insert = tx
            .prepare("INSERT INTO detections VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0.7, ?8, 1.25, 0.0, ?9)")
            .expect("prepare");
        for r in rows {
            insert
                .execute(params![
                    r.date,
                    r.time,
                    r.sci,
                    r.com,
                    r.confidence,
                    place.0,
                    place.1,
                    week(&r.date, era),
                    r.file_name
                ])
                .expect("row");
        }
    }
    tx.commit().expect("commit");
}

/// A corrupt row, written as a broken station (or a hand edit) leaves one.
pub fn pi_corrupt_row(path: &Path, date: &str) {
    let c = Connection::open(path).expect("open");
    c.execute(
        "INSERT INTO detections VALUES (?1, '06:00:00', 'Turdus merula', 'Amsel', 0.8, 52.5, 13.4, 0.7, 1, 1.25, 0.0, 'x.mp3')",
        [date],
    )
    .expect("corrupt row");
}

/// `birdnet.conf` as the installer writes it (shell `KEY=value`, some values quoted).
pub fn birdnet_conf(path: &Path, site: &str, place: (f64, f64)) {
    let text = format!(
        "SITE_NAME=\"{site}\"\nLATITUDE={}\nLONGITUDE={}\nCONFIDENCE=0.7\nSENSITIVITY=1.25\nOVERLAP=0.0\n\
         AUDIOFMT=mp3\nDATABASE_LANG=en\nBIRDWEATHER_ID=\n",
        place.0, place.1
    );
    std::fs::write(path, text).expect("birdnet.conf");
}

/// A 6 s MP3 clip, 48 kHz stereo, cut from the project's real recording (made once per test run).
pub fn mp3_clip() -> &'static [u8] {
    static CLIP: OnceLock<Vec<u8>> = OnceLock::new();
    CLIP.get_or_init(|| {
        let dir = tempfile::tempdir().expect("dir");
        let out = dir.path().join("clip.mp3");
        let status = Command::new("ffmpeg")
            .args(["-y", "-loglevel", "error", "-i"])
            .arg(super::satellite::fixture())
            .args(["-t", "6", "-ac", "2", "-ar", "48000", "-c:a", "libmp3lame", "-b:a", "128k"])
            .arg(&out)
            .status()
            .expect("ffmpeg (install it)");
        assert!(status.success(), "ffmpeg made the MP3");
        std::fs::read(&out).expect("mp3")
    })
}

/// Writes the clip of each row under `extracted` (its own bytes for each file).
pub fn pi_clips(extracted: &Path, rows: &[&PiRow]) {
    for r in rows {
        let p = extracted.join(r.clip_path());
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, mp3_clip()).expect("clip");
    }
}

/// Bytes that are no audio at all, where a clip should be (a truncated copy, a disk error).
pub fn garbage_clip(extracted: &Path, row: &PiRow) {
    let p = extracted.join(row.clip_path());
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(&p, b"this is not audio, only text where a clip should be\n".repeat(40)).expect("garbage");
}

/// Nachtzuster's backup: an uncompressed tar whose top-level entries are `birdnet.conf`,
/// `birds.db` and `By_Date/` (IMPORTS.md A.1), made with the system's tar.
pub fn pi_backup(station: &Path, out: &Path) {
    let status = Command::new("tar")
        .arg("-cf")
        .arg(out)
        .arg("-C")
        .arg(station)
        .args(["birdnet.conf", "birds.db", "By_Date"])
        .status()
        .expect("tar");
    assert!(status.success(), "tar made the backup");
}
