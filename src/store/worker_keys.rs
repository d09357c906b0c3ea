//! Remote inference workers' credentials (migration 0031): one row per key a platform admin
//! minted, holding the SHA-256 of its secret, never the secret itself.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;

use super::Result;
use crate::{ids::UserId, time::Timestamp};

/// A worker key as listed (no secret).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerKey {
    pub id: uuid::Uuid,
    pub name: String,
    #[schema(value_type = String)]
    pub created_at: Timestamp,
    #[schema(value_type = Option<String>)]
    pub last_seen_at: Option<Timestamp>,
    /// The machine name the worker gave when it last joined.
    pub machine: Option<String>,
    #[schema(value_type = Option<String>)]
    pub revoked_at: Option<Timestamp>,
}

const COLS: &str = "id, name, created_at, last_seen_at, machine, revoked_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<WorkerKey> {
    let id: String = r.get(0)?;
    Ok(WorkerKey {
        id: id
            .parse()
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e)))?,
        name: r.get(1)?,
        created_at: r.get(2)?,
        last_seen_at: r.get(3)?,
        machine: r.get(4)?,
        revoked_at: r.get(5)?,
    })
}

pub fn insert(
    conn: &Connection,
    id: uuid::Uuid,
    name: &str,
    secret_hash: &str,
    by: Option<UserId>,
    now: Timestamp,
) -> Result<WorkerKey> {
    conn.execute(
        "INSERT INTO worker_keys (id, name, secret_hash, created_by, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id.to_string(), name, secret_hash, by, now],
    )?;
    Ok(conn.query_row(&format!("SELECT {COLS} FROM worker_keys WHERE id = ?1"), [id.to_string()], from_row)?)
}

/// Every key, newest first, revoked ones included (with their time).
pub fn list(conn: &Connection) -> Result<Vec<WorkerKey>> {
    let mut stmt = conn.prepare(&format!("SELECT {COLS} FROM worker_keys ORDER BY created_at DESC, id"))?;
    let rows = stmt.query_map([], from_row)?.collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// The secret's hash of a key that is not revoked, for a broker login.
pub fn live_hash(conn: &Connection, id: uuid::Uuid) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT secret_hash FROM worker_keys WHERE id = ?1 AND revoked_at IS NULL")?
        .query_row([id.to_string()], |r| r.get(0))
        .optional()?)
}

/// Revokes a key; `false` when there is no such key or it was already revoked.
pub fn revoke(conn: &Connection, id: uuid::Uuid, now: Timestamp) -> Result<bool> {
    Ok(conn.execute(
        "UPDATE worker_keys SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
        params![id.to_string(), now],
    )? > 0)
}

/// Whether the key exists at all (revoked or not).
pub fn exists(conn: &Connection, id: uuid::Uuid) -> Result<bool> {
    Ok(conn.query_row("SELECT EXISTS (SELECT 1 FROM worker_keys WHERE id = ?1)", [id.to_string()], |r| r.get(0))?)
}

/// Records that the worker was heard from, and the machine it named.
pub fn seen(conn: &Connection, id: uuid::Uuid, machine: Option<&str>, now: Timestamp) -> Result<()> {
    conn.prepare_cached("UPDATE worker_keys SET last_seen_at = ?2, machine = coalesce(?3, machine) WHERE id = ?1")?
        .execute(params![id.to_string(), now, machine])?;
    Ok(())
}
