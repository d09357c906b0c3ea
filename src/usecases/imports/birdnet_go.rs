//! BirdNET-Go's reader (IMPORTS.md B): finds `birdnet.db` in a data directory (or takes the file
//! given), reads a consistent snapshot without ever writing the source, decides the schema from
//! its tables (`birdnet_go/schema.rs`) and gives legacy (`legacy.rs`) or v2 (`v2.rs`) rows with
//! their clips (`clips.rs`), reviews, comments and locks as [`PeerSource`] batches.

mod clips;
mod legacy;
mod locate;
mod schema;
mod v2;
mod values;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use rusqlite::types::Value;

use self::clips::ClipRoot;
use self::locate::Snapshot;
use self::schema::{Detected, Tables};
use super::peer::{Batch, PeerKind, PeerSource, Schema, SourceError, StationInfo, Verdict};
use super::{boundary::SourceRoot, foreign_db};

/// Opens a BirdNET-Go station: `path` is its data directory (with `birdnet.db` at the top or in
/// `data/`, clips in `clips/` or where a nearby `config.yaml` says) or the database file itself
/// (a `-wal` beside it is read too). A WAL database is copied into `scratch` and read there;
/// the source is opened read-only otherwise. Nothing is written beside the source.
pub fn open(path: &Path, scratch: &Path) -> Result<Box<dyn PeerSource>, SourceError> {
    let found = locate::find(path)?;
    // What was handed over: the directory given (an unpacked tar is one), or the file's.
    let dir = if path.is_dir() { Some(path) } else { path.parent() };
    let within = SourceRoot::new(dir.filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new(".")));
    let within = within.as_ref();
    // During a v2 migration the `_v2` sidecar may be partial: it is read only once completed.
    if let Some(sidecar) = &found.sidecar {
        let snapshot = Snapshot::take(sidecar, scratch)?;
        let tables = Tables::read(&snapshot.conn)?;
        if schema::detect(&snapshot.conn, &tables)? == Detected::V2 {
            foreign_db::refuse_generated(&snapshot.conn, &sidecar.display().to_string(), READ)?;
            return Ok(Box::new(GoSource::new(
                sidecar.clone(),
                snapshot,
                tables,
                Schema::BirdnetGoV2,
                (&found.base, within),
            )?));
        }
    }
    let Some(db) = found.db.clone().or_else(|| found.sidecar.clone()) else {
        return Err(SourceError::NotFound {
            path: path.display().to_string(),
            expected: "BirdNET-Go database birdnet.db".into(),
            found: found.listing.clone(),
        });
    };
    let snapshot = Snapshot::take(&db, scratch)?;
    let tables = Tables::read(&snapshot.conn)?;
    let shown = db.display().to_string();
    let schema = match schema::detect(&snapshot.conn, &tables)? {
        Detected::Legacy => Schema::BirdnetGoLegacy,
        Detected::V2 => Schema::BirdnetGoV2,
        Detected::BirdnetPi => {
            return Err(SourceError::WrongKind {
                path: shown,
                expected: "BirdNET-Go".into(),
                found: "BirdNET-Pi".into(),
            });
        }
        Detected::InProgress(state) => {
            return Err(SourceError::UnknownSchema {
                path: shown,
                expected: "a completed v2 migration, or the legacy birdnet.db that is authoritative during one".into(),
                found: format!("a v2 migration in progress (state {state}); import the legacy birdnet.db instead"),
            });
        }
        Detected::Unknown => {
            return Err(SourceError::UnknownSchema {
                path: shown,
                expected: schema::EXPECTED.into(),
                found: tables.describe(),
            });
        }
    };
    foreign_db::refuse_generated(&snapshot.conn, &shown, READ)?;
    Ok(Box::new(GoSource::new(db, snapshot, tables, schema, (&found.base, within))?))
}

/// Every table a reader selects from (refused when one has generated or hidden columns).
const READ: &[&str] = &[
    "notes",
    "note_reviews",
    "note_comments",
    "note_locks",
    "detections",
    "labels",
    "detection_reviews",
    "detection_comments",
    "detection_locks",
    "audio_sources",
    "migration_states",
    "migration_state",
];

struct GoSource {
    /// The database as the user named it (for messages), not the snapshot copy.
    db: PathBuf,
    schema: Schema,
    tables: Tables,
    clips: ClipRoot,
    station: StationInfo,
    /// The open connection and, for a WAL file, the scratch copy it reads (removed on drop).
    snapshot: Snapshot,
}

impl GoSource {
    fn new(
        db: PathBuf,
        snapshot: Snapshot,
        tables: Tables,
        schema: Schema,
        (base, within): (&Path, Option<&SourceRoot>),
    ) -> Result<Self, SourceError> {
        let config = locate::config(base, within);
        let clips = ClipRoot::find(base, config.get("realtime.audio.export.path").cloned(), within);
        let mut station = StationInfo {
            name: config.get("main.name").cloned().filter(|n| !n.is_empty()),
            latitude: config.get("birdnet.latitude").and_then(|v| v.parse().ok()).filter(|v: &f64| *v != 0.0),
            longitude: config.get("birdnet.longitude").and_then(|v| v.parse().ok()).filter(|v: &f64| *v != 0.0),
        };
        if station.name.is_none() {
            station.name = node_name(&snapshot.conn, &tables, schema)?;
        }
        Ok(Self { db, schema, tables, clips, station, snapshot })
    }
}

/// The station's node name from its rows when no `config.yaml` came with the database (rows a
/// BirdNET-Go imported from a BirdNET-Pi say `birdnet-pi` and are skipped).
fn node_name(conn: &Connection, tables: &Tables, schema: Schema) -> Result<Option<String>, SourceError> {
    let sql = match schema {
        Schema::BirdnetGoLegacy if tables.has_column("notes", "source_node") => {
            "SELECT source_node FROM notes WHERE source_node NOT IN ('', 'birdnet-pi') \
             AND octet_length(source_node) <= 1024 ORDER BY id DESC LIMIT 1"
        }
        Schema::BirdnetGoV2 if tables.has_column("audio_sources", "node_name") => {
            "SELECT node_name FROM audio_sources WHERE node_name NOT IN ('', 'birdnet-pi') \
             AND octet_length(node_name) <= 1024 ORDER BY id DESC LIMIT 1"
        }
        _ => return Ok(None),
    };
    let mut stmt = conn.prepare(sql)?;
    let mut rows = stmt.query([])?;
    Ok(match rows.next()? {
        Some(r) => values::text(&r.get::<_, Value>(0)?),
        None => None,
    })
}

impl PeerSource for GoSource {
    fn kind(&self) -> PeerKind {
        PeerKind::BirdnetGo
    }

    fn schema(&self) -> Schema {
        self.schema
    }

    fn describe(&self) -> String {
        let era = if self.schema == Schema::BirdnetGoV2 { "v2" } else { "legacy" };
        format!("BirdNET-Go database ({era} schema) {}", self.db.display())
    }

    fn station(&self) -> StationInfo {
        self.station.clone()
    }

    fn total_rows(&mut self) -> Result<u64, SourceError> {
        match self.schema {
            Schema::BirdnetGoV2 => v2::total(&self.snapshot.conn),
            _ => legacy::total(&self.snapshot.conn),
        }
    }

    fn next_batch(&mut self, cursor: i64, limit: usize) -> Result<Batch, SourceError> {
        let conn = &self.snapshot.conn;
        match self.schema {
            Schema::BirdnetGoV2 => v2::batch(conn, &self.tables, &self.clips, cursor, limit),
            _ => legacy::batch(conn, &self.tables, &self.clips, cursor, limit),
        }
    }
}

/// `table`'s columns (named `prefix."c"`) as a bounded select list in `wanted`'s order, NULL for
/// those it lacks, and a last column counting the values too long to read
/// ([`foreign_db::bounded`]).
fn columns_or_null(tables: &Tables, table: &str, prefix: &str, wanted: &[&str]) -> String {
    let cols: Vec<String> = wanted
        .iter()
        .map(|c| if tables.has_column(table, c) { format!("{prefix}\"{c}\"") } else { "NULL".into() })
        .collect();
    foreign_db::bounded(&cols)
}

/// Comments read per batch at most, and the longest comment kept (longer ones are skipped).
const MAX_COMMENTS: usize = 2000;
const MAX_COMMENT_BYTES: usize = 4096;

/// The reviews, comments and locks of the rows with ids in `(after, last]`, one query per table.
struct Extras {
    verdicts: HashMap<i64, Verdict>,
    comments: legacy::CommentsById,
    locked: HashSet<i64>,
}

impl Extras {
    fn read(
        conn: &Connection,
        tables: &Tables,
        reviews: (&str, &str),
        comments: (&str, &str),
        locks: (&str, &str),
        (after, last): (i64, i64),
    ) -> Result<Self, SourceError> {
        let mut out = Self { verdicts: HashMap::new(), comments: HashMap::new(), locked: HashSet::new() };
        let range = rusqlite::params![after, last];
        let (table, key) = reviews;
        if tables.has_columns(table, &[key, "verified"]) {
            let sql = format!(
                "SELECT \"{key}\", CASE WHEN octet_length(verified) > 64 THEN NULL ELSE verified END \
                 FROM \"{table}\" WHERE \"{key}\" > ?1 AND \"{key}\" <= ?2"
            );
            let mut stmt = conn.prepare(&sql)?;
            let mut rows = stmt.query(range)?;
            while let Some(r) = rows.next()? {
                if let (Some(id), Some(v)) = (values::integer(&r.get(0)?), values::verdict(&r.get(1)?)) {
                    out.verdicts.insert(id, v);
                }
            }
        }
        let (table, key) = comments;
        if tables.has_columns(table, &[key, "entry"]) {
            let created = if tables.has_column(table, "created_at") { "created_at" } else { "NULL" };
            let order = if tables.has_column(table, "id") { "\"id\"" } else { "rowid" };
            let (max, bound) = (MAX_COMMENT_BYTES, foreign_db::MAX_FIELD);
            let sql = format!(
                "SELECT \"{key}\", CASE WHEN octet_length(entry) > {max} THEN NULL ELSE entry END, \
                 CASE WHEN octet_length({created}) > {bound} THEN NULL ELSE {created} END \
                 FROM \"{table}\" WHERE \"{key}\" > ?1 AND \"{key}\" <= ?2 ORDER BY \"{key}\", {order} LIMIT {MAX_COMMENTS}"
            );
            let mut stmt = conn.prepare(&sql)?;
            let mut rows = stmt.query(range)?;
            while let Some(r) = rows.next()? {
                if let (Some(id), Some(c)) = (values::integer(&r.get(0)?), legacy::comment(&r.get(1)?, &r.get(2)?)) {
                    out.comments.entry(id).or_default().push(c);
                }
            }
        }
        let (table, key) = locks;
        if tables.has_column(table, key) {
            let sql = format!("SELECT \"{key}\" FROM \"{table}\" WHERE \"{key}\" > ?1 AND \"{key}\" <= ?2");
            let mut stmt = conn.prepare(&sql)?;
            let mut rows = stmt.query(range)?;
            while let Some(r) = rows.next()? {
                if let Some(id) = values::integer(&r.get(0)?) {
                    out.locked.insert(id);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
