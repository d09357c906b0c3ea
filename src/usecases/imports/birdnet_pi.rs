//! BirdNET-Pi's reader (IMPORTS.md A): the `detections` table of `birds.db`, recognised by its
//! capitalised columns (BirdNET-Go v2 has a `detections` table too), opened read-only, paged by
//! rowid, read by column name (extra columns are ignored). Clips are found at
//! `By_Date/<Date>/<ComDir>/<File_Name>`, every component validated before it is joined.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
};

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use rusqlite::{Connection, OpenFlags, types::Value};

use super::{
    boundary::SourceRoot,
    foreign_db,
    peer::{Batch, ClipRef, PeerKind, PeerRow, PeerSource, Read, RowTime, Schema, SourceError, StationInfo},
};

/// The columns a BirdNET-Pi `detections` table must have.
const REQUIRED: &[&str] = &["Date", "Time", "Sci_Name", "Com_Name", "Confidence", "File_Name"];
/// Columns read when a version has them.
const OPTIONAL: &[&str] = &["Cutoff", "Sens", "Lat", "Lon"];
/// The most of a `birdnet.conf` read: a real one is a few KiB; a larger file is ignored.
pub const MAX_CONF_BYTES: u64 = 64 * 1024;

/// An opened BirdNET-Pi database.
pub struct BirdnetPi {
    conn: Connection,
    path: PathBuf,
    /// The `By_Date` directory, when there is one: every clip must resolve inside it.
    clips: Option<SourceRoot>,
    station: StationInfo,
    /// The select list of the named columns (never `*`: extra columns are not read).
    select: String,
    /// Lower-cased column name to its index in `select`'s rows.
    cols: HashMap<String, usize>,
}

/// The tables of a database and their columns, for detection and for error messages.
pub(super) fn tables(conn: &Connection) -> Result<Vec<(String, Vec<String>)>, rusqlite::Error> {
    let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?;
    let names = stmt.query_map([], |r| r.get::<_, String>(0))?.collect::<Result<Vec<_>, _>>()?;
    let mut out = Vec::new();
    for name in names {
        let mut cols = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
        let c = cols.query_map([&name], |r| r.get::<_, String>(0))?.collect::<Result<Vec<_>, _>>()?;
        out.push((name, c));
    }
    Ok(out)
}

/// "tables a (x, y), b (z)" for error messages.
pub(super) fn describe_tables(t: &[(String, Vec<String>)]) -> String {
    if t.is_empty() {
        return "no tables".into();
    }
    let list: Vec<String> = t.iter().take(12).map(|(n, c)| format!("{n} ({})", c.join(", "))).collect();
    format!("tables {}", list.join("; "))
}

/// Opens `db` read-only and checks its schema. `clips` is the `By_Date` directory (every clip a
/// row names must resolve inside it).
pub fn open(db: &Path, clips: Option<&Path>, conf: Option<&Path>) -> Result<BirdnetPi, SourceError> {
    let shown = db.display().to_string();
    let conn = foreign_db::open(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    foreign_db::query_only(&conn)?;
    let tables = tables(&conn).map_err(|e| SourceError::UnknownSchema {
        path: shown.clone(),
        expected: "a SQLite database (BirdNET-Pi's birds.db)".into(),
        found: format!("a file SQLite cannot read ({e})"),
    })?;
    let has = |table: &str, cols: &[&str]| {
        tables.iter().any(|(n, c)| n == table && cols.iter().all(|w| c.iter().any(|x| x.eq_ignore_ascii_case(w))))
    };
    if !has("detections", REQUIRED) {
        if has("notes", &["scientific_name"]) || has("detections", &["label_id"]) {
            return Err(SourceError::WrongKind {
                path: shown,
                expected: "BirdNET-Pi".into(),
                found: "BirdNET-Go".into(),
            });
        }
        return Err(SourceError::UnknownSchema {
            path: shown,
            expected: format!("a detections table with columns {}", REQUIRED.join(", ")),
            found: describe_tables(&tables),
        });
    }
    foreign_db::refuse_generated(&conn, &shown, &["detections"])?;
    let present = &tables.iter().find(|(n, _)| n == "detections").map(|(_, c)| c.clone()).unwrap_or_default();
    let named: Vec<String> = REQUIRED
        .iter()
        .chain(OPTIONAL)
        .filter_map(|w| present.iter().find(|c| c.eq_ignore_ascii_case(w)))
        .map(|c| format!("\"{}\"", c.replace('"', "\"\"")))
        .collect();
    let cols = std::iter::once("import_rowid".to_owned())
        .chain(
            REQUIRED
                .iter()
                .chain(OPTIONAL)
                .filter(|w| present.iter().any(|c| c.eq_ignore_ascii_case(w)))
                .map(|w| w.to_ascii_lowercase()),
        )
        .enumerate()
        .map(|(i, n)| (n, i))
        .collect();
    let select = std::iter::once("rowid".to_owned()).chain(named).collect::<Vec<_>>();
    let select = foreign_db::bounded(&select);
    let station = conf.map(read_conf).unwrap_or_default();
    let clips = clips.and_then(SourceRoot::new);
    Ok(BirdnetPi { conn, path: db.to_path_buf(), clips, station, select, cols })
}

/// `SITE_NAME`, `LATITUDE` and `LONGITUDE` of a `birdnet.conf` (shell `KEY=value` lines, values
/// possibly quoted); an unreadable file, or one larger than [`MAX_CONF_BYTES`], gives nothing.
pub fn read_conf(path: &Path) -> StationInfo {
    let Some(text) = super::source::read_small(path, MAX_CONF_BYTES) else {
        return StationInfo::default();
    };
    let mut info = StationInfo::default();
    for line in text.lines() {
        let Some((key, value)) = line.trim().split_once('=') else { continue };
        let value = value.trim().trim_matches('"').trim_matches('\'').trim();
        match key.trim() {
            "SITE_NAME" if !value.is_empty() => info.name = Some(value.to_owned()),
            "LATITUDE" => info.latitude = value.parse().ok(),
            "LONGITUDE" => info.longitude = value.parse().ok(),
            _ => {}
        }
    }
    // 0.0000 is the installer's "unknown".
    if info.latitude == Some(0.0) && info.longitude == Some(0.0) {
        info.latitude = None;
        info.longitude = None;
    }
    info
}

/// The directory name BirdNET-Pi gives a species: apostrophes removed, spaces to `_`.
pub fn com_dir(common: &str) -> String {
    common.replace('\'', "").replace(' ', "_")
}

/// A path component taken from the database: no separators, not `.` or `..`, not empty.
fn safe_component(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains(['/', '\\', '\0'])
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Text(s) => Some(s.clone()),
        Value::Integer(i) => Some(i.to_string()),
        Value::Real(f) => Some(f.to_string()),
        _ => None,
    }
}

fn real(v: Option<&Value>) -> Result<Option<f64>, ()> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Integer(i)) => Ok(Some(*i as f64)),
        Some(Value::Real(f)) if f.is_finite() => Ok(Some(*f)),
        Some(Value::Text(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::Text(s)) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()).map(Some).ok_or(()),
        _ => Err(()),
    }
}

/// A value from the old database as a person reads it: in quotes, trimmed, control characters
/// escaped, and cut after 40 characters.
fn quoted(v: &str) -> String {
    let v = v.trim();
    let mut out: String = v.chars().take(40).flat_map(char::escape_debug).collect();
    if v.chars().count() > 40 {
        out.push('…');
    }
    format!("\u{201c}{out}\u{201d}")
}

impl BirdnetPi {
    /// One row by column name, or why it is corrupt.
    fn row(&self, cols: &HashMap<String, usize>, values: &[Value]) -> Result<PeerRow, String> {
        let get = |name: &str| cols.get(&name.to_ascii_lowercase()).and_then(|i| values.get(*i));
        let date_text = text(get("Date")).ok_or("it has no date")?;
        let time_text = text(get("Time")).ok_or("it has no time")?;
        let date = NaiveDate::parse_from_str(date_text.trim(), "%Y-%m-%d")
            .map_err(|_| format!("the date {} cannot be read", quoted(&date_text)))?;
        let time = NaiveTime::parse_from_str(time_text.trim(), "%H:%M:%S%.f")
            .or_else(|_| NaiveTime::parse_from_str(time_text.trim(), "%H:%M"))
            .map_err(|_| format!("the time {} cannot be read", quoted(&time_text)))?;
        let sci = text(get("Sci_Name")).map(|s| s.trim().to_owned()).unwrap_or_default();
        if sci.is_empty() {
            return Err("it names no species (its scientific name is empty)".into());
        }
        let common = text(get("Com_Name")).map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
        let conf_raw = get("Confidence");
        let confidence = real(conf_raw).ok().flatten().filter(|c| (0.0..=1.0).contains(c)).ok_or_else(|| {
            format!("the confidence {} is not a number from 0 to 1", quoted(&text(conf_raw).unwrap_or_default()))
        })?;
        let number = |name: &str, word: &str| {
            real(get(name))
                .map_err(|()| format!("the {word} {} is not a number", quoted(&text(get(name)).unwrap_or_default())))
        };
        let (threshold, sensitivity) = (number("Cutoff", "threshold")?, number("Sens", "sensitivity")?);
        let (latitude, longitude) = (number("Lat", "latitude")?, number("Lon", "longitude")?);
        let file = text(get("File_Name")).map(|s| s.trim().to_owned()).unwrap_or_default();
        let key = format!("{date_text}|{time_text}|{sci}|{}|{file}", text(conf_raw).unwrap_or_default());
        let clip = self.clip(&date_text, common.as_deref().unwrap_or(&sci), &file);
        Ok(PeerRow {
            key,
            time: RowTime::Local(NaiveDateTime::new(date, time)),
            scientific_name: sci,
            common_name: common,
            confidence,
            threshold,
            sensitivity,
            latitude: latitude.filter(|_| latitude != Some(0.0) || longitude != Some(0.0)),
            longitude: longitude.filter(|_| latitude != Some(0.0) || longitude != Some(0.0)),
            clip,
            verdict: None,
            locked: false,
            comments: Vec::new(),
            reidentified: confidence == 0.0,
        })
    }

    /// Where the row's clip is: `By_Date/<Date>/<ComDir>/<File_Name>` (then the raw common name
    /// as directory, as some versions wrote it).
    fn clip(&self, date: &str, common: &str, file: &str) -> Option<ClipRef> {
        if file.is_empty() {
            return None;
        }
        let dir = com_dir(common);
        let named = format!("By_Date/{date}/{dir}/{file}");
        if !(safe_component(date) && safe_component(&dir) && safe_component(file)) {
            return Some(ClipRef::Missing(named));
        }
        let Some(root) = &self.clips else { return Some(ClipRef::Missing(named)) };
        for d in [dir.as_str(), common] {
            if !safe_component(d) {
                continue;
            }
            let p = root.path().join(date).join(d).join(file);
            if let Some(real) = root.file(&p) {
                return Some(ClipRef::Found(real));
            }
            if p.is_file() {
                // A link to a file outside the clips directory.
                return Some(ClipRef::Missing(format!("{named} (leads outside the clips directory: not read)")));
            }
        }
        Some(ClipRef::Missing(named))
    }
}

impl PeerSource for BirdnetPi {
    fn kind(&self) -> PeerKind {
        PeerKind::BirdnetPi
    }

    fn schema(&self) -> Schema {
        Schema::BirdnetPi
    }

    fn describe(&self) -> String {
        format!("BirdNET-Pi database {}", self.path.display())
    }

    fn station(&self) -> StationInfo {
        self.station.clone()
    }

    fn total_rows(&mut self) -> Result<u64, SourceError> {
        let n: i64 = self.conn.query_row("SELECT count(*) FROM detections", [], |r| r.get(0))?;
        Ok(n.max(0) as u64)
    }

    fn next_batch(&mut self, cursor: i64, limit: usize) -> Result<Batch, SourceError> {
        let sql = format!("SELECT {} FROM detections WHERE rowid > ?1 ORDER BY rowid LIMIT ?2", self.select);
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let width = stmt.column_count();
        let raw = stmt
            .query_map(rusqlite::params![cursor, limit as i64], |r| {
                (0..width).map(|i| r.get::<_, Value>(i)).collect::<Result<Vec<_>, _>>()
            })?
            .collect::<Result<Vec<_>, _>>()?;
        drop(stmt);
        let mut items = Vec::with_capacity(raw.len());
        let mut last = cursor;
        for values in raw {
            let rowid = match values.first() {
                Some(Value::Integer(i)) => *i,
                _ => last + 1,
            };
            last = rowid;
            let over = match values.last() {
                Some(Value::Integer(n)) => foreign_db::overlong(*n),
                _ => None,
            };
            let read = match over {
                Some(reason) => Err(reason),
                None => self.row(&self.cols, &values),
            };
            items.push(match read {
                Ok(row) => Read::Row(row),
                Err(reason) => Read::Corrupt { at: format!("row {rowid} of the old database"), reason },
            });
        }
        Ok(Batch { items, cursor: last })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn com_dir_follows_the_writer() {
        assert_eq!(com_dir("Cooper's Hawk"), "Coopers_Hawk");
        assert_eq!(com_dir("Rotkehlchen"), "Rotkehlchen");
        assert_eq!(com_dir("Mésange charbonnière"), "Mésange_charbonnière");
    }

    #[test]
    fn components_from_the_database_are_checked() {
        for bad in ["", ".", "..", "a/b", "a\\b"] {
            assert!(!safe_component(bad), "{bad:?}");
        }
        assert!(safe_component("Coopers_Hawk-87-2024-05-01-birdnet-06:12:03.mp3"));
    }

    #[test]
    fn the_conf_gives_name_and_place() {
        let dir = tempfile::tempdir().expect("dir");
        let p = dir.path().join("birdnet.conf");
        std::fs::write(&p, "SITE_NAME=\"Garden Pi\"\nLATITUDE=40.7128\nLONGITUDE=-74.0060\nCONFIDENCE=0.7\n")
            .expect("w");
        let s = read_conf(&p);
        assert_eq!(s.name.as_deref(), Some("Garden Pi"));
        assert_eq!((s.latitude, s.longitude), (Some(40.7128), Some(-74.006)));
    }

    #[test]
    fn a_conf_larger_than_a_conf_can_be_is_ignored() {
        let dir = tempfile::tempdir().expect("dir");
        let p = dir.path().join("birdnet.conf");
        let padding = "# padding\n".repeat(MAX_CONF_BYTES as usize / 10 + 1);
        std::fs::write(&p, format!("SITE_NAME=\"Big\"\nLATITUDE=1\nLONGITUDE=2\n{padding}")).expect("w");
        assert_eq!(read_conf(&p), StationInfo::default());
    }

    #[test]
    fn a_generated_column_or_an_overlong_value_is_refused_or_corrupt() {
        let dir = tempfile::tempdir().expect("dir");
        let db = dir.path().join("birds.db");
        let c = Connection::open(&db).expect("create");
        c.execute_batch(
            "CREATE TABLE detections (Date DATE, Time TIME, Sci_Name VARCHAR(100), Com_Name VARCHAR(100),
               Confidence FLOAT, File_Name VARCHAR(100), Extra TEXT);
             INSERT INTO detections VALUES ('2024-05-01', '06:00:00', 'Turdus merula', 'Blackbird', 0.9, 'a.mp3', 'x');
             INSERT INTO detections VALUES ('2024-05-01', '06:00:03', 'Turdus merula', 'Blackbird', 0.9, 'b.mp3',
               CAST(zeroblob(2000000) AS TEXT));
             INSERT INTO detections VALUES ('2024-05-01', '06:00:06', 'Turdus merula',
               CAST(zeroblob(2000000) AS TEXT), 0.9, 'c.mp3', 'x');",
        )
        .expect("rows");
        let mut src = open(&db, None, None).expect("open");
        let batch = src.next_batch(0, 10).expect("a batch, not an error");
        assert!(matches!(batch.items[0], Read::Row(_)));
        assert!(matches!(batch.items[1], Read::Row(_)), "a column not read is not read");
        assert!(matches!(&batch.items[2], Read::Corrupt { reason, .. } if reason.contains("longer than")));
        c.execute_batch("ALTER TABLE detections ADD COLUMN Junk BLOB GENERATED ALWAYS AS (zeroblob(50000000)) VIRTUAL")
            .expect("generated");
        assert!(matches!(open(&db, None, None), Err(SourceError::UnknownSchema { .. })));
    }
}
