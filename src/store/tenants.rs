//! Teams (tenants), their owners and memberships.

use rusqlite::{Connection, OptionalExtension, Row, params};
use uuid::Uuid;

use super::{Error, Result};
use crate::{
    domain::Role,
    ids::{TenantId, UserId},
    time::Timestamp,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    pub id: TenantId,
    pub name: String,
    pub owner_user_id: Option<UserId>,
    pub created_at: Timestamp,
}

/// A user's membership in a team, with the user's name for listings.
#[derive(Debug, Clone)]
pub struct Membership {
    pub id: String,
    pub tenant_id: TenantId,
    pub user_id: UserId,
    pub role: Role,
    pub created_at: Timestamp,
    pub name: String,
    pub email: String,
    pub is_platform_admin: bool,
    pub is_owner: bool,
}

fn tenant_row(r: &Row<'_>) -> rusqlite::Result<Tenant> {
    Ok(Tenant { id: r.get(0)?, name: r.get(1)?, owner_user_id: r.get(2)?, created_at: r.get(3)? })
}

const MEMBER_SELECT: &str =
    "SELECT m.id, m.tenant_id, m.user_id, m.role, m.created_at, u.name, u.email, u.is_platform_admin,
            t.owner_user_id IS m.user_id
     FROM memberships m JOIN users u ON u.id = m.user_id JOIN tenants t ON t.id = m.tenant_id";

fn member_row(r: &Row<'_>) -> rusqlite::Result<Membership> {
    Ok(Membership {
        id: r.get(0)?,
        tenant_id: r.get(1)?,
        user_id: r.get(2)?,
        role: r.get(3)?,
        created_at: r.get(4)?,
        name: r.get(5)?,
        email: r.get(6)?,
        is_platform_admin: r.get(7)?,
        is_owner: r.get(8)?,
    })
}

/// Creates a team owned and administered by `owner`, with its system alert rule; it becomes the
/// owner's default team if they have none.
pub fn create(conn: &Connection, name: &str, owner: UserId) -> Result<TenantId> {
    let id = TenantId::new();
    conn.execute("INSERT INTO tenants (id, name, owner_user_id) VALUES (?1, ?2, ?3)", params![id, name, owner])?;
    add_member(conn, id, owner, Role::Admin)?;
    conn.execute(
        "UPDATE users SET default_tenant_id = ?1 WHERE id = ?2 AND default_tenant_id IS NULL",
        params![id, owner],
    )?;
    // Every team has the system rule from the start, so it can be wired before the first outage.
    super::alert_rules::offline_rule(conn, id)?;
    super::alert_rules::clock_rule(conn, id)?;
    // Its zone is the hub's of today, kept when the hub's machine moves.
    super::zones::default_team_zone(conn, &id, crate::time::hub_zone(), Timestamp(chrono::Utc::now()))?;
    Ok(id)
}

/// Renames team `id`.
pub fn rename(conn: &Connection, id: TenantId, name: &str) -> Result<()> {
    let n = conn.execute("UPDATE tenants SET name = ?2 WHERE id = ?1", params![id, name])?;
    if n == 0 { Err(Error::NotFound) } else { Ok(()) }
}

pub fn get(conn: &Connection, id: TenantId) -> Result<Tenant> {
    Ok(conn.query_row("SELECT id, name, owner_user_id, created_at FROM tenants WHERE id = ?1", [id], tenant_row)?)
}

pub fn list_all(conn: &Connection) -> Result<Vec<Tenant>> {
    let mut stmt = conn.prepare("SELECT id, name, owner_user_id, created_at FROM tenants ORDER BY name, id")?;
    Ok(stmt.query_map([], tenant_row)?.collect::<rusqlite::Result<_>>()?)
}

/// The teams `user` belongs to, with their role in each.
pub fn list_for_user(conn: &Connection, user: UserId) -> Result<Vec<(Tenant, Role)>> {
    let mut stmt = conn.prepare(
        "SELECT t.id, t.name, t.owner_user_id, t.created_at, m.role FROM memberships m
         JOIN tenants t ON t.id = m.tenant_id WHERE m.user_id = ?1 ORDER BY t.name, t.id",
    )?;
    Ok(stmt.query_map([user], |r| Ok((tenant_row(r)?, r.get(4)?)))?.collect::<rusqlite::Result<_>>()?)
}

pub fn role_of(conn: &Connection, tenant: TenantId, user: UserId) -> Result<Option<Role>> {
    Ok(conn
        .query_row("SELECT role FROM memberships WHERE tenant_id = ?1 AND user_id = ?2", params![tenant, user], |r| {
            r.get(0)
        })
        .optional()?)
}

/// Adds `user` to `tenant`; an existing membership is `Duplicate`. Returns the membership id.
pub fn add_member(conn: &Connection, tenant: TenantId, user: UserId, role: Role) -> Result<String> {
    if role_of(conn, tenant, user)?.is_some() {
        return Err(Error::Duplicate);
    }
    let id = Uuid::new_v4().to_string();
    conn.execute(
        "INSERT INTO memberships (id, tenant_id, user_id, role) VALUES (?1, ?2, ?3, ?4)",
        params![id, tenant, user, role],
    )?;
    Ok(id)
}

pub fn members(conn: &Connection, tenant: TenantId, include_platform_admins: bool) -> Result<Vec<Membership>> {
    let mut stmt = conn.prepare(&format!(
        "{MEMBER_SELECT} WHERE m.tenant_id = ?1
           AND (?2 OR u.is_platform_admin = 0 OR t.owner_user_id IS m.user_id) ORDER BY u.name, u.id"
    ))?;
    Ok(stmt.query_map(params![tenant, include_platform_admins], member_row)?.collect::<rusqlite::Result<_>>()?)
}

pub fn membership(conn: &Connection, id: &str) -> Result<Membership> {
    Ok(conn.query_row(&format!("{MEMBER_SELECT} WHERE m.id = ?1"), [id], member_row)?)
}

pub fn membership_of(conn: &Connection, tenant: TenantId, user: UserId) -> Result<Membership> {
    Ok(conn.query_row(
        &format!("{MEMBER_SELECT} WHERE m.tenant_id = ?1 AND m.user_id = ?2"),
        params![tenant, user],
        member_row,
    )?)
}

pub fn set_role(conn: &Connection, tenant: TenantId, user: UserId, role: Role) -> Result<()> {
    let n = conn.execute(
        "UPDATE memberships SET role = ?3 WHERE tenant_id = ?1 AND user_id = ?2",
        params![tenant, user, role],
    )?;
    if n == 0 { Err(Error::NotFound) } else { Ok(()) }
}

/// Removes a membership; the user's default team moves to another of theirs (or none).
pub fn remove_member(conn: &Connection, tenant: TenantId, user: UserId) -> Result<()> {
    let n = conn.execute("DELETE FROM memberships WHERE tenant_id = ?1 AND user_id = ?2", params![tenant, user])?;
    if n == 0 {
        return Err(Error::NotFound);
    }
    conn.execute(
        "UPDATE users SET default_tenant_id = (SELECT tenant_id FROM memberships WHERE user_id = ?1 ORDER BY created_at LIMIT 1)
         WHERE id = ?1 AND (default_tenant_id IS NULL OR default_tenant_id = ?2)",
        params![user, tenant],
    )?;
    Ok(())
}

/// Makes `new_owner` (already a member) the owner and an admin of `tenant`.
pub fn transfer_ownership(conn: &Connection, tenant: TenantId, new_owner: UserId) -> Result<()> {
    if role_of(conn, tenant, new_owner)?.is_none() {
        return Err(Error::NotFound);
    }
    conn.execute("UPDATE tenants SET owner_user_id = ?2 WHERE id = ?1", params![tenant, new_owner])?;
    set_role(conn, tenant, new_owner, Role::Admin)
}

/// Teams `user` owns, each with how many other members it has.
pub fn owned_by(conn: &Connection, user: UserId) -> Result<Vec<(TenantId, u64)>> {
    let mut stmt = conn.prepare(
        "SELECT t.id, (SELECT count(*) FROM memberships m WHERE m.tenant_id = t.id AND m.user_id != ?1)
         FROM tenants t WHERE t.owner_user_id = ?1",
    )?;
    Ok(stmt
        .query_map([user], |r| Ok((r.get(0)?, r.get::<_, i64>(1)?.max(0) as u64)))?
        .collect::<rusqlite::Result<_>>()?)
}

/// Takes `user` out of `tenant` in one transaction: their devices there become team-owned and,
/// unless `keep_devices`, are disconnected (see `satellites::release_registrant_devices`).
/// Returns the devices that were released.
pub fn leave(
    conn: &mut Connection,
    tenant: TenantId,
    user: UserId,
    keep_devices: bool,
    now: Timestamp,
) -> Result<Vec<crate::ids::SatelliteId>> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    remove_member(&tx, tenant, user)?;
    let released = super::satellites::release_registrant_devices(&tx, tenant, user, keep_devices, now)?;
    tx.commit()?;
    Ok(released)
}

pub fn delete(conn: &Connection, id: TenantId) -> Result<()> {
    conn.execute("DELETE FROM tenants WHERE id = ?1", [id])?;
    Ok(())
}
