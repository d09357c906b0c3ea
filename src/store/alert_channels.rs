//! Alert channels (SPEC 2.16). Secrets arrive sealed (`auth::secretbox`) and leave sealed: this
//! file never sees a plain secret. Every statement is scoped by tenant.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{Error, Result};
use crate::{ids::TenantId, time::Timestamp};

/// A stored channel.
#[derive(Debug, Clone, PartialEq)]
pub struct Channel {
    pub id: String,
    pub tenant_id: TenantId,
    pub kind: String,
    pub name: String,
    /// The fields stored in the clear.
    pub config: serde_json::Map<String, serde_json::Value>,
    /// The secret fields as one sealed JSON object.
    pub secret_enc: Option<String>,
    pub payload_template: Option<String>,
    pub enabled: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

const COLS: &str =
    "id, tenant_id, type, name, config_json, secret_enc, payload_template, enabled, created_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Channel> {
    let config: String = r.get(4)?;
    Ok(Channel {
        id: r.get(0)?,
        tenant_id: r.get(1)?,
        kind: r.get(2)?,
        name: r.get(3)?,
        config: serde_json::from_str(&config).unwrap_or_default(),
        secret_enc: r.get(5)?,
        payload_template: r.get(6)?,
        enabled: r.get(7)?,
        created_at: r.get(8)?,
        updated_at: r.get(9)?,
    })
}

/// The writable part of a channel.
pub struct ChannelFields<'a> {
    pub kind: &'a str,
    pub name: &'a str,
    pub config: &'a serde_json::Map<String, serde_json::Value>,
    pub secret_enc: Option<&'a str>,
    pub payload_template: Option<&'a str>,
    pub enabled: bool,
}

pub fn insert(conn: &Connection, tenant: TenantId, f: &ChannelFields<'_>, now: Timestamp) -> Result<Channel> {
    let id = uuid::Uuid::new_v4().to_string();
    conn.execute(
        "INSERT INTO alert_channels (id, tenant_id, type, name, config_json, secret_enc, payload_template, enabled,
            created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)",
        params![
            id,
            tenant,
            f.kind,
            f.name,
            serde_json::Value::Object(f.config.clone()).to_string(),
            f.secret_enc,
            f.payload_template,
            f.enabled,
            now
        ],
    )?;
    get(conn, tenant, &id)
}

pub fn update(conn: &Connection, tenant: TenantId, id: &str, f: &ChannelFields<'_>, now: Timestamp) -> Result<Channel> {
    let n = conn.execute(
        "UPDATE alert_channels SET name = ?3, config_json = ?4, secret_enc = ?5, payload_template = ?6, enabled = ?7,
            updated_at = ?8
         WHERE id = ?1 AND tenant_id = ?2",
        params![
            id,
            tenant,
            f.name,
            serde_json::Value::Object(f.config.clone()).to_string(),
            f.secret_enc,
            f.payload_template,
            f.enabled,
            now
        ],
    )?;
    if n == 0 {
        return Err(Error::NotFound);
    }
    get(conn, tenant, id)
}

pub fn get(conn: &Connection, tenant: TenantId, id: &str) -> Result<Channel> {
    let mut stmt =
        conn.prepare_cached(&format!("SELECT {COLS} FROM alert_channels WHERE id = ?1 AND tenant_id = ?2"))?;
    stmt.query_row(params![id, tenant], from_row).optional()?.ok_or(Error::NotFound)
}

pub fn list(conn: &Connection, tenant: TenantId) -> Result<Vec<Channel>> {
    let mut stmt =
        conn.prepare_cached(&format!("SELECT {COLS} FROM alert_channels WHERE tenant_id = ?1 ORDER BY name, id"))?;
    Ok(stmt.query_map([tenant], from_row)?.collect::<rusqlite::Result<_>>()?)
}

pub fn delete(conn: &Connection, tenant: TenantId, id: &str) -> Result<Channel> {
    let channel = get(conn, tenant, id)?;
    conn.execute("DELETE FROM alert_channels WHERE id = ?1 AND tenant_id = ?2", params![id, tenant])?;
    Ok(channel)
}

/// Which of `ids` are `tenant`'s channels.
pub fn existing(conn: &Connection, tenant: TenantId, ids: &[String]) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached("SELECT 1 FROM alert_channels WHERE id = ?1 AND tenant_id = ?2")?;
    let mut out = Vec::new();
    for id in ids {
        if stmt.exists(params![id, tenant])? {
            out.push(id.clone());
        }
    }
    Ok(out)
}
