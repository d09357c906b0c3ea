//! The species image cache (`species_images`): one row per species asked for, hub-wide. Rows are
//! queued by requests, claimed by the fetcher with a lease (`fetching` until `next_attempt_at`),
//! and each download's outcome is written back only by the fetcher that holds the claim.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{Error, Result};
use crate::{domain::species_images::ImageStatus, time::Timestamp};

/// A row of the cache.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub species_code: String,
    pub scientific_name: String,
    pub status: ImageStatus,
    pub object_key: Option<String>,
    pub content_type: Option<String>,
    pub bytes: Option<u64>,
    pub sha256: Option<String>,
    pub attribution: Option<String>,
    pub license: Option<String>,
    pub source_page: Option<String>,
    pub attempts: u32,
    pub next_attempt_at: Option<Timestamp>,
    pub last_error: Option<String>,
    pub updated_at: Timestamp,
}

const COLUMNS: &str = "species_code, scientific_name, status, object_key, content_type, bytes, sha256, attribution,
    license, source_page, attempts, next_attempt_at, last_error, updated_at";

fn entry(r: &Row<'_>) -> rusqlite::Result<Entry> {
    let status: String = r.get(2)?;
    let parsed = ImageStatus::parse(&status).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(2, rusqlite::types::Type::Text, format!("status {status:?}").into())
    })?;
    Ok(Entry {
        species_code: r.get(0)?,
        scientific_name: r.get(1)?,
        status: parsed,
        object_key: r.get(3)?,
        content_type: r.get(4)?,
        bytes: r.get::<_, Option<i64>>(5)?.map(|b| b.max(0) as u64),
        sha256: r.get(6)?,
        attribution: r.get(7)?,
        license: r.get(8)?,
        source_page: r.get(9)?,
        attempts: r.get(10)?,
        next_attempt_at: r.get(11)?,
        last_error: r.get(12)?,
        updated_at: r.get(13)?,
    })
}

/// The rows of `codes` that exist.
pub fn get_many(conn: &Connection, codes: &[String]) -> Result<HashMap<String, Entry>> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM species_images WHERE species_code = ?1"))?;
    let mut found = HashMap::new();
    for code in codes {
        if let Some(e) = stmt.query_row([code], entry).optional()? {
            found.insert(code.clone(), e);
        }
    }
    Ok(found)
}

/// One row; `NotFound` when the species was never asked for.
pub fn get(conn: &Connection, code: &str) -> Result<Entry> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM species_images WHERE species_code = ?1"))?
        .query_row([code], entry)?)
}

/// Queues a species that has no row yet; `false` when it has one (whatever its status).
pub fn queue_new(conn: &Connection, code: &str, scientific_name: &str, now: Timestamp) -> Result<bool> {
    let n = conn
        .prepare_cached(
            "INSERT INTO species_images (species_code, scientific_name, status, next_attempt_at, created_at, updated_at)
             VALUES (?1, ?2, 'queued', ?3, ?3, ?3) ON CONFLICT (species_code) DO NOTHING",
        )?
        .execute(params![code, scientific_name, now])?;
    Ok(n == 1)
}

/// A species whose download may start now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    pub species_code: String,
    pub scientific_name: String,
    /// Attempts started so far; the claim is made at this count.
    pub attempts: u32,
}

/// Up to `limit` species to download now, the longest waiting first: queued or failed ones whose
/// time has come, and claims whose lease ran out (a fetcher that died mid-download).
pub fn due(conn: &Connection, now: Timestamp, limit: usize) -> Result<Vec<Due>> {
    let mut stmt = conn.prepare_cached(
        "SELECT species_code, scientific_name, attempts FROM species_images
         WHERE status IN ('queued', 'failed', 'fetching') AND next_attempt_at <= ?1
         ORDER BY next_attempt_at, species_code LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![now, limit as i64], |r| {
        Ok(Due { species_code: r.get(0)?, scientific_name: r.get(1)?, attempts: r.get(2)? })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Claims `d` for one download until `lease_until`, counting the attempt; `false` when another
/// fetcher took it first or it is no longer due.
pub fn claim(conn: &Connection, d: &Due, now: Timestamp, lease_until: Timestamp) -> Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE species_images SET status = 'fetching', attempts = attempts + 1, next_attempt_at = ?4, updated_at = ?3
             WHERE species_code = ?1 AND attempts = ?2 AND status IN ('queued', 'failed', 'fetching')
               AND next_attempt_at <= ?3",
        )?
        .execute(params![d.species_code, d.attempts, now, lease_until])?;
    Ok(n == 1)
}

/// A stored image, as recorded.
#[derive(Debug, Clone)]
pub struct Stored<'a> {
    pub object_key: &'a str,
    pub content_type: &'a str,
    pub bytes: u64,
    pub sha256: &'a str,
    pub attribution: &'a str,
    pub license: &'a str,
    pub source_page: Option<&'a str>,
}

/// The claim at `attempts` (after [`claim`]) ends with the image stored. `false` when the claim
/// was lost (the cache was cleared meanwhile): the caller removes the object it wrote.
pub fn record_cached(conn: &Connection, code: &str, attempts: u32, s: &Stored<'_>, now: Timestamp) -> Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE species_images SET status = 'cached', object_key = ?3, content_type = ?4, bytes = ?5, sha256 = ?6,
                attribution = ?7, license = ?8, source_page = ?9, next_attempt_at = NULL, last_error = NULL,
                updated_at = ?10
             WHERE species_code = ?1 AND attempts = ?2 AND status = 'fetching'",
        )?
        .execute(params![
            code,
            attempts,
            s.object_key,
            s.content_type,
            s.bytes as i64,
            s.sha256,
            s.attribution,
            s.license,
            s.source_page,
            now
        ])?;
    Ok(n == 1)
}

/// The claim ends without an image: `none` (the source has none; `retry_at` is `None`) or
/// `failed` (retried at `retry_at`, or never when `None`). `false` when the claim was lost.
pub fn record_miss(
    conn: &Connection,
    code: &str,
    attempts: u32,
    status: ImageStatus,
    error: &str,
    retry_at: Option<Timestamp>,
    now: Timestamp,
) -> Result<bool> {
    if !matches!(status, ImageStatus::None | ImageStatus::Failed) {
        return Err(Error::Corrupt { what: "image outcome", value: status.as_str().into() });
    }
    let n = conn
        .prepare_cached(
            "UPDATE species_images SET status = ?3, last_error = ?4, next_attempt_at = ?5, updated_at = ?6
             WHERE species_code = ?1 AND attempts = ?2 AND status = 'fetching'",
        )?
        .execute(params![code, attempts, status.as_str(), error, retry_at, now])?;
    Ok(n == 1)
}

/// Counts by status and the bytes stored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    pub by_status: Vec<(ImageStatus, u64)>,
    pub cached_bytes: u64,
}

pub fn totals(conn: &Connection) -> Result<Totals> {
    let mut stmt = conn.prepare_cached(
        "SELECT status, count(*), coalesce(sum(CASE WHEN status = 'cached' THEN bytes END), 0)
         FROM species_images GROUP BY status",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)))?;
    let mut totals = Totals { by_status: ImageStatus::ALL.iter().map(|s| (*s, 0)).collect(), cached_bytes: 0 };
    for row in rows {
        let (status, n, bytes) = row?;
        let status = ImageStatus::parse(&status).ok_or(Error::Corrupt { what: "image status", value: status })?;
        if let Some(slot) = totals.by_status.iter_mut().find(|(s, _)| *s == status) {
            slot.1 = n.max(0) as u64;
        }
        totals.cached_bytes += bytes.max(0) as u64;
    }
    Ok(totals)
}

/// The most recently failed species, newest first.
pub fn recent_failures(conn: &Connection, limit: usize) -> Result<Vec<Entry>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM species_images WHERE status = 'failed' ORDER BY updated_at DESC, species_code LIMIT ?1"
    ))?;
    let rows = stmt.query_map([limit as i64], entry)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Removes every row; returns how many and the object keys they held (to delete next).
pub fn clear(conn: &Connection) -> Result<(u64, Vec<String>)> {
    let keys: Vec<String> = {
        let mut stmt = conn.prepare_cached("SELECT object_key FROM species_images WHERE object_key IS NOT NULL")?;
        stmt.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?
    };
    let n = conn.prepare_cached("DELETE FROM species_images")?.execute([])?;
    Ok((n as u64, keys))
}

/// Queues every `failed` and `none` species again with a fresh count of attempts; returns how many.
pub fn requeue_misses(conn: &Connection, now: Timestamp) -> Result<u64> {
    let n = conn
        .prepare_cached(
            "UPDATE species_images SET status = 'queued', attempts = 0, next_attempt_at = ?1, last_error = NULL,
                updated_at = ?1
             WHERE status IN ('failed', 'none')",
        )?
        .execute([now])?;
    Ok(n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing;

    fn at(s: i64) -> Timestamp {
        Timestamp(chrono::DateTime::from_timestamp(1_800_000_000 + s, 0).expect("time"))
    }

    #[tokio::test]
    async fn a_claim_is_exclusive_and_only_its_holder_records_the_outcome() {
        let (store, _dir) = testing::store().await;
        store
            .call(|c| {
                assert!(queue_new(c, "pica_pica", "Pica pica", at(0))?);
                assert!(!queue_new(c, "pica_pica", "Pica pica", at(1))?, "queued once");
                let due_now = due(c, at(0), 10)?;
                assert_eq!(due_now.len(), 1);
                let d = &due_now[0];
                assert!(claim(c, d, at(0), at(300))?);
                assert!(!claim(c, d, at(0), at(300))?, "a second fetcher does not get it");
                assert!(due(c, at(299), 10)?.is_empty(), "leased");
                let retry = Some(at(60));
                assert!(!record_miss(c, "pica_pica", 0, ImageStatus::Failed, "x", retry, at(1))?, "stale claim");
                assert!(record_miss(c, "pica_pica", 1, ImageStatus::Failed, "HTTP 500", retry, at(1))?);
                let e = get(c, "pica_pica")?;
                assert_eq!((e.status, e.attempts, e.last_error.as_deref()), (ImageStatus::Failed, 1, Some("HTTP 500")));
                assert!(due(c, at(59), 10)?.is_empty(), "waits for its backoff");
                let again = due(c, at(60), 10)?;
                assert!(claim(c, &again[0], at(60), at(400))?);
                let stored = Stored {
                    object_key: "species-images/pica_pica-1.png",
                    content_type: "image/png",
                    bytes: 10,
                    sha256: "ab",
                    attribution: "A",
                    license: "CC0",
                    source_page: None,
                };
                assert!(record_cached(c, "pica_pica", 2, &stored, at(61))?);
                assert_eq!(get(c, "pica_pica")?.status, ImageStatus::Cached);
                let t = totals(c)?;
                assert_eq!(t.cached_bytes, 10);
                assert!(t.by_status.contains(&(ImageStatus::Cached, 1)));
                let (n, keys) = clear(c)?;
                assert_eq!((n, keys), (1, vec!["species-images/pica_pica-1.png".to_owned()]));
                assert!(!record_cached(c, "pica_pica", 2, &stored, at(62))?, "cleared meanwhile");
                Ok(())
            })
            .await
            .expect("store");
    }

    #[tokio::test]
    async fn an_expired_lease_is_due_again_and_misses_can_be_requeued() {
        let (store, _dir) = testing::store().await;
        store
            .call(|c| {
                queue_new(c, "crex_crex", "Crex crex", at(0))?;
                let d = due(c, at(0), 1)?.remove(0);
                assert!(claim(c, &d, at(0), at(10))?);
                let lapsed = due(c, at(10), 1)?;
                assert_eq!(lapsed[0].attempts, 1, "a fetcher that died mid-download");
                assert!(claim(c, &lapsed[0], at(10), at(20))?);
                assert!(record_miss(c, "crex_crex", 2, ImageStatus::None, "HTTP 404", None, at(11))?);
                assert!(due(c, at(100_000), 10)?.is_empty(), "none is never retried on its own");
                assert_eq!(requeue_misses(c, at(12))?, 1);
                let e = get(c, "crex_crex")?;
                assert_eq!((e.status, e.attempts, e.last_error), (ImageStatus::Queued, 0, None));
                assert!(matches!(get(c, "nope"), Err(Error::NotFound)));
                Ok(())
            })
            .await
            .expect("store");
    }
}
