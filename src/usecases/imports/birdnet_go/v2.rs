//! Rows of BirdNET-Go's v2 schema (IMPORTS.md B.4): `detections` joined to `labels` by id,
//! with reviews, comments and locks by `detection_id`. v2 keeps no common names, thresholds
//! or sensitivities; `detected_at` is an absolute instant.

use rusqlite::Connection;
use rusqlite::types::Value;

use super::clips::ClipRoot;
use super::schema::Tables;
use super::values::{instant, integer, number, position, text};
use super::{Extras, columns_or_null};
use crate::usecases::imports::foreign_db;
use crate::usecases::imports::peer::{Batch, PeerRow, Read, RowTime, SourceError};

/// Columns read from `detections` (prefixed `d.`), then the label's scientific name.
const COLUMNS: &[&str] =
    &["id", "detected_at", "confidence", "latitude", "longitude", "clip_name", "legacy_id", "label_id"];

pub(super) fn total(conn: &Connection) -> Result<u64, SourceError> {
    Ok(conn.query_row("SELECT COUNT(*) FROM detections", [], |r| r.get::<_, i64>(0))?.max(0) as u64)
}

pub(super) fn batch(
    conn: &Connection,
    tables: &Tables,
    clips: &ClipRoot,
    cursor: i64,
    limit: usize,
) -> Result<Batch, SourceError> {
    let cols = columns_or_null(tables, "detections", "d.", COLUMNS);
    let max = foreign_db::MAX_FIELD;
    let sql = format!(
        "SELECT {cols}, CASE WHEN octet_length(l.scientific_name) > {max} THEN NULL ELSE l.scientific_name END \
         FROM detections d LEFT JOIN labels l ON l.id = d.label_id WHERE d.id > ?1 ORDER BY d.id LIMIT ?2"
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows: Vec<Vec<Value>> = stmt
        .query_map(rusqlite::params![cursor, limit as i64], |r| {
            (0..COLUMNS.len() + 2).map(|i| r.get::<_, Value>(i)).collect()
        })?
        .collect::<Result<_, _>>()?;
    let Some(last) = rows.last().and_then(|r| r.first()).and_then(integer) else {
        return Ok(Batch { items: Vec::new(), cursor });
    };
    let mut extras = Extras::read(
        conn,
        tables,
        ("detection_reviews", "detection_id"),
        ("detection_comments", "detection_id"),
        ("detection_locks", "detection_id"),
        (cursor, last),
    )?;
    let items = rows.iter().map(|r| row(r, clips, &mut extras)).collect();
    Ok(Batch { items, cursor: last })
}

fn row(v: &[Value], clips: &ClipRoot, extras: &mut Extras) -> Read {
    let id = integer(&v[0]).unwrap_or_default();
    let at = format!("row {id} of the old database");
    let corrupt = |reason: String| Read::Corrupt { at: at.clone(), reason };
    if let Some(reason) = integer(&v[COLUMNS.len()]).and_then(foreign_db::overlong) {
        return corrupt(reason);
    }
    let Some(detected) = instant(&v[1]) else {
        return corrupt(format!("detected_at {:?} is not a time", text(&v[1])));
    };
    let Some(scientific_name) = text(&v[COLUMNS.len() + 1]) else {
        return corrupt(format!("label {} is not in labels", text(&v[7]).unwrap_or_else(|| "(none)".into())));
    };
    let Some(confidence) = number(&v[2]).filter(|c| (0.0..=1.0).contains(c)) else {
        return corrupt(format!("confidence {:?} is not a number from 0 to 1", text(&v[2])));
    };
    // A row migrated from the legacy table keeps its old id, so importing the legacy file and
    // later the v2 file of the same station meets the same keys.
    let key = match integer(&v[6]).filter(|l| *l > 0) {
        Some(legacy) => format!("go:{legacy}"),
        None => format!("go:v2:{id}"),
    };
    Read::Row(PeerRow {
        key,
        time: RowTime::Instant(detected),
        scientific_name,
        common_name: None,
        confidence,
        threshold: None,
        sensitivity: None,
        latitude: position(&v[3]),
        longitude: position(&v[4]),
        clip: clips.resolve(text(&v[5]).as_deref()),
        verdict: extras.verdicts.remove(&id),
        locked: extras.locked.contains(&id),
        comments: extras.comments.remove(&id).unwrap_or_default(),
        reidentified: false,
    })
}
