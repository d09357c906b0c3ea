//! Key/value settings per scope (`platform` or a tenant id), values as JSON.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use super::Result;
use crate::{
    domain::settings::{StoredSettings, resolve},
    time::Timestamp,
};

pub const PLATFORM: &str = "platform";

/// Reads every stored key of `scope` over `T::default()`; unknown keys are ignored. A malformed
/// value is refused alone and logged, and a security setting then takes its strictest value
/// ([`resolve`]): the rest of the scope keeps what was stored.
pub fn load<T: StoredSettings>(conn: &Connection, scope: &str) -> Result<T> {
    let mut stmt = conn.prepare_cached("SELECT key, value_json FROM settings WHERE scope = ?1")?;
    let rows = stmt
        .query_map([scope], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let (settings, refused) = resolve(rows);
    for r in refused {
        tracing::error!(
            scope,
            key = %r.key,
            reason = %r.reason,
            "stored setting is malformed and was refused; {}. Save the setting again to repair it",
            if r.fail_closed { "it takes its strictest value" } else { "it takes its default" }
        );
    }
    Ok(settings)
}

/// Stores every field of `settings` under `scope`.
pub fn save<T: Serialize>(conn: &mut Connection, scope: &str, settings: &T, now: Timestamp) -> Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    save_in(&tx, scope, settings, now)?;
    tx.commit()?;
    Ok(())
}

/// [`save`] inside the caller's transaction (a use case that reads, changes and writes settings
/// in one go).
pub fn save_in<T: Serialize>(tx: &Connection, scope: &str, settings: &T, now: Timestamp) -> Result<()> {
    if let serde_json::Value::Object(map) = serde_json::to_value(settings).unwrap_or_default() {
        for (key, value) in map {
            tx.execute(
                "INSERT INTO settings (scope, key, value_json, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (scope, key) DO UPDATE SET value_json = excluded.value_json, updated_at = excluded.updated_at",
                params![scope, key, value.to_string(), now],
            )?;
        }
    }
    Ok(())
}

/// One stored value (JSON text) of `scope`, read alone: for the hub's own bookkeeping rows that no
/// settings struct holds.
pub fn get_one(conn: &Connection, scope: &str, key: &str) -> Result<Option<String>> {
    let mut stmt = conn.prepare_cached("SELECT value_json FROM settings WHERE scope = ?1 AND key = ?2")?;
    Ok(stmt.query_row(params![scope, key], |r| r.get(0)).optional()?)
}

/// Stores one value (JSON text) of `scope`.
pub fn put_one(conn: &Connection, scope: &str, key: &str, value_json: &str, now: Timestamp) -> Result<()> {
    conn.execute(
        "INSERT INTO settings (scope, key, value_json, updated_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (scope, key) DO UPDATE SET value_json = excluded.value_json, updated_at = excluded.updated_at",
        params![scope, key, value_json, now],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::settings::{DevicePolicy, TenantSettings};

    #[test]
    fn a_malformed_row_in_sqlite_does_not_relax_device_policy() {
        let mut conn = Connection::open_in_memory().expect("db");
        super::super::migrate::run(&mut conn).expect("migrate");
        conn.execute_batch(
            "INSERT INTO settings (scope, key, value_json) VALUES ('t', 'device_policy', '\"admins\"');
             INSERT INTO settings (scope, key, value_json) VALUES ('t', 'heartbeat_interval_sec', '\"soon\"');
             INSERT INTO settings (scope, key, value_json) VALUES ('t', 'outbox_max_age_hours', '12');",
        )
        .expect("rows");
        let s: TenantSettings = load(&conn, "t").expect("load");
        assert_eq!(s.device_policy, DevicePolicy::Admins);
        assert_eq!(s.outbox_max_age_hours, 12);
        assert_eq!(s.heartbeat_interval_sec, TenantSettings::default().heartbeat_interval_sec);
    }
}
