//! Comments on detections: anyone in the team reads them, members write, authors (and admins)
//! delete.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use super::Result;
use crate::{
    ids::{DetectionId, TenantId, UserId},
    time::Timestamp,
};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Comment {
    pub id: String,
    pub detection_id: DetectionId,
    pub user_id: Option<UserId>,
    /// The author's name; `null` once the account is deleted.
    pub user_name: Option<String>,
    pub body: String,
    pub created_at: Timestamp,
    /// `birdnet-pi` or `birdnet-go` for a comment an import carried over from an old station
    /// (no author); `null` for a person's.
    pub imported_from: Option<String>,
}

const SELECT: &str = "SELECT c.id, c.detection_id, c.user_id, u.name, c.body, c.created_at, c.imported_from
     FROM comments c LEFT JOIN users u ON u.id = c.user_id";

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Comment> {
    Ok(Comment {
        id: r.get(0)?,
        detection_id: r.get(1)?,
        user_id: r.get(2)?,
        user_name: r.get(3)?,
        body: r.get(4)?,
        created_at: r.get(5)?,
        imported_from: r.get(6)?,
    })
}

/// A detection's comments, oldest first.
pub fn list(conn: &Connection, tenant: TenantId, detection: DetectionId) -> Result<Vec<Comment>> {
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT} WHERE c.detection_id = ?1 AND c.tenant_id = ?2 ORDER BY c.created_at, c.rowid"
    ))?;
    let rows = stmt.query_map(params![detection, tenant], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn add(
    conn: &Connection,
    tenant: TenantId,
    detection: DetectionId,
    user: UserId,
    body: &str,
    now: Timestamp,
) -> Result<Comment> {
    let id = uuid::Uuid::new_v4().to_string();
    let n = conn.execute(
        "INSERT INTO comments (id, detection_id, tenant_id, user_id, body, created_at)
         SELECT ?1, d.id, ?3, ?4, ?5, ?6 FROM detections d WHERE d.id = ?2 AND d.tenant_pk = (SELECT pk FROM tenants WHERE id = ?3)",
        params![id, detection, tenant, user, body, now],
    )?;
    if n == 0 {
        return Err(super::Error::NotFound);
    }
    Ok(conn.query_row(&format!("{SELECT} WHERE c.id = ?1"), [id], from_row)?)
}

/// The comment `id` on `detection` of `tenant`, if any.
pub fn get(conn: &Connection, tenant: TenantId, detection: DetectionId, id: &str) -> Result<Option<Comment>> {
    Ok(conn
        .query_row(
            &format!("{SELECT} WHERE c.id = ?1 AND c.detection_id = ?2 AND c.tenant_id = ?3"),
            params![id, detection, tenant],
            from_row,
        )
        .optional()?)
}

/// Deletes the comment `id` on `tenant`'s `detection`; `NotFound` when there is none.
pub fn delete(conn: &Connection, tenant: TenantId, detection: DetectionId, id: &str) -> Result<()> {
    let n = conn.execute(
        "DELETE FROM comments WHERE id = ?1 AND detection_id = ?2 AND tenant_id = ?3",
        params![id, detection, tenant],
    )?;
    if n == 0 { Err(super::Error::NotFound) } else { Ok(()) }
}
