//! BirdNET-Go stations as test fixtures (issue 38): databases with the schemas IMPORTS.md B.3
//! (legacy GORM tables) and B.4 (v2) documents, built with rusqlite, and WAV mono 48 kHz clips
//! cut with ffmpeg from the project's real recording, laid out as BirdNET-Go writes them
//! (`YYYY/MM/<name>.wav` under `clips/`, and one old-style `clips/2024/05/...` name).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use rusqlite::{Connection, params};

/// The legacy tables as GORM creates them on SQLite (IMPORTS.md B.3). `extra` adds the columns
/// of an era: `input_file` (early 2024) or `verified`/`comment` (builds of late January 2025).
pub fn legacy_schema(extra: &str) -> String {
    format!(
        "CREATE TABLE `notes` (`id` integer PRIMARY KEY AUTOINCREMENT,`source_node` text,`date` text,`time` text,
           `begin_time` datetime,`end_time` datetime,`species_code` text,`scientific_name` text,`common_name` text,
           `confidence` real,`latitude` real,`longitude` real,`threshold` real,`sensitivity` real,`clip_name` text,
           `processing_time` integer,`unlikely` numeric DEFAULT false,`raw_scientific_name` text{extra});
         CREATE INDEX `idx_notes_date` ON `notes`(`date`);
         CREATE INDEX `idx_notes_scientific_name` ON `notes`(`scientific_name`);
         CREATE TABLE `results` (`id` integer PRIMARY KEY AUTOINCREMENT,`note_id` integer,`species` text,
           `confidence` real,CONSTRAINT `fk_notes_results` FOREIGN KEY (`note_id`) REFERENCES `notes`(`id`) ON DELETE CASCADE);
         CREATE TABLE `note_reviews` (`id` integer PRIMARY KEY AUTOINCREMENT,`note_id` integer NOT NULL,
           `verified` varchar(20),`created_at` datetime,`updated_at` datetime,
           CONSTRAINT `fk_notes_review` FOREIGN KEY (`note_id`) REFERENCES `notes`(`id`) ON DELETE CASCADE);
         CREATE UNIQUE INDEX `idx_note_reviews_note_id` ON `note_reviews`(`note_id`);
         CREATE TABLE `note_comments` (`id` integer PRIMARY KEY AUTOINCREMENT,`note_id` integer NOT NULL,
           `entry` text,`created_at` datetime,`updated_at` datetime,
           CONSTRAINT `fk_notes_comments` FOREIGN KEY (`note_id`) REFERENCES `notes`(`id`) ON DELETE CASCADE);
         CREATE TABLE `note_locks` (`id` integer PRIMARY KEY AUTOINCREMENT,`note_id` integer NOT NULL,
           `locked_at` datetime NOT NULL,
           CONSTRAINT `fk_notes_lock` FOREIGN KEY (`note_id`) REFERENCES `notes`(`id`) ON DELETE CASCADE);
         CREATE UNIQUE INDEX `idx_note_locks_note_id` ON `note_locks`(`note_id`);
         CREATE TABLE `daily_events` (`id` integer PRIMARY KEY AUTOINCREMENT,`date` text,`sunrise` integer,
           `sunset` integer,`country` text,`city_name` text);"
    )
}

/// The v2 tables (IMPORTS.md B.4), with the legacy tables left empty beside them as a
/// migrated file keeps them.
pub fn v2_schema() -> String {
    format!(
        "{}
         CREATE TABLE `label_types` (`id` integer PRIMARY KEY AUTOINCREMENT,`name` text NOT NULL UNIQUE);
         CREATE TABLE `taxonomic_classes` (`id` integer PRIMARY KEY AUTOINCREMENT,`name` text NOT NULL UNIQUE);
         CREATE TABLE `ai_models` (`id` integer PRIMARY KEY AUTOINCREMENT,`name` text NOT NULL,`version` text NOT NULL,
           `variant` text NOT NULL DEFAULT 'default',`model_type` text NOT NULL DEFAULT 'bird');
         CREATE TABLE `labels` (`id` integer PRIMARY KEY AUTOINCREMENT,`scientific_name` text NOT NULL,
           `model_id` integer NOT NULL,`label_type_id` integer NOT NULL,`taxonomic_class_id` integer,
           CONSTRAINT `fk_labels_model` FOREIGN KEY (`model_id`) REFERENCES `ai_models`(`id`));
         CREATE UNIQUE INDEX `idx_labels_name_model` ON `labels`(`scientific_name`,`model_id`);
         CREATE TABLE `audio_sources` (`id` integer PRIMARY KEY AUTOINCREMENT,`source_uri` text NOT NULL,
           `node_name` text NOT NULL,`source_type` text NOT NULL DEFAULT 'unknown',`display_name` text);
         CREATE TABLE `detections` (`id` integer PRIMARY KEY AUTOINCREMENT,`model_id` integer NOT NULL,
           `label_id` integer NOT NULL,`source_id` integer,`detected_at` integer NOT NULL,`begin_time` integer,
           `end_time` integer,`confidence` real NOT NULL,`latitude` real,`longitude` real,`clip_name` text,
           `processing_time_ms` integer,`unlikely` numeric DEFAULT false,`legacy_id` integer,
           CONSTRAINT `fk_detections_label` FOREIGN KEY (`label_id`) REFERENCES `labels`(`id`));
         CREATE INDEX `idx_detections_detected_at` ON `detections`(`detected_at`);
         CREATE UNIQUE INDEX `idx_detections_legacy_id` ON `detections`(`legacy_id`);
         CREATE TABLE `detection_predictions` (`id` integer PRIMARY KEY AUTOINCREMENT,`detection_id` integer NOT NULL,
           `label_id` integer NOT NULL,`confidence` real NOT NULL,`rank` integer NOT NULL);
         CREATE TABLE `detection_reviews` (`id` integer PRIMARY KEY AUTOINCREMENT,`detection_id` integer NOT NULL UNIQUE,
           `verified` text NOT NULL,`created_at` integer,`updated_at` integer);
         CREATE TABLE `detection_comments` (`id` integer PRIMARY KEY AUTOINCREMENT,`detection_id` integer NOT NULL,
           `entry` text NOT NULL,`created_at` integer,`updated_at` integer);
         CREATE TABLE `detection_locks` (`id` integer PRIMARY KEY AUTOINCREMENT,`detection_id` integer NOT NULL UNIQUE,
           `locked_at` integer NOT NULL);
         CREATE TABLE `migration_states` (`id` integer PRIMARY KEY,`state` text NOT NULL,`phase` text,
           `total_records` integer,`migrated_records` integer,`started_at` integer,`completed_at` integer);
         INSERT INTO label_types (name) VALUES ('species'), ('noise'), ('environment'), ('device'), ('human'),
           ('animal'), ('music'), ('mechanical');
         INSERT INTO taxonomic_classes (name) VALUES ('Aves'), ('Chiroptera');
         INSERT INTO ai_models (name, version) VALUES ('BirdNET', '2.4');
         INSERT INTO audio_sources (source_uri, node_name, source_type, display_name)
           VALUES ('rtsp://cam/garden', 'garden-go', 'rtsp', 'Garden camera');",
        legacy_schema("")
    )
}

/// A legacy row.
#[derive(Debug, Clone)]
pub struct Note {
    pub date: &'static str,
    pub time: &'static str,
    pub scientific: &'static str,
    pub common: &'static str,
    pub confidence: f64,
    pub clip: &'static str,
}

pub fn note(
    date: &'static str,
    time: &'static str,
    scientific: &'static str,
    common: &'static str,
    confidence: f64,
    clip: &'static str,
) -> Note {
    Note { date, time, scientific, common, confidence, clip }
}

/// Inserts notes as BirdNET-Go writes them (threshold 0.8, sensitivity 1.0, the station's
/// position, begin/end time as GORM datetimes with the writer's offset); returns their ids.
pub fn insert_notes(conn: &Connection, notes: &[Note]) -> Vec<i64> {
    let mut stmt = conn
        .prepare(
            "INSERT INTO notes (source_node, date, time, begin_time, end_time, species_code, scientific_name,
               common_name, confidence, latitude, longitude, threshold, sensitivity, clip_name, processing_time)
             VALUES ('garden-go', ?1, ?2, ?3, ?3, '', ?4, ?5, ?6, 40.7128, -74.006, 0.8, 1.0, ?7, 41000000)",
        )
        .expect("prepare");
    notes
        .iter()
        .map(|n| {
            let begin = format!("{} {}-04:00", n.date, n.time);
            stmt.execute(params![n.date, n.time, begin, n.scientific, n.common, n.confidence, n.clip]).expect("note");
            conn.last_insert_rowid()
        })
        .collect()
}

/// A WAV mono 48 kHz clip of `secs` seconds from `offset` of the real recording, at `path`.
pub fn clip(path: &Path, offset: f64, secs: f64) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("clip dir");
    let status = Command::new("ffmpeg")
        .args(["-loglevel", "error", "-y", "-ss", &offset.to_string(), "-t", &secs.to_string(), "-i"])
        .arg(super::satellite::fixture())
        .args(["-ac", "1", "-ar", "48000", "-c:a", "pcm_s16le"])
        .arg(path)
        .status()
        .expect("ffmpeg is installed");
    assert!(status.success(), "ffmpeg made {}", path.display());
}

/// The clips the legacy and v2 fixtures name.
pub const CLIP_OLD_STYLE: &str = "clips/2024/05/turdus_merula_87p_20240501T061203Z.wav";
pub const CLIP_NEW_STYLE: &str = "2026/05/parus_major_91p_20260501T070000Z.wav";
pub const CLIP_GONE: &str = "2026/05/erithacus_rubecula_75p_20260502T053000Z.wav";
pub const CLIP_V2_ONLY: &str = "2026/06/sturnus_vulgaris_80p_20260601T050000Z.wav";

/// A BirdNET-Go data directory (`birdnet.db` + `clips/`) with the legacy schema (`extra` as in
/// [`legacy_schema`]):
/// 1. Turdus merula 2024-05-01 06:12:03, old-style clip name, reviewed correct, two comments;
/// 2. Parus major 2026-05-01 07:00:00, current clip name, reviewed false positive;
/// 3. Erithacus rubecula 2026-05-02 05:30:00, its clip purged (missing);
/// 4. a corrupt row (month 13);
/// 5. "Avis inventa", a name no model knows;
/// 6. Fringilla coelebs 2026-05-03 06:00:00, no clip, locked.
pub fn legacy_station(dir: &Path, extra: &str) -> PathBuf {
    std::fs::create_dir_all(dir).expect("station dir");
    let db = dir.join("birdnet.db");
    let conn = Connection::open(&db).expect("create birdnet.db");
    conn.execute_batch(&legacy_schema(extra)).expect("schema");
    insert_notes(
        &conn,
        &[
            note("2024-05-01", "06:12:03", "Turdus merula", "Eurasian Blackbird", 0.87, CLIP_OLD_STYLE),
            note("2026-05-01", "07:00:00", "Parus major", "Great Tit", 0.91, CLIP_NEW_STYLE),
            note("2026-05-02", "05:30:00", "Erithacus rubecula", "European Robin", 0.75, CLIP_GONE),
            note("2026-13-02", "05:31:00", "Erithacus rubecula", "European Robin", 0.8, ""),
            note("2026-05-02", "05:40:00", "Avis inventa", "Made-up Bird", 0.9, ""),
            note("2026-05-03", "06:00:00", "Fringilla coelebs", "Common Chaffinch", 0.82, ""),
        ],
    );
    conn.execute_batch(
        "INSERT INTO results (note_id, species, confidence) VALUES (1, 'Turdus philomelos_Song Thrush', 0.1);
         INSERT INTO note_reviews (note_id, verified, created_at, updated_at) VALUES
           (1, 'correct', '2024-05-01 09:00:00-04:00', '2024-05-01 09:00:00-04:00'),
           (2, 'false_positive', '2026-05-01 09:00:00-04:00', '2026-05-01 09:00:00-04:00');
         INSERT INTO note_comments (note_id, entry, created_at, updated_at) VALUES
           (1, 'Singing from the chimney', '2024-05-01 09:01:00-04:00', '2024-05-01 09:01:00-04:00'),
           (1, 'Same bird as yesterday', '2024-05-01 09:02:00-04:00', '2024-05-01 09:02:00-04:00');
         INSERT INTO note_locks (note_id, locked_at) VALUES (6, '2026-05-03 07:00:00-04:00');",
    )
    .expect("reviews");
    clip(&dir.join(CLIP_OLD_STYLE), 0.0, 3.0);
    clip(&dir.join("clips").join(CLIP_NEW_STYLE), 3.0, 3.0);
    db
}

/// The same station after BirdNET-Go's v2 migration (IMPORTS.md B.4): rows 1, 2, 3, 5, 6 of
/// [`legacy_station`] carried over with their `legacy_id` (its corrupt row is not), plus one row
/// written since by v2 itself (Sturnus vulgaris at 2026-06-01T09:00:00Z, reviewed correct,
/// locked, commented), and `migration_states` `completed`. `detected_at` is absolute: the
/// legacy rows' wall clock read in America/New_York.
pub fn v2_station(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).expect("station dir");
    let db = dir.join("birdnet.db");
    let conn = Connection::open(&db).expect("create birdnet.db");
    conn.execute_batch(&v2_schema()).expect("schema");
    conn.execute_batch(
        "INSERT INTO labels (id, scientific_name, model_id, label_type_id, taxonomic_class_id) VALUES
           (1, 'Turdus merula', 1, 1, 1), (2, 'Parus major', 1, 1, 1), (3, 'Erithacus rubecula', 1, 1, 1),
           (4, 'Avis inventa', 1, 1, 1), (5, 'Fringilla coelebs', 1, 1, 1), (6, 'Sturnus vulgaris', 1, 1, 1);
         INSERT INTO detections (model_id, label_id, source_id, detected_at, begin_time, end_time, confidence,
             latitude, longitude, clip_name, processing_time_ms, legacy_id) VALUES
           (1, 1, NULL, 1714558323, 1714558320000, 1714558332000, 0.87, 40.7128, -74.006,
             'clips/2024/05/turdus_merula_87p_20240501T061203Z.wav', 41, 1),
           (1, 2, NULL, 1777633200, NULL, NULL, 0.91, 40.7128, -74.006,
             '2026/05/parus_major_91p_20260501T070000Z.wav', 41, 2),
           (1, 3, NULL, 1777714200, NULL, NULL, 0.75, NULL, NULL,
             '2026/05/erithacus_rubecula_75p_20260502T053000Z.wav', 41, 3),
           (1, 4, NULL, 1777714800, NULL, NULL, 0.9, NULL, NULL, NULL, 41, 5),
           (1, 5, NULL, 1777802400, NULL, NULL, 0.82, NULL, NULL, NULL, 41, 6),
           (1, 6, 1, 1780304400, 1780304397000, 1780304409000, 0.8, 40.7128, -74.006,
             '2026/06/sturnus_vulgaris_80p_20260601T050000Z.wav', 38, NULL);
         INSERT INTO detection_reviews (detection_id, verified, created_at) VALUES
           (1, 'correct', 1714568400), (2, 'false_positive', 1777640400), (6, 'correct', 1780311600);
         INSERT INTO detection_comments (detection_id, entry, created_at) VALUES
           (1, 'Singing from the chimney', 1714568460), (1, 'Same bird as yesterday', 1714568520),
           (6, 'First starling this year', 1780311660);
         INSERT INTO detection_locks (detection_id, locked_at) VALUES (5, 1777806000), (6, 1780311600);
         INSERT INTO migration_states (id, state, phase, total_records, migrated_records)
           VALUES (1, 'completed', 'done', 5, 5);",
    )
    .expect("v2 rows");
    clip(&dir.join(CLIP_OLD_STYLE), 0.0, 3.0);
    clip(&dir.join("clips").join(CLIP_NEW_STYLE), 3.0, 3.0);
    clip(&dir.join("clips").join(CLIP_V2_ONLY), 6.0, 3.0);
    db
}

/// A tar of a data directory, as a person would make one to upload it (`tar -cf x.tar data`).
pub fn tar_dir(dir: &Path, tar: &Path) {
    let status = Command::new("tar")
        .arg("-cf")
        .arg(tar)
        .arg("-C")
        .arg(dir.parent().expect("parent"))
        .arg(dir.file_name().expect("name"))
        .status()
        .expect("tar");
    assert!(status.success(), "tar of {}", dir.display());
}

/// A BirdNET-Go data directory whose `birdnet.db` (legacy schema) holds `rows` notes of three
/// species a minute apart and no clips: an import long enough to watch (or kill) mid-way. With
/// `wal`, the file is left in WAL mode (its header says so), as a running BirdNET-Go leaves it.
pub fn many_notes(dir: &Path, rows: usize, wal: bool) -> PathBuf {
    std::fs::create_dir_all(dir).expect("station dir");
    let db = dir.join("birdnet.db");
    let mut conn = Connection::open(&db).expect("create birdnet.db");
    if wal {
        conn.pragma_update(None, "journal_mode", "WAL").expect("wal");
    }
    conn.execute_batch(&legacy_schema("")).expect("schema");
    let species = [("Turdus merula", "Eurasian Blackbird"), ("Parus major", "Great Tit")];
    let tx = conn.transaction().expect("tx");
    let start = chrono::NaiveDate::from_ymd_opt(2025, 3, 1).and_then(|d| d.and_hms_opt(0, 0, 0)).expect("start");
    for i in 0..rows {
        let t = start + chrono::Duration::minutes(i as i64);
        let (sci, com) = species[i % species.len()];
        tx.execute(
            "INSERT INTO notes (source_node, date, time, scientific_name, common_name, confidence, threshold, sensitivity, clip_name)
             VALUES ('many', ?1, ?2, ?3, ?4, 0.8, 0.8, 1.0, '')",
            rusqlite::params![t.format("%Y-%m-%d").to_string(), t.format("%H:%M:%S").to_string(), sci, com],
        )
        .expect("row");
    }
    tx.commit().expect("commit");
    db
}
