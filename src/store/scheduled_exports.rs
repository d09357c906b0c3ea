//! Scheduled exports (SPEC 2.17): the team's schedules, when each runs next and how its last run
//! went. Every statement is scoped by tenant except the scheduler's, which claims due rows of
//! all teams by id.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{Error, Result};
use crate::{ids::TenantId, time::Timestamp};

/// A stored schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduledExport {
    pub id: String,
    pub tenant_id: TenantId,
    pub name: String,
    pub format: String,
    pub filters: serde_json::Map<String, serde_json::Value>,
    pub cron: String,
    pub timezone: String,
    /// `None` once the channel was deleted.
    pub channel_id: Option<String>,
    pub enabled: bool,
    pub next_run_at: Timestamp,
    pub last_run_at: Option<Timestamp>,
    pub last_status: Option<String>,
    pub last_error: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

const COLS: &str = "id, tenant_id, name, format, filters_json, cron, timezone, channel_id, enabled, next_run_at,
    last_run_at, last_status, last_error, created_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<ScheduledExport> {
    let filters: String = r.get(4)?;
    Ok(ScheduledExport {
        id: r.get(0)?,
        tenant_id: r.get(1)?,
        name: r.get(2)?,
        format: r.get(3)?,
        filters: serde_json::from_str(&filters).unwrap_or_default(),
        cron: r.get(5)?,
        timezone: r.get(6)?,
        channel_id: r.get(7)?,
        enabled: r.get(8)?,
        next_run_at: r.get(9)?,
        last_run_at: r.get(10)?,
        last_status: r.get(11)?,
        last_error: r.get(12)?,
        created_at: r.get(13)?,
        updated_at: r.get(14)?,
    })
}

/// The writable part of a schedule.
pub struct Fields<'a> {
    pub name: &'a str,
    pub format: &'a str,
    pub filters: &'a serde_json::Map<String, serde_json::Value>,
    pub cron: &'a str,
    pub timezone: &'a str,
    pub channel_id: &'a str,
    pub enabled: bool,
    pub next_run_at: Timestamp,
}

impl Fields<'_> {
    /// The values of `?1` (id) to `?11` (now) that insert and update both bind.
    fn params(&self, id: &str, tenant: TenantId, now: Timestamp) -> Vec<Box<dyn rusqlite::ToSql + '_>> {
        let filters = serde_json::Value::Object(self.filters.clone()).to_string();
        vec![
            Box::new(id.to_owned()),
            Box::new(tenant),
            Box::new(self.name),
            Box::new(self.format),
            Box::new(filters),
            Box::new(self.cron),
            Box::new(self.timezone),
            Box::new(self.channel_id),
            Box::new(self.enabled),
            Box::new(self.next_run_at),
            Box::new(now),
        ]
    }
}

pub fn insert(conn: &Connection, tenant: TenantId, f: &Fields<'_>, now: Timestamp) -> Result<ScheduledExport> {
    let id = uuid::Uuid::new_v4().to_string();
    conn.execute(
        "INSERT INTO scheduled_exports (id, tenant_id, name, format, filters_json, cron, timezone, channel_id, enabled,
            next_run_at, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11)",
        rusqlite::params_from_iter(f.params(&id, tenant, now)),
    )?;
    get(conn, tenant, &id)
}

pub fn update(
    conn: &Connection,
    tenant: TenantId,
    id: &str,
    f: &Fields<'_>,
    now: Timestamp,
) -> Result<ScheduledExport> {
    let n = conn.execute(
        "UPDATE scheduled_exports SET name = ?3, format = ?4, filters_json = ?5, cron = ?6, timezone = ?7,
            channel_id = ?8, enabled = ?9, next_run_at = ?10, updated_at = ?11
         WHERE id = ?1 AND tenant_id = ?2",
        rusqlite::params_from_iter(f.params(id, tenant, now)),
    )?;
    if n == 0 {
        return Err(Error::NotFound);
    }
    get(conn, tenant, id)
}

pub fn get(conn: &Connection, tenant: TenantId, id: &str) -> Result<ScheduledExport> {
    let mut stmt =
        conn.prepare_cached(&format!("SELECT {COLS} FROM scheduled_exports WHERE id = ?1 AND tenant_id = ?2"))?;
    stmt.query_row(params![id, tenant], from_row).optional()?.ok_or(Error::NotFound)
}

pub fn list(conn: &Connection, tenant: TenantId) -> Result<Vec<ScheduledExport>> {
    let mut stmt =
        conn.prepare_cached(&format!("SELECT {COLS} FROM scheduled_exports WHERE tenant_id = ?1 ORDER BY name, id"))?;
    Ok(stmt.query_map([tenant], from_row)?.collect::<rusqlite::Result<_>>()?)
}

pub fn delete(conn: &Connection, tenant: TenantId, id: &str) -> Result<ScheduledExport> {
    let export = get(conn, tenant, id)?;
    conn.execute("DELETE FROM scheduled_exports WHERE id = ?1 AND tenant_id = ?2", params![id, tenant])?;
    Ok(export)
}

/// Enabled schedules of every team whose time has come, the most overdue first.
pub fn due(conn: &Connection, now: Timestamp, limit: u32) -> Result<Vec<ScheduledExport>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLS} FROM scheduled_exports WHERE enabled = 1 AND next_run_at <= ?1 ORDER BY next_run_at, id LIMIT ?2"
    ))?;
    Ok(stmt.query_map(params![now, limit], from_row)?.collect::<rusqlite::Result<_>>()?)
}

/// Takes a due run: moves `next_run_at` from `was` to `next`. False when another pass (or an
/// edit) changed it since it was read, so a run happens once.
pub fn claim(conn: &Connection, id: &str, was: Timestamp, next: Timestamp) -> Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE scheduled_exports SET next_run_at = ?3 WHERE id = ?1 AND next_run_at = ?2 AND enabled = 1",
        )?
        .execute(params![id, was, next])?;
    Ok(n == 1)
}

/// How a run went: `sending` with the outbox row it queued, or `failed` with why.
pub fn record_run(
    conn: &Connection,
    id: &str,
    at: Timestamp,
    status: &str,
    error: Option<&str>,
    delivery_id: Option<&str>,
) -> Result<()> {
    conn.prepare_cached(
        "UPDATE scheduled_exports SET last_run_at = ?2, last_status = ?3, last_error = ?4, last_delivery_id = ?5
         WHERE id = ?1",
    )?
    .execute(params![id, at, status, error, delivery_id])?;
    Ok(())
}
