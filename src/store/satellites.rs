//! Satellites. For now: what happens to a person's devices when they leave a team.

use rusqlite::{Connection, params};

use super::Result;
use crate::ids::{SatelliteId, TenantId, UserId};

/// A password hash no password matches: the device's broker login is dropped.
pub const REVOKED_PASSWORD: &str = "!revoked";

/// The devices `user` registered in `tenant` become team-owned. Unless `keep`, they are also
/// disconnected: their API keys expire and their broker password stops working. Returns the ids.
pub fn release_registrant_devices(
    conn: &Connection,
    tenant: TenantId,
    user: UserId,
    keep: bool,
    now: &str,
) -> Result<Vec<SatelliteId>> {
    let mut stmt = conn.prepare("SELECT id FROM satellites WHERE tenant_id = ?1 AND registered_by = ?2")?;
    let ids: Vec<SatelliteId> =
        stmt.query_map(params![tenant, user], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    for id in &ids {
        conn.execute("UPDATE satellites SET registered_by = NULL, updated_at = ?2 WHERE id = ?1", params![id, now])?;
        if !keep {
            super::api_keys::revoke_for_satellite(conn, *id, now)?;
            conn.execute("UPDATE satellites SET mqtt_password_hash = ?2 WHERE id = ?1", params![id, REVOKED_PASSWORD])?;
        }
    }
    Ok(ids)
}
