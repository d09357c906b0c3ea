//! The audit log (SPEC 6.4): who did what to what, from which IP, when.

use rusqlite::{Connection, Row, params};
use serde::Serialize;

use super::Result;
use crate::{
    ids::{TenantId, UserId},
    time::Timestamp,
};

/// One entry to write.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    pub tenant_id: Option<TenantId>,
    pub actor_user_id: Option<UserId>,
    pub actor_api_key_id: Option<String>,
    pub action: String,
    pub target_type: Option<String>,
    pub target_id: Option<String>,
    pub ip: Option<String>,
    pub details: serde_json::Value,
}

/// A stored entry as listed.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stored {
    pub id: i64,
    pub tenant_id: Option<TenantId>,
    pub actor_user_id: Option<UserId>,
    pub actor_api_key_id: Option<String>,
    pub action: String,
    pub target_type: Option<String>,
    pub target_id: Option<String>,
    pub ip: Option<String>,
    pub details: serde_json::Value,
    pub created_at: Timestamp,
    /// The acting person's name and email, when the actor is a person who still has an account.
    pub user_name: Option<String>,
    pub user_email: Option<String>,
    /// The team's name, when the entry is about a team that still exists.
    pub tenant_name: Option<String>,
}

pub fn record(conn: &Connection, e: &Entry, now: Timestamp) -> Result<()> {
    let details = if e.details.is_null() { "{}".to_owned() } else { e.details.to_string() };
    conn.execute(
        "INSERT INTO audit_log (tenant_id, actor_user_id, actor_api_key_id, action, target_type, target_id, ip, details_json, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![e.tenant_id, e.actor_user_id, e.actor_api_key_id, e.action, e.target_type, e.target_id, e.ip, details, now],
    )?;
    Ok(())
}

/// Drops entries older than `before` (the retention of `retention.keep_audit_days`).
pub fn prune(conn: &Connection, before: Timestamp) -> Result<usize> {
    Ok(conn.execute("DELETE FROM audit_log WHERE created_at < ?1", [before])?)
}

/// Filters of the audit list.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub tenant_id: Option<TenantId>,
    pub action: Option<String>,
    pub actor_user_id: Option<UserId>,
    /// Entries at or after this instant.
    pub from: Option<Timestamp>,
    /// Entries before this instant.
    pub to: Option<Timestamp>,
    pub limit: u32,
    pub offset: u32,
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<Stored> {
    let details: String = r.get(8)?;
    Ok(Stored {
        id: r.get(0)?,
        tenant_id: r.get(1)?,
        actor_user_id: r.get(2)?,
        actor_api_key_id: r.get(3)?,
        action: r.get(4)?,
        target_type: r.get(5)?,
        target_id: r.get(6)?,
        ip: r.get(7)?,
        details: serde_json::from_str(&details).unwrap_or(serde_json::Value::Null),
        created_at: r.get(9)?,
        user_name: r.get(10)?,
        user_email: r.get(11)?,
        tenant_name: r.get(12)?,
    })
}

/// Newest first, with the total count of matches; each entry with its actor's and team's names.
pub fn list(conn: &Connection, f: &Filter) -> Result<(Vec<Stored>, u64)> {
    let filter =
        "(?1 IS NULL OR a.tenant_id = ?1) AND (?2 IS NULL OR a.action = ?2) AND (?3 IS NULL OR a.actor_user_id = ?3)
         AND (?4 IS NULL OR a.created_at >= ?4) AND (?5 IS NULL OR a.created_at < ?5)";
    let total: i64 = conn.query_row(
        &format!("SELECT count(*) FROM audit_log a WHERE {filter}"),
        params![f.tenant_id, f.action, f.actor_user_id, f.from, f.to],
        |r| r.get(0),
    )?;
    let mut stmt = conn.prepare(&format!(
        "SELECT a.id, a.tenant_id, a.actor_user_id, a.actor_api_key_id, a.action, a.target_type, a.target_id, a.ip,
                a.details_json, a.created_at, u.name, u.email, t.name
         FROM audit_log a LEFT JOIN users u ON u.id = a.actor_user_id LEFT JOIN tenants t ON t.id = a.tenant_id
         WHERE {filter} ORDER BY a.id DESC LIMIT ?6 OFFSET ?7"
    ))?;
    let rows = stmt
        .query_map(params![f.tenant_id, f.action, f.actor_user_id, f.from, f.to, f.limit, f.offset], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((rows, total.max(0) as u64))
}

/// Every action the log holds, for the filter's choices.
pub fn actions(conn: &Connection) -> Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT DISTINCT action FROM audit_log ORDER BY action")?;
    Ok(stmt.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?)
}
