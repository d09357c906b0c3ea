//! Share links (migration 0030): one row per link a person made for a detection of their team.
//!
//! A link is live while it is neither revoked nor expired and its maker may still make it: an
//! unblocked member of its team (any role) or an unblocked platform admin ([`LIVE`]). Deleting
//! the maker's account deletes the rows.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::Result;
use crate::{
    ids::{DetectionId, TenantId, UserId},
    time::Timestamp,
};

/// The link `l` works at `?now` (a named parameter of every statement that uses it).
const LIVE: &str = "l.revoked_at IS NULL AND l.expires_at > :now
    AND EXISTS (SELECT 1 FROM users u WHERE u.id = l.maker_id AND u.is_blocked = 0
        AND (u.is_platform_admin = 1 OR EXISTS (SELECT 1 FROM memberships m
             WHERE m.user_id = u.id AND m.tenant_id = l.tenant_id)))";

/// Retention's test: a detection of chunk `c` has a live link at `?2` (its `now`).
pub const CHUNK_SHARED: &str = "EXISTS (SELECT 1 FROM detections d JOIN share_links l ON l.detection_pk = d.pk
    WHERE d.chunk_pk = c.pk AND l.revoked_at IS NULL AND l.expires_at > ?2
    AND EXISTS (SELECT 1 FROM users u WHERE u.id = l.maker_id AND u.is_blocked = 0
        AND (u.is_platform_admin = 1 OR EXISTS (SELECT 1 FROM memberships m
             WHERE m.user_id = u.id AND m.tenant_id = l.tenant_id))))";

/// A link as its detection's page lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareLink {
    pub id: String,
    pub detection: DetectionId,
    pub maker_id: UserId,
    pub maker_name: String,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}

const SELECT: &str = "SELECT l.id, d.id, l.maker_id, u.name, l.created_at, l.expires_at
    FROM share_links l JOIN detections d ON d.pk = l.detection_pk JOIN users u ON u.id = l.maker_id";

fn from_row(r: &Row<'_>) -> rusqlite::Result<ShareLink> {
    Ok(ShareLink {
        id: r.get(0)?,
        detection: r.get(1)?,
        maker_id: r.get(2)?,
        maker_name: r.get(3)?,
        created_at: r.get(4)?,
        expires_at: r.get(5)?,
    })
}

/// The team's detection's live links, newest first.
pub fn live(conn: &Connection, tenant: TenantId, detection: DetectionId, now: Timestamp) -> Result<Vec<ShareLink>> {
    let sql = format!(
        "{SELECT} WHERE l.tenant_id = :tenant AND d.id = :detection AND {LIVE} ORDER BY l.created_at DESC, l.id"
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows =
        stmt.query_map(rusqlite::named_params! {":tenant": tenant, ":detection": detection, ":now": now}, from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Whether link `id` is a live link for `detection` (any team).
pub fn is_live(conn: &Connection, id: &str, detection: DetectionId, now: Timestamp) -> Result<bool> {
    let sql = format!(
        "SELECT 1 FROM share_links l JOIN detections d ON d.pk = l.detection_pk
         WHERE l.id = :id AND d.id = :detection AND {LIVE}"
    );
    let found = conn
        .query_row(&sql, rusqlite::named_params! {":id": id, ":detection": detection, ":now": now}, |_| Ok(()))
        .optional()?;
    Ok(found.is_some())
}

/// A new link of the team's `detection`; `None` when the team has no such detection.
pub fn insert(
    conn: &Connection,
    tenant: TenantId,
    detection: DetectionId,
    maker: UserId,
    (now, expires): (Timestamp, Timestamp),
) -> Result<Option<ShareLink>> {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let n = conn.execute(
        "INSERT INTO share_links (id, tenant_id, detection_pk, maker_id, created_at, expires_at)
         SELECT ?1, ?2, d.pk, ?4, ?5, ?6 FROM detections d
         WHERE d.id = ?3 AND d.tenant_pk = (SELECT pk FROM tenants WHERE id = ?2)",
        params![id, tenant, detection, maker, now, expires],
    )?;
    if n == 0 {
        return Ok(None);
    }
    Ok(conn.query_row(&format!("{SELECT} WHERE l.id = ?1"), [id], from_row).optional()?)
}

/// The live link `id` of the team's `detection`, if any.
pub fn get_live(
    conn: &Connection,
    tenant: TenantId,
    detection: DetectionId,
    id: &str,
    now: Timestamp,
) -> Result<Option<ShareLink>> {
    let sql = format!("{SELECT} WHERE l.id = :id AND l.tenant_id = :tenant AND d.id = :detection AND {LIVE}");
    Ok(conn
        .query_row(
            &sql,
            rusqlite::named_params! {":id": id, ":tenant": tenant, ":detection": detection, ":now": now},
            from_row,
        )
        .optional()?)
}

/// Revokes link `id` of `tenant` at `now`; whether it was live.
pub fn revoke(conn: &Connection, tenant: TenantId, id: &str, now: Timestamp) -> Result<bool> {
    let n = conn.execute(
        "UPDATE share_links SET revoked_at = ?3 WHERE id = ?1 AND tenant_id = ?2 AND revoked_at IS NULL",
        params![id, tenant, now],
    )?;
    Ok(n > 0)
}

/// Revokes the links `user` made that ended with a change of their access: they are blocked, or
/// neither a platform admin nor a member of the link's team any more. Returns how many.
pub fn revoke_orphaned(conn: &Connection, user: UserId, now: Timestamp) -> Result<usize> {
    Ok(conn.execute(
        "UPDATE share_links SET revoked_at = ?2
         WHERE maker_id = ?1 AND revoked_at IS NULL AND NOT EXISTS (SELECT 1 FROM users u
             WHERE u.id = share_links.maker_id AND u.is_blocked = 0
             AND (u.is_platform_admin = 1 OR EXISTS (SELECT 1 FROM memberships m
                  WHERE m.user_id = u.id AND m.tenant_id = share_links.tenant_id)))",
        params![user, now],
    )?)
}
