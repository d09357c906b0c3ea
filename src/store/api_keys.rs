//! API keys: stored as SHA-256 of the raw key, tenant-scoped or satellite-scoped.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{Error, Result};
use crate::{
    domain::Role,
    ids::{SatelliteId, TenantId, UserId},
    time::Timestamp,
};

#[derive(Debug, Clone)]
pub struct ApiKey {
    pub id: String,
    pub tenant_id: TenantId,
    pub satellite_id: Option<SatelliteId>,
    pub created_by: Option<UserId>,
    pub name: String,
    pub key_prefix: String,
    pub role: Role,
    pub created_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
}

const COLS: &str =
    "id, tenant_id, satellite_id, created_by, name, key_prefix, role, created_at, last_used_at, revoked_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<ApiKey> {
    Ok(ApiKey {
        id: r.get(0)?,
        tenant_id: r.get(1)?,
        satellite_id: r.get(2)?,
        created_by: r.get(3)?,
        name: r.get(4)?,
        key_prefix: r.get(5)?,
        role: r.get(6)?,
        created_at: r.get(7)?,
        last_used_at: r.get(8)?,
        revoked_at: r.get(9)?,
    })
}

/// A key to store; `key_hash` is the SHA-256 hex of the raw key.
pub struct NewKey<'a> {
    pub tenant_id: TenantId,
    pub satellite_id: Option<SatelliteId>,
    pub created_by: Option<UserId>,
    pub name: &'a str,
    pub key_hash: &'a str,
    pub key_prefix: &'a str,
    pub role: Role,
}

pub fn create(conn: &Connection, k: &NewKey<'_>) -> Result<String> {
    let id = uuid::Uuid::new_v4().to_string();
    conn.execute(
        "INSERT INTO api_keys (id, tenant_id, satellite_id, created_by, name, key_hash, key_prefix, role)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![id, k.tenant_id, k.satellite_id, k.created_by, k.name, k.key_hash, k.key_prefix, k.role],
    )?;
    Ok(id)
}

/// The live key with this hash (not revoked, not expired at `now`). A read only: the caller
/// records use with [`touch`], coalesced so that requests do not each write.
pub fn find_active(conn: &Connection, key_hash: &str, now: Timestamp) -> Result<Option<ApiKey>> {
    Ok(conn
        .query_row(
            &format!(
                "SELECT {COLS} FROM api_keys WHERE key_hash = ?1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?2)"
            ),
            params![key_hash, now],
            from_row,
        )
        .optional()?)
}

/// Records that the key was used at `now`.
/// Who made the key `id` (`None`: a key of a satellite, or one whose maker is gone).
pub fn maker(conn: &Connection, id: &str) -> Result<Option<UserId>> {
    let found = conn
        .query_row("SELECT created_by FROM api_keys WHERE id = ?1", [id], |r| r.get::<_, Option<UserId>>(0))
        .optional()?;
    Ok(found.flatten())
}

pub fn touch(conn: &Connection, id: &str, now: Timestamp) -> Result<()> {
    conn.execute("UPDATE api_keys SET last_used_at = ?2 WHERE id = ?1", params![id, now])?;
    Ok(())
}

/// Keys of a team (live and revoked), newest first.
pub fn list(conn: &Connection, tenant: TenantId) -> Result<Vec<ApiKey>> {
    let mut stmt =
        conn.prepare(&format!("SELECT {COLS} FROM api_keys WHERE tenant_id = ?1 ORDER BY created_at DESC, id"))?;
    Ok(stmt.query_map([tenant], from_row)?.collect::<rusqlite::Result<_>>()?)
}

/// Revokes a key of `tenant`; an unknown id or another team's key is `NotFound`.
pub fn revoke(conn: &Connection, tenant: TenantId, id: &str, now: Timestamp) -> Result<()> {
    let n = conn.execute(
        "UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?3) WHERE id = ?1 AND tenant_id = ?2",
        params![id, tenant, now],
    )?;
    if n == 0 { Err(Error::NotFound) } else { Ok(()) }
}

/// Expires every key of a satellite (rotation, deletion, the registrant leaving).
pub fn revoke_for_satellite(conn: &Connection, satellite: SatelliteId, now: Timestamp) -> Result<usize> {
    Ok(conn.execute(
        "UPDATE api_keys SET revoked_at = ?2 WHERE satellite_id = ?1 AND revoked_at IS NULL",
        params![satellite, now],
    )?)
}

/// Whether the maker of the row (`created_by`) may still make it in the row's team: an unblocked
/// account that is a platform admin or an admin of that team. The rule API keys and invites share.
pub(super) fn maker_may_still(table: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM users u WHERE u.id = {table}.created_by AND u.is_blocked = 0
             AND (u.is_platform_admin = 1 OR EXISTS (SELECT 1 FROM memberships m
                  WHERE m.user_id = u.id AND m.tenant_id = {table}.tenant_id AND m.role = 'admin')))"
    )
}

/// Runs an `UPDATE … RETURNING tenant_id, id` bound to `(user, now)`: the rows it revoked.
pub(super) fn revoked_rows(
    conn: &Connection,
    sql: &str,
    user: UserId,
    now: Timestamp,
) -> Result<Vec<(TenantId, String)>> {
    let mut stmt = conn.prepare(sql)?;
    Ok(stmt.query_map(params![user, now], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?)
}

/// Revokes the live team keys (never satellite keys) that `user` made and may no longer make:
/// they are blocked, or neither a platform admin nor an admin of the key's team any more.
/// Returns `(team, key id)` of each key revoked.
pub fn revoke_orphaned(conn: &Connection, user: UserId, now: Timestamp) -> Result<Vec<(TenantId, String)>> {
    let sql = format!(
        "UPDATE api_keys SET revoked_at = ?2
         WHERE created_by = ?1 AND satellite_id IS NULL AND revoked_at IS NULL AND NOT {}
         RETURNING tenant_id, id",
        maker_may_still("api_keys")
    );
    revoked_rows(conn, &sql, user, now)
}

/// Revokes every live team key `user` made (the account is being deleted).
pub fn revoke_made_by(conn: &Connection, user: UserId, now: Timestamp) -> Result<Vec<(TenantId, String)>> {
    revoked_rows(
        conn,
        "UPDATE api_keys SET revoked_at = ?2 WHERE created_by = ?1 AND satellite_id IS NULL AND revoked_at IS NULL
         RETURNING tenant_id, id",
        user,
        now,
    )
}
