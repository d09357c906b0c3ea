//! The reader on small real SQLite files: schema eras, reviews/comments/locks, clips, WAL.

use std::path::Path;

use rusqlite::Connection;

use super::open;
use crate::usecases::imports::peer::{ClipRef, PeerSource, Read, RowTime, Schema, SourceError, Verdict};

const LEGACY: &str = "
CREATE TABLE notes (id INTEGER PRIMARY KEY AUTOINCREMENT, source_node TEXT, date TEXT, time TEXT,
  begin_time DATETIME, end_time DATETIME, species_code TEXT, scientific_name TEXT, common_name TEXT,
  confidence REAL, latitude REAL, longitude REAL, threshold REAL, sensitivity REAL, clip_name TEXT,
  processing_time INTEGER, verified TEXT, comment TEXT);
CREATE TABLE results (id INTEGER PRIMARY KEY AUTOINCREMENT, note_id INTEGER, species TEXT, confidence REAL);
CREATE TABLE note_reviews (id INTEGER PRIMARY KEY AUTOINCREMENT, note_id INTEGER UNIQUE, verified TEXT,
  created_at DATETIME, updated_at DATETIME);
CREATE TABLE note_comments (id INTEGER PRIMARY KEY AUTOINCREMENT, note_id INTEGER, entry TEXT,
  created_at DATETIME, updated_at DATETIME);
CREATE TABLE note_locks (id INTEGER PRIMARY KEY AUTOINCREMENT, note_id INTEGER UNIQUE, locked_at DATETIME);
INSERT INTO notes (source_node, date, time, scientific_name, common_name, confidence, latitude, longitude,
  threshold, sensitivity, clip_name) VALUES
  ('garden', '2024-05-01', '06:12:03', 'Turdus merula', 'Eurasian Blackbird', 0.87, 60.17, 24.94, 0.8, 1.0,
   'clips/2024/05/turdus_merula_87p_20240501T061203Z.wav'),
  ('garden', '2024-05-01', '25:00:00', 'Parus major', 'Great Tit', 0.9, 0, 0, 0.8, 1.0, ''),
  ('garden', '2024-05-02', '07:00:00', 'Parus major', 'Great Tit', 0.91, 0, 0, 0.8, 1.0, '2024/05/gone.wav');
UPDATE notes SET verified = 'correct', comment = 'early 2025 column' WHERE id = 3;
INSERT INTO note_reviews (note_id, verified) VALUES (1, 'false_positive');
INSERT INTO note_comments (note_id, entry, created_at) VALUES (1, 'first', '2024-05-01 08:00:00+02:00'),
  (1, 'second', '2024-05-01 09:00:00+02:00');
INSERT INTO note_locks (note_id, locked_at) VALUES (1, '2024-05-01 09:00:00+02:00');";

const V2: &str = "
CREATE TABLE notes (id INTEGER PRIMARY KEY, date TEXT, time TEXT, scientific_name TEXT, confidence REAL);
CREATE TABLE results (id INTEGER PRIMARY KEY, note_id INTEGER);
CREATE TABLE labels (id INTEGER PRIMARY KEY, scientific_name TEXT, model_id INTEGER, label_type_id INTEGER);
CREATE TABLE detections (id INTEGER PRIMARY KEY, model_id INTEGER, label_id INTEGER, source_id INTEGER,
  detected_at INTEGER, begin_time INTEGER, end_time INTEGER, confidence REAL, latitude REAL, longitude REAL,
  clip_name TEXT, processing_time_ms INTEGER, unlikely INTEGER, legacy_id INTEGER);
CREATE TABLE detection_reviews (id INTEGER PRIMARY KEY, detection_id INTEGER UNIQUE, verified TEXT);
CREATE TABLE detection_comments (id INTEGER PRIMARY KEY, detection_id INTEGER, entry TEXT, created_at INTEGER);
CREATE TABLE detection_locks (id INTEGER PRIMARY KEY, detection_id INTEGER UNIQUE, locked_at INTEGER);
CREATE TABLE migration_states (id INTEGER PRIMARY KEY, state TEXT);
INSERT INTO migration_states (state) VALUES ('completed');
INSERT INTO labels (id, scientific_name) VALUES (1, 'Turdus merula');
INSERT INTO detections (id, label_id, detected_at, confidence, latitude, clip_name, legacy_id) VALUES
  (10, 1, 1714543923, 0.87, NULL, '2024/05/a.wav', 1),
  (11, 1, 1714543990, 0.5, NULL, NULL, NULL),
  (12, 9, 1714543999, 0.5, NULL, NULL, NULL);
INSERT INTO detection_reviews (detection_id, verified) VALUES (11, 'correct');
INSERT INTO detection_comments (detection_id, entry, created_at) VALUES (11, 'v2 note', 1714550000);
INSERT INTO detection_locks (detection_id) VALUES (11);";

fn make(path: &Path, sql: &str) {
    let conn = Connection::open(path).expect("create fixture");
    conn.execute_batch(sql).expect("fixture schema");
}

fn rows(src: &mut dyn PeerSource) -> Vec<Read> {
    let mut out = Vec::new();
    let mut cursor = 0;
    loop {
        let batch = src.next_batch(cursor, 2).expect("batch");
        if batch.items.is_empty() {
            return out;
        }
        cursor = batch.cursor;
        out.extend(batch.items);
    }
}

#[test]
fn a_legacy_data_dir_gives_rows_reviews_comments_locks_and_clips() {
    let dir = tempfile::tempdir().expect("tmp");
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("clips/2024/05")).expect("clips dir");
    std::fs::write(data.join("clips/2024/05/turdus_merula_87p_20240501T061203Z.wav"), b"RIFF").expect("clip");
    make(&data.join("birdnet.db"), LEGACY);
    let mut src = open(dir.path(), &dir.path().join("scratch")).expect("open");
    assert_eq!(src.schema(), Schema::BirdnetGoLegacy);
    assert_eq!(src.total_rows().expect("total"), 3);
    assert_eq!(src.station().name.as_deref(), Some("garden"));
    let rows = rows(src.as_mut());
    assert_eq!(rows.len(), 3);
    let Read::Row(first) = &rows[0] else { panic!("row 1 corrupt: {:?}", rows[0]) };
    assert_eq!(first.key, "go:1");
    assert_eq!(
        first.time,
        RowTime::Local(chrono::NaiveDate::from_ymd_opt(2024, 5, 1).and_then(|d| d.and_hms_opt(6, 12, 3)).expect("t"))
    );
    assert_eq!(first.common_name.as_deref(), Some("Eurasian Blackbird"));
    assert_eq!((first.threshold, first.sensitivity, first.latitude), (Some(0.8), Some(1.0), Some(60.17)));
    assert_eq!(first.verdict, Some(Verdict::FalsePositive));
    assert!(first.locked);
    assert_eq!(first.comments.iter().map(|c| c.text.as_str()).collect::<Vec<_>>(), ["first", "second"]);
    assert!(
        matches!(&first.clip, Some(ClipRef::Found(p)) if p.ends_with("clips/2024/05/turdus_merula_87p_20240501T061203Z.wav"))
    );
    assert!(matches!(&rows[1], Read::Corrupt { at, .. } if at == "row 2 of the old database"));
    let Read::Row(third) = &rows[2] else { panic!("row 3 corrupt") };
    assert_eq!(third.latitude, None);
    assert_eq!(third.verdict, Some(Verdict::Correct), "the early-2025 verified column counts");
    assert_eq!(third.comments[0].text, "early 2025 column");
    assert_eq!(third.clip, Some(ClipRef::Missing("2024/05/gone.wav".into())));
}

#[test]
fn a_v2_file_keys_migrated_rows_by_their_legacy_id() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = dir.path().join("birdnet.db");
    make(&db, V2);
    let mut src = open(&db, dir.path()).expect("open");
    assert_eq!(src.schema(), Schema::BirdnetGoV2);
    let rows = rows(src.as_mut());
    let Read::Row(a) = &rows[0] else { panic!("corrupt") };
    assert_eq!((a.key.as_str(), a.common_name.as_deref(), a.threshold), ("go:1", None, None));
    assert_eq!(a.time, RowTime::Instant(chrono::DateTime::from_timestamp(1_714_543_923, 0).expect("t")));
    assert_eq!(a.clip, Some(ClipRef::Missing("2024/05/a.wav".into())));
    let Read::Row(b) = &rows[1] else { panic!("corrupt") };
    assert_eq!((b.key.as_str(), b.verdict, b.locked), ("go:v2:11", Some(Verdict::Correct), true));
    assert_eq!(b.comments[0].at, chrono::DateTime::from_timestamp(1_714_550_000, 0));
    assert!(matches!(&rows[2], Read::Corrupt { reason, .. } if reason.contains("label 9")));
}

#[test]
fn a_wal_database_is_read_from_a_copy_with_its_uncheckpointed_rows() {
    let dir = tempfile::tempdir().expect("tmp");
    let live = dir.path().join("live");
    std::fs::create_dir_all(&live).expect("dir");
    let db = live.join("birdnet.db");
    let writer = Connection::open(&db).expect("writer");
    writer.pragma_update(None, "journal_mode", "wal").expect("wal");
    writer.pragma_update(None, "wal_autocheckpoint", 0).expect("no checkpoints");
    writer.execute_batch(LEGACY).expect("rows");
    assert!(live.join("birdnet.db-wal").is_file());
    let before: Vec<_> = std::fs::read_dir(&live).expect("ls").filter_map(Result::ok).map(|e| e.file_name()).collect();
    let main_bytes = std::fs::read(&db).expect("db bytes");
    let scratch = dir.path().join("scratch");
    let mut src = open(&db, &scratch).expect("open");
    assert_eq!(src.total_rows().expect("total"), 3, "rows still only in the -wal are read");
    assert_eq!(std::fs::read(&db).expect("db bytes"), main_bytes, "the source is not written");
    let after: Vec<_> = std::fs::read_dir(&live).expect("ls").filter_map(Result::ok).map(|e| e.file_name()).collect();
    assert_eq!(before.len(), after.len(), "no file appears beside the source");
    drop(src);
    assert_eq!(std::fs::read_dir(&scratch).expect("scratch").count(), 0, "the copy is removed");
    drop(writer);
}

#[test]
fn wrong_kind_unknown_schema_and_empty_dirs_are_named() {
    let dir = tempfile::tempdir().expect("tmp");
    let pi = dir.path().join("birds.db");
    make(
        &pi,
        "CREATE TABLE detections (Date DATE, Time TIME, Sci_Name VARCHAR(100) NOT NULL, Com_Name VARCHAR(100) NOT NULL, Confidence FLOAT, File_Name VARCHAR(100) NOT NULL);",
    );
    assert!(matches!(open(&pi, dir.path()), Err(SourceError::WrongKind { found, .. }) if found == "BirdNET-Pi"));
    let odd = dir.path().join("odd.db");
    make(&odd, "CREATE TABLE sightings (id INTEGER, bird TEXT);");
    let Err(SourceError::UnknownSchema { found, expected, .. }) = open(&odd, dir.path()) else { panic!("not refused") };
    assert_eq!(found, "sightings(id, bird)");
    assert!(expected.contains("notes(") && expected.contains("detections("));
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(empty.join("logs")).expect("dir");
    std::fs::write(empty.join("readme.txt"), "x").expect("file");
    let Err(SourceError::NotFound { found, .. }) = open(&empty, dir.path()) else { panic!("not refused") };
    assert_eq!(found, "logs/, readme.txt");
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not sqlite at all, just some text that is long enough").expect("file");
    assert!(matches!(open(&text, dir.path()), Err(SourceError::Unreadable { .. })));
}

#[test]
fn a_partial_v2_sidecar_yields_to_the_legacy_file() {
    let dir = tempfile::tempdir().expect("tmp");
    make(&dir.path().join("birdnet.db"), LEGACY);
    make(&dir.path().join("birdnet_v2.db"), &V2.replace("'completed'", "'dual_write'"));
    let src = open(dir.path(), &dir.path().join("scratch")).expect("open");
    assert_eq!(src.schema(), Schema::BirdnetGoLegacy);
    make(&dir.path().join("birdnet_v2.db"), "UPDATE migration_states SET state = 'completed';");
    let src = open(dir.path(), &dir.path().join("scratch")).expect("open");
    assert_eq!(src.schema(), Schema::BirdnetGoV2);
}
