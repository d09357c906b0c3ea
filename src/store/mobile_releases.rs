//! Mobile app releases (SPEC 2.14, 4.11): one row per uploaded APK, which lives in the object
//! store under `storage_key`. Releases belong to the platform, not to a team.

use rusqlite::{Connection, Row, params};

use super::{Error, Result};
use crate::{ids::UserId, time::Timestamp};

/// A stored release.
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    pub id: String,
    /// SemVer text as uploaded (trimmed).
    pub version: String,
    pub notes: Option<String>,
    pub force_update: bool,
    pub storage_key: String,
    pub file_size: i64,
    /// Lowercase hex SHA-256 of the APK.
    pub sha256: String,
    pub uploaded_by: Option<UserId>,
    pub created_at: Timestamp,
}

/// What an upload stores.
#[derive(Debug, Clone)]
pub struct NewRelease<'a> {
    pub id: &'a str,
    pub version: &'a str,
    pub notes: Option<&'a str>,
    pub force_update: bool,
    pub storage_key: &'a str,
    pub file_size: i64,
    pub sha256: &'a str,
    pub uploaded_by: Option<UserId>,
}

const COLS: &str = "id, version, notes, force_update, storage_key, file_size, sha256, uploaded_by, created_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Release> {
    Ok(Release {
        id: r.get(0)?,
        version: r.get(1)?,
        notes: r.get(2)?,
        force_update: r.get(3)?,
        storage_key: r.get(4)?,
        file_size: r.get(5)?,
        sha256: r.get(6)?,
        uploaded_by: r.get(7)?,
        created_at: r.get(8)?,
    })
}

/// Inserts a release; a version already stored is `Duplicate`.
pub fn insert(conn: &Connection, new: &NewRelease<'_>, now: Timestamp) -> Result<Release> {
    conn.execute(
        "INSERT INTO mobile_releases (id, version, notes, force_update, storage_key, file_size, sha256, uploaded_by,
            created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            new.id,
            new.version,
            new.notes,
            new.force_update,
            new.storage_key,
            new.file_size,
            new.sha256,
            new.uploaded_by,
            now
        ],
    )?;
    get(conn, new.id)
}

pub fn get(conn: &Connection, id: &str) -> Result<Release> {
    Ok(conn.query_row(&format!("SELECT {COLS} FROM mobile_releases WHERE id = ?1"), [id], from_row)?)
}

/// The newest `limit` uploads, newest first.
pub fn recent(conn: &Connection, limit: u32) -> Result<Vec<Release>> {
    let mut st =
        conn.prepare(&format!("SELECT {COLS} FROM mobile_releases ORDER BY created_at DESC, rowid DESC LIMIT ?1"))?;
    let rows = st.query_map([limit], from_row)?.collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Every release's id and version, for picking the highest SemVer (there are few releases).
pub fn versions(conn: &Connection) -> Result<Vec<(String, String)>> {
    let mut st = conn.prepare("SELECT id, version FROM mobile_releases ORDER BY created_at, rowid")?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// The versions of the releases marked `force_update`.
pub fn forced_versions(conn: &Connection) -> Result<Vec<String>> {
    let mut st = conn.prepare("SELECT version FROM mobile_releases WHERE force_update = 1")?;
    let rows = st.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<Vec<String>>>()?;
    Ok(rows)
}

/// Sets the force flag (`None` flips it) and returns the release.
pub fn set_force_update(conn: &Connection, id: &str, force: Option<bool>) -> Result<Release> {
    let n = conn.execute(
        "UPDATE mobile_releases SET force_update = coalesce(?2, 1 - force_update) WHERE id = ?1",
        params![id, force],
    )?;
    if n == 0 { Err(Error::NotFound) } else { get(conn, id) }
}

/// Deletes the row and returns what it was (its object is the caller's to remove).
pub fn delete(conn: &Connection, id: &str) -> Result<Release> {
    let release = get(conn, id)?;
    conn.execute("DELETE FROM mobile_releases WHERE id = ?1", [id])?;
    Ok(release)
}
