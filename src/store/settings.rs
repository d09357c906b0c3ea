//! Key/value settings per scope (`platform` or a tenant id), values as JSON.

use rusqlite::{Connection, params};
use serde::{Serialize, de::DeserializeOwned};

use super::Result;

pub const PLATFORM: &str = "platform";

/// Reads every stored key of `scope` over `T::default()`; unknown keys are ignored.
pub fn load<T: Serialize + DeserializeOwned + Default>(conn: &Connection, scope: &str) -> Result<T> {
    let mut value = serde_json::to_value(T::default()).unwrap_or_default();
    let mut stmt = conn.prepare("SELECT key, value_json FROM settings WHERE scope = ?1")?;
    let rows = stmt.query_map([scope], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    if let serde_json::Value::Object(map) = &mut value {
        for row in rows {
            let (key, json) = row?;
            if let (Some(slot), Ok(v)) = (map.get_mut(&key), serde_json::from_str(&json)) {
                *slot = v;
            }
        }
    }
    // A stored value of the wrong shape (from an older version) falls back to the defaults.
    Ok(serde_json::from_value(value).unwrap_or_default())
}

/// Stores every field of `settings` under `scope`.
pub fn save<T: Serialize>(conn: &mut Connection, scope: &str, settings: &T, now: &str) -> Result<()> {
    let tx = conn.transaction()?;
    if let serde_json::Value::Object(map) = serde_json::to_value(settings).unwrap_or_default() {
        for (key, value) in map {
            tx.execute(
                "INSERT INTO settings (scope, key, value_json, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (scope, key) DO UPDATE SET value_json = excluded.value_json, updated_at = excluded.updated_at",
                params![scope, key, value.to_string(), now],
            )?;
        }
    }
    tx.commit()?;
    Ok(())
}
