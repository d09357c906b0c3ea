//! The satellite monitor's two writes: mark the team's satellites silent since `cutoff` offline,
//! and mark those heard from since `cutoff` online again; and the ingest's one: mark a satellite
//! that said it stopped offline at once. Each returns only the satellites whose state changed, so
//! an outage is reported once.

use rusqlite::{Connection, params};

use super::Result;
use crate::{
    ids::{SatelliteId, TenantId},
    mqtt::protocol::STOPPED,
    time::Timestamp,
};

/// A satellite whose state the monitor changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    pub id: SatelliteId,
    pub name: String,
    pub last_seen_at: Option<Timestamp>,
}

fn changed(r: &rusqlite::Row<'_>) -> rusqlite::Result<Changed> {
    Ok(Changed { id: r.get(0)?, name: r.get(1)?, last_seen_at: r.get(2)? })
}

/// Satellites of `tenant` last seen at or before `cutoff` that were online: now offline since `now`.
pub fn mark_offline(conn: &Connection, tenant: TenantId, cutoff: Timestamp, now: Timestamp) -> Result<Vec<Changed>> {
    let mut stmt = conn.prepare_cached(
        "UPDATE satellites SET offline_since = ?3
         WHERE tenant_id = ?1 AND deleted_at IS NULL AND offline_since IS NULL
           AND last_seen_at IS NOT NULL AND last_seen_at <= ?2
         RETURNING id, name, last_seen_at",
    )?;
    let rows = stmt.query_map(params![tenant, cutoff, now], changed)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Satellites of `tenant` marked offline that have been heard from since `cutoff`: online again,
/// unless the last thing heard was that it stopped ([`STOPPED`]); its next heartbeat says otherwise.
pub fn mark_online(conn: &Connection, tenant: TenantId, cutoff: Timestamp) -> Result<Vec<Changed>> {
    let mut stmt = conn.prepare_cached(
        "UPDATE satellites SET offline_since = NULL
         WHERE tenant_id = ?1 AND deleted_at IS NULL AND offline_since IS NOT NULL AND last_seen_at > ?2
           AND coalesce(heartbeat_state, '') <> ?3
         RETURNING id, name, last_seen_at",
    )?;
    let rows = stmt.query_map(params![tenant, cutoff, STOPPED], changed)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A satellite whose heartbeat said it stopped: offline since `now`, if it was online.
pub fn mark_stopped(conn: &Connection, tenant: TenantId, id: SatelliteId, now: Timestamp) -> Result<Option<Changed>> {
    let mut stmt = conn.prepare_cached(
        "UPDATE satellites SET offline_since = ?3
         WHERE tenant_id = ?1 AND id = ?2 AND deleted_at IS NULL AND offline_since IS NULL
         RETURNING id, name, last_seen_at",
    )?;
    let mut rows = stmt.query_map(params![tenant, id, now], changed)?;
    Ok(rows.next().transpose()?)
}
