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
    /// The name of what the entry is about (a satellite, a person, a key ...): the one recorded
    /// when it was written, else its name today, else the name its details kept.
    pub target_name: Option<String>,
    /// The action in words, naming its object ([`crate::domain::audit_words::summary`]).
    pub summary: String,
    /// What changed, `{setting, label, from, to}` ... ([`crate::domain::audit_changes::changes`],
    /// with the setting's label in words); empty for entries that recorded none.
    pub changes: Vec<serde_json::Value>,
    /// The same changes (or what an older entry kept) in words, one line each.
    pub change_lines: Vec<String>,
}

/// The table holding the objects of `target_type`, each with an `id` and a `name`.
fn target_table(target_type: &str) -> Option<&'static str> {
    Some(match target_type {
        "satellite" => "satellites",
        "user" => "users",
        "tenant" => "tenants",
        "api_key" => "api_keys",
        "worker_key" => "worker_keys",
        "alert_rule" => "alert_rules",
        "alert_channel" => "alert_channels",
        "scheduled_export" => "scheduled_exports",
        "passkey" => "mfa_passkeys",
        _ => return None,
    })
}

/// The name `target` has today, if it still exists.
fn name_today(conn: &Connection, target_type: Option<&str>, target_id: Option<&str>) -> Option<String> {
    let table = target_table(target_type?)?;
    conn.query_row(&format!("SELECT name FROM {table} WHERE id = ?1"), [target_id?], |r| r.get(0)).ok()
}

/// Writes `e` with its secrets masked ([`crate::domain::audit_changes::scrub`]) and the name of
/// its object as it is now (`details.targetName`), so the entry still names it once it is gone.
pub fn record(conn: &Connection, e: &Entry, now: Timestamp) -> Result<()> {
    let mut details = if e.details.is_object() { e.details.clone() } else { serde_json::json!({}) };
    crate::domain::audit_changes::scrub(&mut details);
    if details.get("targetName").is_none()
        && let Some(name) = name_today(conn, e.target_type.as_deref(), e.target_id.as_deref())
    {
        details["targetName"] = serde_json::Value::from(name);
    }
    let details = details.to_string();
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
    let mut details: serde_json::Value = serde_json::from_str(&details).unwrap_or(serde_json::Value::Null);
    // Entries written before secrets were masked on the way in are masked on the way out.
    crate::domain::audit_changes::scrub(&mut details);
    Ok(Stored {
        id: r.get(0)?,
        tenant_id: r.get(1)?,
        actor_user_id: r.get(2)?,
        actor_api_key_id: r.get(3)?,
        action: r.get(4)?,
        target_type: r.get(5)?,
        target_id: r.get(6)?,
        ip: r.get(7)?,
        details,
        created_at: r.get(9)?,
        user_name: r.get(10)?,
        user_email: r.get(11)?,
        tenant_name: r.get(12)?,
        target_name: None,
        summary: String::new(),
        changes: Vec::new(),
        change_lines: Vec::new(),
    })
}

/// Fills in the object's name and the words of a listed entry.
fn described(conn: &Connection, mut e: Stored) -> Stored {
    use crate::domain::audit_words;
    let kept = |k: &str| e.details[k].as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    e.target_name = kept("targetName")
        .or_else(|| name_today(conn, e.target_type.as_deref(), e.target_id.as_deref()))
        .or_else(|| kept("name"));
    e.summary = audit_words::summary(&e.action, e.target_name.as_deref(), &e.details);
    e.changes = e.details["changes"].as_array().cloned().unwrap_or_default();
    for c in &mut e.changes {
        let label = audit_words::setting_label(c["setting"].as_str().unwrap_or_default());
        if let Some(map) = c.as_object_mut() {
            map.insert("label".into(), label.into());
        }
    }
    e.change_lines = audit_words::change_lines(&e.action, &e.details);
    e
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
    let rows = rows.into_iter().map(|e| described(conn, e)).collect();
    Ok((rows, total.max(0) as u64))
}

/// Every action the log holds, for the filter's choices.
pub fn actions(conn: &Connection) -> Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT DISTINCT action FROM audit_log ORDER BY action")?;
    Ok(stmt.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?)
}
