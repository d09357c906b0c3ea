//! Alerts (SPEC 4.6): what a rule raised for a team, newest first, and who acknowledged it.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;

use super::{Error, Result};
use crate::{
    ids::{TenantId, UserId},
    time::Timestamp,
};

/// An alert as listed (snake_case like the SPEC's records).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alert {
    pub id: String,
    pub tenant_id: TenantId,
    pub rule_id: Option<String>,
    /// `satellite_offline`, and with the alert rules `rare_species`, `detection`, `absence`, `trend` ...
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub message: String,
    pub data: serde_json::Value,
    pub acknowledged: bool,
    pub acknowledged_by: Option<UserId>,
    pub acknowledged_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

const COLS: &str = "id, tenant_id, rule_id, type, title, message, data_json, acknowledged, acknowledged_by,
    acknowledged_at, created_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Alert> {
    let data: String = r.get(6)?;
    Ok(Alert {
        id: r.get(0)?,
        tenant_id: r.get(1)?,
        rule_id: r.get(2)?,
        kind: r.get(3)?,
        title: r.get(4)?,
        message: r.get(5)?,
        data: serde_json::from_str(&data).unwrap_or(serde_json::Value::Null),
        acknowledged: r.get(7)?,
        acknowledged_by: r.get(8)?,
        acknowledged_at: r.get(9)?,
        created_at: r.get(10)?,
    })
}

/// What a new alert says.
pub struct NewAlert<'a> {
    pub tenant_id: TenantId,
    pub rule_id: Option<&'a str>,
    pub kind: &'a str,
    pub title: &'a str,
    pub message: &'a str,
    pub data: &'a serde_json::Value,
}

pub fn insert(conn: &Connection, a: &NewAlert<'_>, now: Timestamp) -> Result<Alert> {
    let id = uuid::Uuid::new_v4().to_string();
    conn.execute(
        "INSERT INTO alerts (id, tenant_id, rule_id, type, title, message, data_json, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![id, a.tenant_id, a.rule_id, a.kind, a.title, a.message, a.data.to_string(), now],
    )?;
    Ok(conn.query_row(&format!("SELECT {COLS} FROM alerts WHERE id = ?1"), [id], from_row)?)
}

/// `tenant`'s alerts, newest first, optionally only (un)acknowledged ones, and how many match.
pub fn list(
    conn: &Connection,
    tenant: TenantId,
    acknowledged: Option<bool>,
    limit: u32,
    offset: u32,
) -> Result<(Vec<Alert>, u64)> {
    let filter = "tenant_id = ?1 AND (?2 IS NULL OR acknowledged = ?2)";
    let total: i64 =
        conn.query_row(&format!("SELECT count(*) FROM alerts WHERE {filter}"), params![tenant, acknowledged], |r| {
            r.get(0)
        })?;
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLS} FROM alerts WHERE {filter} ORDER BY created_at DESC, id DESC LIMIT ?3 OFFSET ?4"
    ))?;
    let rows = stmt.query_map(params![tenant, acknowledged, limit, offset], from_row)?;
    Ok((rows.collect::<rusqlite::Result<_>>()?, total.max(0) as u64))
}

/// Marks `tenant`'s alert acknowledged by `user` (the first acknowledgement is kept).
pub fn acknowledge(
    conn: &Connection,
    tenant: TenantId,
    id: &str,
    user: Option<UserId>,
    now: Timestamp,
) -> Result<Alert> {
    conn.execute(
        "UPDATE alerts SET acknowledged = 1, acknowledged_by = ?3, acknowledged_at = ?4
         WHERE id = ?1 AND tenant_id = ?2 AND acknowledged = 0",
        params![id, tenant, user, now],
    )?;
    conn.query_row(
        &format!("SELECT {COLS} FROM alerts WHERE id = ?1 AND tenant_id = ?2"),
        params![id, tenant],
        from_row,
    )
    .optional()?
    .ok_or(Error::NotFound)
}
