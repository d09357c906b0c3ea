//! Team invites: a role in a tenant, redeemed once at registration, stored as SHA-256 of the token.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{Error, Result};
use crate::{
    domain::Role,
    ids::{TenantId, UserId},
    time::Timestamp,
};

#[derive(Debug, Clone)]
pub struct Invite {
    pub id: String,
    pub tenant_id: TenantId,
    pub role: Role,
    pub email: Option<String>,
    pub created_by: Option<UserId>,
    pub expires_at: Timestamp,
    pub accepted_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

const COLS: &str = "id, tenant_id, role, email, created_by, expires_at, accepted_at, revoked_at, created_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Invite> {
    Ok(Invite {
        id: r.get(0)?,
        tenant_id: r.get(1)?,
        role: r.get(2)?,
        email: r.get(3)?,
        created_by: r.get(4)?,
        expires_at: r.get(5)?,
        accepted_at: r.get(6)?,
        revoked_at: r.get(7)?,
        created_at: r.get(8)?,
    })
}

pub struct NewInvite<'a> {
    pub tenant_id: TenantId,
    pub role: Role,
    pub email: Option<&'a str>,
    pub created_by: UserId,
    pub token_hash: &'a str,
    pub expires_at: Timestamp,
}

pub fn create(conn: &Connection, n: &NewInvite<'_>) -> Result<Invite> {
    let id = uuid::Uuid::new_v4().to_string();
    conn.execute(
        "INSERT INTO invites (id, tenant_id, role, email, created_by, token_hash, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![id, n.tenant_id, n.role, n.email, n.created_by, n.token_hash, n.expires_at],
    )?;
    Ok(conn.query_row(&format!("SELECT {COLS} FROM invites WHERE id = ?1"), [id], from_row)?)
}

/// Invites of a team that can still be redeemed.
pub fn pending(conn: &Connection, tenant: TenantId, now: Timestamp) -> Result<Vec<Invite>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {COLS} FROM invites WHERE tenant_id = ?1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > ?2
         ORDER BY created_at DESC"
    ))?;
    Ok(stmt.query_map(params![tenant, now], from_row)?.collect::<rusqlite::Result<_>>()?)
}

pub fn revoke(conn: &Connection, tenant: TenantId, id: &str, now: Timestamp) -> Result<()> {
    let n = conn.execute(
        "UPDATE invites SET revoked_at = ?3 WHERE id = ?1 AND tenant_id = ?2 AND revoked_at IS NULL AND accepted_at IS NULL",
        params![id, tenant, now],
    )?;
    if n == 0 { Err(Error::NotFound) } else { Ok(()) }
}

pub fn find_by_hash(conn: &Connection, token_hash: &str) -> Result<Option<Invite>> {
    Ok(conn
        .query_row(&format!("SELECT {COLS} FROM invites WHERE token_hash = ?1"), [token_hash], from_row)
        .optional()?)
}

/// Marks the invite accepted by `user`; false when it was already used.
pub fn accept(conn: &Connection, id: &str, user: UserId, now: Timestamp) -> Result<bool> {
    Ok(conn.execute(
        "UPDATE invites SET accepted_at = ?3, accepted_by = ?2 WHERE id = ?1 AND accepted_at IS NULL",
        params![id, user, now],
    )? == 1)
}

/// Revokes the pending invites `user` made and may no longer make (the rule of
/// `api_keys::revoke_orphaned`). Returns `(team, invite id)` of each.
pub fn revoke_orphaned(conn: &Connection, user: UserId, now: Timestamp) -> Result<Vec<(TenantId, String)>> {
    let sql = format!(
        "UPDATE invites SET revoked_at = ?2
         WHERE created_by = ?1 AND accepted_at IS NULL AND revoked_at IS NULL AND NOT {}
         RETURNING tenant_id, id",
        super::api_keys::maker_may_still("invites")
    );
    super::api_keys::revoked_rows(conn, &sql, user, now)
}

/// Revokes every pending invite `user` made (the account is being deleted).
pub fn revoke_made_by(conn: &Connection, user: UserId, now: Timestamp) -> Result<Vec<(TenantId, String)>> {
    super::api_keys::revoked_rows(
        conn,
        "UPDATE invites SET revoked_at = ?2 WHERE created_by = ?1 AND accepted_at IS NULL AND revoked_at IS NULL
         RETURNING tenant_id, id",
        user,
        now,
    )
}
