//! Rows of BirdNET-Go's legacy schema (IMPORTS.md B.3): `notes` by id, with their reviews,
//! comments and locks. Read by column name; optional columns a version lacks read as NULL.

use std::collections::HashMap;

use rusqlite::Connection;
use rusqlite::types::Value;

use super::clips::ClipRoot;
use super::schema::Tables;
use super::values::{instant, local_time, number, position, text, verdict};
use super::{Extras, columns_or_null};
use crate::usecases::imports::foreign_db;
use crate::usecases::imports::peer::{Batch, PeerComment, PeerRow, Read, RowTime, SourceError};

/// Columns read from `notes`, in this order; `verified` and `comment` exist only on builds of
/// late January 2025 (IMPORTS.md B "quirks").
const COLUMNS: &[&str] = &[
    "id",
    "date",
    "time",
    "scientific_name",
    "common_name",
    "confidence",
    "threshold",
    "sensitivity",
    "latitude",
    "longitude",
    "clip_name",
    "verified",
    "comment",
];

pub(super) fn total(conn: &Connection) -> Result<u64, SourceError> {
    Ok(conn.query_row("SELECT COUNT(*) FROM notes", [], |r| r.get::<_, i64>(0))?.max(0) as u64)
}

pub(super) fn batch(
    conn: &Connection,
    tables: &Tables,
    clips: &ClipRoot,
    cursor: i64,
    limit: usize,
) -> Result<Batch, SourceError> {
    let sql = format!(
        "SELECT {} FROM notes WHERE id > ?1 ORDER BY id LIMIT ?2",
        columns_or_null(tables, "notes", "", COLUMNS)
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows: Vec<Vec<Value>> = stmt
        .query_map(rusqlite::params![cursor, limit as i64], |r| {
            (0..=COLUMNS.len()).map(|i| r.get::<_, Value>(i)).collect()
        })?
        .collect::<Result<_, _>>()?;
    let Some(last) = rows.last().and_then(|r| r.first()).and_then(super::values::integer) else {
        return Ok(Batch { items: Vec::new(), cursor });
    };
    let mut extras = Extras::read(
        conn,
        tables,
        ("note_reviews", "note_id"),
        ("note_comments", "note_id"),
        ("note_locks", "note_id"),
        (cursor, last),
    )?;
    let items = rows.iter().map(|r| row(r, clips, &mut extras)).collect();
    Ok(Batch { items, cursor: last })
}

fn row(v: &[Value], clips: &ClipRoot, extras: &mut Extras) -> Read {
    let id = super::values::integer(&v[0]).unwrap_or_default();
    let at = format!("row {id} of the old database");
    let corrupt = |reason: &str| Read::Corrupt { at: at.clone(), reason: reason.to_owned() };
    if let Some(reason) = super::values::integer(&v[COLUMNS.len()]).and_then(foreign_db::overlong) {
        return corrupt(&reason);
    }
    let Some(time) = local_time(&v[1], &v[2]) else {
        let when = format!("{} {}", text(&v[1]).unwrap_or_default(), text(&v[2]).unwrap_or_default());
        return corrupt(&format!("the date and time \u{201c}{}\u{201d} cannot be read", when.trim()));
    };
    let Some(scientific_name) = text(&v[3]) else { return corrupt("empty scientific_name") };
    let Some(confidence) = number(&v[5]).filter(|c| (0.0..=1.0).contains(c)) else {
        return corrupt(&format!("confidence {:?} is not a number from 0 to 1", text(&v[5])));
    };
    let mut comments = extras.comments.remove(&id).unwrap_or_default();
    if let Some(text) = text(&v[12]) {
        comments.insert(0, PeerComment { text, at: None });
    }
    Read::Row(PeerRow {
        key: format!("go:{id}"),
        time: RowTime::Local(time),
        scientific_name,
        common_name: text(&v[4]),
        confidence,
        threshold: number(&v[6]),
        sensitivity: number(&v[7]),
        latitude: position(&v[8]),
        longitude: position(&v[9]),
        clip: clips.resolve(text(&v[10]).as_deref()),
        verdict: extras.verdicts.remove(&id).or_else(|| verdict(&v[11])),
        locked: extras.locked.contains(&id),
        comments,
        reidentified: false,
    })
}

/// Comments keyed by the row they belong to, oldest first.
pub(super) type CommentsById = HashMap<i64, Vec<PeerComment>>;

pub(super) fn comment(entry: &Value, created: &Value) -> Option<PeerComment> {
    Some(PeerComment { text: text(entry)?, at: instant(created) })
}
