//! Annotations (SPEC 2.10): a time and frequency box on a detection's chunk with a vote; each
//! one also writes the author's vote (the mirrored row) so the consensus moves.

use rusqlite::{Connection, params};
use serde::Serialize;

use super::{Result, votes};
use crate::{
    domain::consensus::{Status, Vote},
    ids::{DetectionId, TenantId, UserId},
    time::Timestamp,
};

#[derive(Debug, Clone)]
pub struct NewAnnotation {
    pub vote: Vote,
    pub time_start_ms: i64,
    pub time_end_ms: i64,
    pub freq_low_hz: Option<f64>,
    pub freq_high_hz: Option<f64>,
    pub notes: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Annotation {
    pub id: String,
    pub detection_id: DetectionId,
    pub user_id: Option<UserId>,
    pub user_name: Option<String>,
    pub vote: String,
    pub time_start_ms: i64,
    pub time_end_ms: i64,
    pub freq_low_hz: Option<f64>,
    pub freq_high_hz: Option<f64>,
    pub notes: Option<String>,
    pub created_at: Timestamp,
}

/// Stores the annotation, then the author's mirrored vote and the consensus, in one transaction.
pub fn add(
    conn: &mut Connection,
    tenant: TenantId,
    detection: DetectionId,
    user: UserId,
    a: &NewAnnotation,
    now: Timestamp,
) -> Result<(Annotation, Status, votes::Tally)> {
    let id = uuid::Uuid::new_v4().to_string();
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    tx.execute(
        "INSERT INTO annotations (id, detection_id, tenant_id, user_id, vote, time_start_ms, time_end_ms, freq_low_hz,
             freq_high_hz, notes, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            id,
            detection,
            tenant,
            user,
            a.vote.as_str(),
            a.time_start_ms,
            a.time_end_ms,
            a.freq_low_hz,
            a.freq_high_hz,
            a.notes,
            now
        ],
    )?;
    let (status, tally) = votes::record(&tx, tenant, detection, user, a.vote, Some(&id), now)?;
    let stored = tx.query_row(&format!("{SELECT} WHERE a.id = ?1"), [&id], from_row)?;
    tx.commit()?;
    Ok((stored, status, tally))
}

/// An annotation's vote is its author's current vote on the detection: one person has one vote,
/// so a box drawn as "confirm" reads "unsure" once its author votes unsure (issue 36). The box's
/// own vote is kept for an author without a vote row (a deleted account).
const SELECT: &str = "SELECT a.id, a.detection_id, a.user_id, u.name, coalesce(v.vote, a.vote), a.time_start_ms,
         a.time_end_ms, a.freq_low_hz, a.freq_high_hz, a.notes, a.created_at
     FROM annotations a LEFT JOIN users u ON u.id = a.user_id
     LEFT JOIN verification_votes v ON v.detection_id = a.detection_id AND v.user_id = a.user_id";

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Annotation> {
    Ok(Annotation {
        id: r.get(0)?,
        detection_id: r.get(1)?,
        user_id: r.get(2)?,
        user_name: r.get(3)?,
        vote: r.get(4)?,
        time_start_ms: r.get(5)?,
        time_end_ms: r.get(6)?,
        freq_low_hz: r.get(7)?,
        freq_high_hz: r.get(8)?,
        notes: r.get(9)?,
        created_at: r.get(10)?,
    })
}

/// A detection's annotations, oldest first.
pub fn list(conn: &Connection, tenant: TenantId, detection: DetectionId) -> Result<Vec<Annotation>> {
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT} WHERE a.detection_id = ?1 AND a.tenant_id = ?2 ORDER BY a.created_at, a.rowid"
    ))?;
    let rows = stmt.query_map(params![detection, tenant], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
