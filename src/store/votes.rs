//! Verification votes: one per person per detection, and the consensus they decide.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use super::Result;
use crate::{
    domain::consensus::{self, Ballot, Status, Vote},
    ids::{ChunkId, DetectionId, TenantId, UserId},
    time::Timestamp,
};

/// Vote counts of one detection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub confirm: u32,
    pub reject: u32,
    pub unsure: u32,
}

/// Records (or replaces) `user`'s vote and applies the consensus; returns the new status and the
/// counts. `annotation` links the mirrored vote of an annotation.
pub fn cast(
    conn: &mut Connection,
    tenant: TenantId,
    detection: DetectionId,
    user: UserId,
    vote: Vote,
    annotation: Option<&str>,
    now: Timestamp,
) -> Result<(Status, Tally)> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let outcome = record(&tx, tenant, detection, user, vote, annotation, now)?;
    tx.commit()?;
    Ok(outcome)
}

/// [`cast`] inside the caller's transaction. `NotFound` (and nothing written) unless the detection
/// is `tenant`'s.
pub fn record(
    conn: &Connection,
    tenant: TenantId,
    detection: DetectionId,
    user: UserId,
    vote: Vote,
    annotation: Option<&str>,
    now: Timestamp,
) -> Result<(Status, Tally)> {
    let written = conn
        .prepare_cached(
            "INSERT INTO verification_votes (id, detection_id, user_id, vote, annotation_id, created_at, updated_at)
         SELECT ?1, d.id, ?3, ?4, ?5, ?6, ?6 FROM detections d WHERE d.id = ?2 AND d.tenant_pk = (SELECT pk FROM tenants WHERE id = ?7)
         ON CONFLICT (detection_id, user_id) DO UPDATE SET
             vote = excluded.vote, annotation_id = excluded.annotation_id, updated_at = excluded.updated_at",
        )?
        .execute(params![uuid::Uuid::new_v4().to_string(), detection, user, vote.as_str(), annotation, now, tenant])?;
    if written == 0 {
        return Err(super::Error::NotFound);
    }
    settle(conn, tenant, detection)
}

/// Re-reads every vote of `tenant`'s `detection` and stores the status they decide.
fn settle(conn: &Connection, tenant: TenantId, detection: DetectionId) -> Result<(Status, Tally)> {
    let mut stmt = conn.prepare_cached(
        "SELECT v.vote, u.is_platform_admin OR coalesce(m.role = 'admin', 0)
         FROM verification_votes v JOIN detections d ON d.id = v.detection_id AND d.tenant_pk = (SELECT pk FROM tenants WHERE id = ?2)
         JOIN users u ON u.id = v.user_id
         LEFT JOIN memberships m ON m.user_id = v.user_id AND m.tenant_id = ?2
         WHERE v.detection_id = ?1 ORDER BY v.updated_at, v.rowid",
    )?;
    let ballots = stmt
        .query_map(params![detection, tenant], |r| Ok((r.get::<_, String>(0)?, r.get::<_, bool>(1)?)))?
        .filter_map(|row| match row {
            Ok((vote, decisive)) => vote.parse().ok().map(|vote| Ok(Ballot { vote, decisive })),
            Err(e) => Some(Err(e)),
        })
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let status = consensus::decide(&ballots);
    let before = session_facts(conn, tenant, detection)?;
    let updated = conn
        .prepare_cached(
            "UPDATE detections SET verification_status = ?2
             WHERE id = ?1 AND tenant_pk = (SELECT pk FROM tenants WHERE id = ?3)",
        )?
        .execute(params![detection, status.as_str(), tenant])?;
    if updated == 0 {
        return Err(super::Error::NotFound);
    }
    // A session's summary leaves rejected detections out: follow the status across that line.
    if let Some((chunk, code, common, scientific, was)) = before {
        let (was_rejected, is_rejected) = (was == Status::Rejected.as_str(), status == Status::Rejected);
        if is_rejected && !was_rejected {
            super::recording_sessions::remove_detection(conn, chunk, &code)?;
        } else if was_rejected && !is_rejected {
            super::recording_sessions::add_detection(conn, chunk, &code, &common, &scientific)?;
        }
    }
    let mut tally = Tally::default();
    for b in &ballots {
        match b.vote {
            Vote::Confirm => tally.confirm += 1,
            Vote::Reject => tally.reject += 1,
            Vote::Unsure => tally.unsure += 1,
        }
    }
    Ok((status, tally))
}

/// A detection's chunk, species (code and names) and status before a vote settles it.
type SessionFacts = (ChunkId, String, String, String, String);

fn session_facts(conn: &Connection, tenant: TenantId, detection: DetectionId) -> Result<Option<SessionFacts>> {
    Ok(conn
        .prepare_cached(
            "SELECT c.id, l.species_code, l.common_name, l.scientific_name, d.verification_status
             FROM detections d JOIN audio_chunks c ON c.pk = d.chunk_pk JOIN species_labels l ON l.pk = d.species_pk
             WHERE d.id = ?1 AND d.tenant_pk = (SELECT pk FROM tenants WHERE id = ?2)",
        )?
        .query_row(params![detection, tenant], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        .optional()?)
}

/// The vote counts of one detection.
pub fn tally(conn: &Connection, detection: DetectionId) -> Result<Tally> {
    let mut t = Tally::default();
    let mut stmt =
        conn.prepare_cached("SELECT vote, count(*) FROM verification_votes WHERE detection_id = ?1 GROUP BY vote")?;
    for row in stmt.query_map([detection], |r| Ok((r.get::<_, String>(0)?, r.get::<_, u32>(1)?)))? {
        let (vote, n) = row?;
        match vote.parse::<Vote>() {
            Ok(Vote::Confirm) => t.confirm = n,
            Ok(Vote::Reject) => t.reject = n,
            Ok(Vote::Unsure) => t.unsure = n,
            Err(_) => {}
        }
    }
    Ok(t)
}

/// The caller's vote on a detection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MyVote {
    pub detection_id: DetectionId,
    pub vote: String,
    pub annotation_id: Option<String>,
    pub updated_at: Timestamp,
}

/// `user`'s votes on those of `ids` that belong to `tenant` (others are left out, not revealed).
pub fn mine(conn: &Connection, tenant: TenantId, user: UserId, ids: &[DetectionId]) -> Result<Vec<MyVote>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let marks = vec!["?"; ids.len()].join(",");
    let sql = format!(
        "SELECT v.detection_id, v.vote, v.annotation_id, v.updated_at FROM verification_votes v
         JOIN detections d ON d.id = v.detection_id AND d.tenant_pk = (SELECT pk FROM tenants WHERE id = ?)
         WHERE v.user_id = ? AND v.detection_id IN ({marks})"
    );
    let mut args: Vec<rusqlite::types::Value> = vec![tenant.to_string().into(), user.to_string().into()];
    args.extend(ids.iter().map(|id| rusqlite::types::Value::from(*id)));
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| {
        Ok(MyVote { detection_id: r.get(0)?, vote: r.get(1)?, annotation_id: r.get(2)?, updated_at: r.get(3)? })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
