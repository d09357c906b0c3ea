//! Second factors of people: the sealed TOTP secret and its last step, backup codes (hashed),
//! passkeys (as webauthn-rs serialises them), remembered devices (hashed cookie) and the key check.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;

use super::{Error, Result};
use crate::{ids::UserId, time::Timestamp};

/// The sealed TOTP secret and the last step accepted.
pub struct Totp {
    pub secret_enc: String,
    pub last_step: Option<i64>,
}

pub fn totp(conn: &Connection, user: UserId) -> Result<Option<Totp>> {
    Ok(conn
        .query_row("SELECT secret_enc, last_step FROM mfa_totp WHERE user_id = ?1", [user], |r| {
            Ok(Totp { secret_enc: r.get(0)?, last_step: r.get(1)? })
        })
        .optional()?)
}

/// Stores the confirmed secret (with the step its first code matched) and turns MFA on.
pub fn enable_totp(conn: &Connection, user: UserId, secret_enc: &str, step: i64, now: Timestamp) -> Result<()> {
    conn.execute(
        "INSERT INTO mfa_totp (user_id, secret_enc, last_step, created_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (user_id) DO UPDATE SET secret_enc = excluded.secret_enc, last_step = excluded.last_step,
             created_at = excluded.created_at",
        params![user, secret_enc, step, now],
    )?;
    conn.execute("UPDATE users SET mfa_enabled = 1, mfa_enrolled_at = ?2 WHERE id = ?1", params![user, now])?;
    Ok(())
}

/// Records `step` as used if it is newer than the last one; `false` when it is a replay.
pub fn use_step(conn: &Connection, user: UserId, step: i64) -> Result<bool> {
    let n = conn.execute(
        "UPDATE mfa_totp SET last_step = ?2 WHERE user_id = ?1 AND (last_step IS NULL OR last_step < ?2)",
        params![user, step],
    )?;
    Ok(n == 1)
}

/// Replaces every backup code of `user` with these hashes.
pub fn replace_backup_codes(conn: &Connection, user: UserId, hashes: &[String], now: Timestamp) -> Result<()> {
    conn.execute("DELETE FROM mfa_backup_codes WHERE user_id = ?1", [user])?;
    let mut stmt = conn
        .prepare_cached("INSERT INTO mfa_backup_codes (id, user_id, code_hash, created_at) VALUES (?1, ?2, ?3, ?4)")?;
    for h in hashes {
        stmt.execute(params![uuid::Uuid::new_v4().to_string(), user, h, now])?;
    }
    Ok(())
}

/// Marks the unused code with this hash used; `false` when there is none (wrong or already used).
pub fn use_backup_code(conn: &Connection, user: UserId, hash: &str, now: Timestamp) -> Result<bool> {
    let n = conn.execute(
        "UPDATE mfa_backup_codes SET used_at = ?3 WHERE id = (
             SELECT id FROM mfa_backup_codes WHERE user_id = ?1 AND code_hash = ?2 AND used_at IS NULL LIMIT 1)",
        params![user, hash, now],
    )?;
    Ok(n == 1)
}

/// Whether `user` had a backup code with this hash and already used it.
pub fn backup_code_spent(conn: &Connection, user: UserId, hash: &str) -> Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM mfa_backup_codes WHERE user_id = ?1 AND code_hash = ?2 AND used_at IS NOT NULL",
            params![user, hash],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

pub fn backup_codes_left(conn: &Connection, user: UserId) -> Result<u32> {
    Ok(conn.query_row("SELECT count(*) FROM mfa_backup_codes WHERE user_id = ?1 AND used_at IS NULL", [user], |r| {
        r.get(0)
    })?)
}

/// A passkey as listed (never the credential itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Passkey {
    pub id: String,
    pub name: String,
    pub created_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
}

pub fn add_passkey(
    conn: &Connection,
    user: UserId,
    name: &str,
    credential_id: &str,
    credential_json: &str,
    now: Timestamp,
) -> Result<Passkey> {
    let id = uuid::Uuid::new_v4().to_string();
    conn.execute(
        "INSERT INTO mfa_passkeys (id, user_id, name, credential_id, credential_json, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![id, user, name, credential_id, credential_json, now],
    )?;
    Ok(Passkey { id, name: name.to_owned(), created_at: now, last_used_at: None })
}

pub fn passkeys(conn: &Connection, user: UserId) -> Result<Vec<Passkey>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, name, created_at, last_used_at FROM mfa_passkeys WHERE user_id = ?1 ORDER BY created_at, id",
    )?;
    let rows = stmt.query_map([user], |r| {
        Ok(Passkey { id: r.get(0)?, name: r.get(1)?, created_at: r.get(2)?, last_used_at: r.get(3)? })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// `(row id, credential JSON)` of every passkey of `user`.
pub fn passkey_credentials(conn: &Connection, user: UserId) -> Result<Vec<(String, String)>> {
    let mut stmt =
        conn.prepare_cached("SELECT id, credential_json FROM mfa_passkeys WHERE user_id = ?1 ORDER BY created_at")?;
    let rows = stmt.query_map([user], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Stores the credential's new state (its sign counter) after a sign-in.
pub fn passkey_used(conn: &Connection, user: UserId, id: &str, credential_json: &str, now: Timestamp) -> Result<()> {
    conn.execute(
        "UPDATE mfa_passkeys SET credential_json = ?3, last_used_at = ?4 WHERE id = ?2 AND user_id = ?1",
        params![user, id, credential_json, now],
    )?;
    Ok(())
}

pub fn delete_passkey(conn: &Connection, user: UserId, id: &str) -> Result<()> {
    let n = conn.execute("DELETE FROM mfa_passkeys WHERE id = ?1 AND user_id = ?2", params![id, user])?;
    if n == 0 { Err(Error::NotFound) } else { Ok(()) }
}

/// A remembered device as listed (never its cookie).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Device {
    pub id: String,
    pub user_agent: Option<String>,
    pub ip: Option<String>,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
}

fn device(r: &Row<'_>) -> rusqlite::Result<Device> {
    Ok(Device {
        id: r.get(0)?,
        user_agent: r.get(1)?,
        ip: r.get(2)?,
        created_at: r.get(3)?,
        expires_at: r.get(4)?,
        last_used_at: r.get(5)?,
    })
}

/// What a new remembered device is stored with.
pub struct NewDevice<'a> {
    pub token_hash: &'a str,
    pub user_agent: Option<&'a str>,
    pub ip: &'a str,
    pub expires_at: Timestamp,
}

pub fn remember_device(conn: &Connection, user: UserId, d: &NewDevice<'_>, now: Timestamp) -> Result<()> {
    conn.execute(
        "INSERT INTO mfa_remembered_devices (id, user_id, token_hash, user_agent, ip, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![uuid::Uuid::new_v4().to_string(), user, d.token_hash, d.user_agent, d.ip, now, d.expires_at],
    )?;
    Ok(())
}

/// Whether `user` has a live remembered device with this cookie hash; records its use.
pub fn remembered(conn: &Connection, user: UserId, token_hash: &str, now: Timestamp) -> Result<bool> {
    let n = conn.execute(
        "UPDATE mfa_remembered_devices SET last_used_at = ?3
         WHERE user_id = ?1 AND token_hash = ?2 AND expires_at > ?3",
        params![user, token_hash, now],
    )?;
    Ok(n == 1)
}

pub fn devices(conn: &Connection, user: UserId, now: Timestamp) -> Result<Vec<Device>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, user_agent, ip, created_at, expires_at, last_used_at FROM mfa_remembered_devices
         WHERE user_id = ?1 AND expires_at > ?2 ORDER BY created_at DESC, id",
    )?;
    let rows = stmt.query_map(params![user, now], device)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn forget_device(conn: &Connection, user: UserId, id: &str) -> Result<()> {
    let n = conn.execute("DELETE FROM mfa_remembered_devices WHERE id = ?1 AND user_id = ?2", params![id, user])?;
    if n == 0 { Err(Error::NotFound) } else { Ok(()) }
}

/// Forgets every remembered device of `user` (a password change or reset, a block): the next
/// sign-in asks for the second factor again. Returns how many were forgotten.
pub fn forget_all_devices(conn: &Connection, user: UserId) -> Result<usize> {
    Ok(conn.execute("DELETE FROM mfa_remembered_devices WHERE user_id = ?1", [user])?)
}

/// Turns MFA off for `user` and wipes every second factor and remembered device.
pub fn wipe(conn: &Connection, user: UserId) -> Result<()> {
    conn.execute("DELETE FROM mfa_totp WHERE user_id = ?1", [user])?;
    conn.execute("DELETE FROM mfa_backup_codes WHERE user_id = ?1", [user])?;
    conn.execute("DELETE FROM mfa_passkeys WHERE user_id = ?1", [user])?;
    conn.execute("DELETE FROM mfa_remembered_devices WHERE user_id = ?1", [user])?;
    conn.execute("UPDATE users SET mfa_enabled = 0, mfa_enrolled_at = NULL WHERE id = ?1", [user])?;
    Ok(())
}

/// Whether any team of `user` requires MFA (`mfa_required`; a malformed value counts as required).
pub fn required_by_a_team(conn: &Connection, user: UserId) -> Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM memberships m JOIN settings s ON s.scope = m.tenant_id AND s.key = 'mfa_required'
             WHERE m.user_id = ?1 AND s.value_json != 'false' LIMIT 1",
            [user],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// The sealed key-check value, if one was stored.
pub fn key_check(conn: &Connection) -> Result<Option<String>> {
    Ok(conn.query_row("SELECT value_enc FROM mfa_key_check WHERE id = 1", [], |r| r.get(0)).optional()?)
}

pub fn set_key_check(conn: &Connection, value_enc: &str, now: Timestamp) -> Result<()> {
    conn.execute(
        "INSERT OR IGNORE INTO mfa_key_check (id, value_enc, created_at) VALUES (1, ?1, ?2)",
        params![value_enc, now],
    )?;
    Ok(())
}
