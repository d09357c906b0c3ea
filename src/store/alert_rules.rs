//! Alert rules (SPEC 2.15, 4.6) and their cooldown ledger. Every statement is scoped by tenant.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;

use super::{Error, Result};
use crate::{
    domain::alert_rules::{
        CLOCK_RULE_KEY, CLOCK_RULE_NAME, DEFAULT_COOLDOWN_MINUTES, OFFLINE_RULE_KEY, OFFLINE_RULE_NAME,
    },
    ids::TenantId,
    time::Timestamp,
};

/// A rule as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub id: String,
    pub tenant_id: TenantId,
    pub name: String,
    /// `detection`, `absence` or `trend`.
    pub trigger: String,
    /// `satellite_offline` for the system rule; system rules cannot be deleted or retyped.
    pub system_key: Option<String>,
    pub conditions: serde_json::Value,
    pub channel_ids: Vec<String>,
    pub cooldown_minutes: i64,
    pub enabled: bool,
    pub last_fired_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

const COLS: &str = "id, tenant_id, name, trigger_type, system_key, conditions_json, channel_ids_json, cooldown_minutes,
    enabled, last_fired_at, created_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Rule> {
    let conditions: String = r.get(5)?;
    let channels: String = r.get(6)?;
    Ok(Rule {
        id: r.get(0)?,
        tenant_id: r.get(1)?,
        name: r.get(2)?,
        trigger: r.get(3)?,
        system_key: r.get(4)?,
        conditions: serde_json::from_str(&conditions).unwrap_or_default(),
        channel_ids: serde_json::from_str(&channels).unwrap_or_default(),
        cooldown_minutes: r.get(7)?,
        enabled: r.get(8)?,
        last_fired_at: r.get(9)?,
        created_at: r.get(10)?,
        updated_at: r.get(11)?,
    })
}

/// The writable part of a rule.
#[derive(Debug, Clone)]
pub struct RuleFields<'a> {
    pub name: &'a str,
    pub trigger: &'a str,
    pub conditions: &'a serde_json::Value,
    pub channel_ids: &'a [String],
    pub cooldown_minutes: i64,
    pub enabled: bool,
}

pub fn insert(conn: &Connection, tenant: TenantId, f: &RuleFields<'_>, now: Timestamp) -> Result<Rule> {
    let id = uuid::Uuid::new_v4().to_string();
    conn.execute(
        "INSERT INTO alert_rules (id, tenant_id, name, trigger_type, conditions_json, channel_ids_json, cooldown_minutes,
            enabled, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)",
        params![
            id,
            tenant,
            f.name,
            f.trigger,
            f.conditions.to_string(),
            serde_json::to_string(f.channel_ids).unwrap_or_else(|_| "[]".into()),
            f.cooldown_minutes,
            f.enabled,
            now
        ],
    )?;
    get(conn, tenant, &id)
}

/// Rewrites `tenant`'s rule `id`. A system rule keeps its name, trigger and (empty) conditions.
pub fn update(conn: &Connection, tenant: TenantId, id: &str, f: &RuleFields<'_>, now: Timestamp) -> Result<Rule> {
    let n = conn.execute(
        "UPDATE alert_rules SET
            name = CASE WHEN system_key IS NULL THEN ?3 ELSE name END,
            trigger_type = CASE WHEN system_key IS NULL THEN ?4 ELSE trigger_type END,
            conditions_json = CASE WHEN system_key IS NULL THEN ?5 ELSE conditions_json END,
            channel_ids_json = ?6, cooldown_minutes = ?7, enabled = ?8, updated_at = ?9
         WHERE id = ?1 AND tenant_id = ?2",
        params![
            id,
            tenant,
            f.name,
            f.trigger,
            f.conditions.to_string(),
            serde_json::to_string(f.channel_ids).unwrap_or_else(|_| "[]".into()),
            f.cooldown_minutes,
            f.enabled,
            now
        ],
    )?;
    if n == 0 {
        return Err(Error::NotFound);
    }
    get(conn, tenant, id)
}

pub fn get(conn: &Connection, tenant: TenantId, id: &str) -> Result<Rule> {
    conn.query_row(
        &format!("SELECT {COLS} FROM alert_rules WHERE id = ?1 AND tenant_id = ?2"),
        params![id, tenant],
        from_row,
    )
    .optional()?
    .ok_or(Error::NotFound)
}

/// `tenant`'s rules, the system rules first, then by name.
pub fn list(conn: &Connection, tenant: TenantId) -> Result<Vec<Rule>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLS} FROM alert_rules WHERE tenant_id = ?1 ORDER BY system_key IS NULL, name, id"
    ))?;
    Ok(stmt.query_map([tenant], from_row)?.collect::<rusqlite::Result<_>>()?)
}

/// Deletes a rule that is not a system rule; `NotFound` for an unknown or system rule.
pub fn delete(conn: &Connection, tenant: TenantId, id: &str) -> Result<()> {
    let n = conn.execute(
        "DELETE FROM alert_rules WHERE id = ?1 AND tenant_id = ?2 AND system_key IS NULL",
        params![id, tenant],
    )?;
    if n == 0 { Err(Error::NotFound) } else { Ok(()) }
}

/// `tenant`'s enabled user rules of one trigger type.
pub fn enabled(conn: &Connection, tenant: TenantId, trigger: &str) -> Result<Vec<Rule>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLS} FROM alert_rules
         WHERE tenant_id = ?1 AND trigger_type = ?2 AND enabled = 1 AND system_key IS NULL ORDER BY id"
    ))?;
    Ok(stmt.query_map(params![tenant, trigger], from_row)?.collect::<rusqlite::Result<_>>()?)
}

/// Every team's enabled user rules of one trigger type (the periodic absence and trend checks).
pub fn enabled_everywhere(conn: &Connection, trigger: &str) -> Result<Vec<Rule>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLS} FROM alert_rules WHERE trigger_type = ?1 AND enabled = 1 AND system_key IS NULL ORDER BY id"
    ))?;
    Ok(stmt.query_map([trigger], from_row)?.collect::<rusqlite::Result<_>>()?)
}

/// The team's system rule `satellite_offline`, created with the team (and by migration 0008 for
/// older teams); created here too if it is somehow missing.
pub fn offline_rule(conn: &Connection, tenant: TenantId) -> Result<Rule> {
    system_rule(conn, tenant, OFFLINE_RULE_KEY, OFFLINE_RULE_NAME)
}

/// The team's system rule `satellite_clock` (a satellite's clock found wrong), created with the
/// team (and by migration 0024 for older teams); created here too if it is somehow missing.
pub fn clock_rule(conn: &Connection, tenant: TenantId) -> Result<Rule> {
    system_rule(conn, tenant, CLOCK_RULE_KEY, CLOCK_RULE_NAME)
}

fn system_rule(conn: &Connection, tenant: TenantId, key: &str, name: &str) -> Result<Rule> {
    conn.execute(
        "INSERT OR IGNORE INTO alert_rules (id, tenant_id, name, trigger_type, system_key, cooldown_minutes)
         VALUES (?1, ?2, ?3, 'absence', ?4, ?5)",
        params![uuid::Uuid::new_v4().to_string(), tenant, name, key, DEFAULT_COOLDOWN_MINUTES],
    )?;
    Ok(conn.query_row(
        &format!("SELECT {COLS} FROM alert_rules WHERE tenant_id = ?1 AND system_key = ?2"),
        params![tenant, key],
        from_row,
    )?)
}

/// When `rule` last fired for `key`.
pub fn last_fired(conn: &Connection, rule: &str, key: &str) -> Result<Option<Timestamp>> {
    let mut stmt = conn.prepare_cached("SELECT fired_at FROM alert_cooldowns WHERE rule_id = ?1 AND key = ?2")?;
    Ok(stmt.query_row(params![rule, key], |r| r.get(0)).optional()?)
}

/// Records that `rule` fired for `key` now.
pub fn fired(conn: &Connection, rule: &str, key: &str, now: Timestamp) -> Result<()> {
    judged(conn, rule, key, now)?;
    conn.prepare_cached("UPDATE alert_rules SET last_fired_at = ?2 WHERE id = ?1")?.execute(params![rule, now])?;
    Ok(())
}

/// Records that `rule` has dealt with `key` (a trend rule's day), whether it fired or not.
pub fn judged(conn: &Connection, rule: &str, key: &str, now: Timestamp) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO alert_cooldowns (rule_id, key, fired_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (rule_id, key) DO UPDATE SET fired_at = excluded.fired_at",
    )?
    .execute(params![rule, key, now])?;
    Ok(())
}

/// Drops `channel` from the channel lists of `tenant`'s rules (the channel is being deleted).
pub fn unlink_channel(conn: &Connection, tenant: TenantId, channel: &str) -> Result<usize> {
    let rules = list(conn, tenant)?;
    let mut changed = 0;
    for r in rules.into_iter().filter(|r| r.channel_ids.iter().any(|c| c == channel)) {
        let kept: Vec<&String> = r.channel_ids.iter().filter(|c| *c != channel).collect();
        conn.execute(
            "UPDATE alert_rules SET channel_ids_json = ?3 WHERE id = ?1 AND tenant_id = ?2",
            params![r.id, tenant, serde_json::to_string(&kept).unwrap_or_else(|_| "[]".into())],
        )?;
        changed += 1;
    }
    Ok(changed)
}
