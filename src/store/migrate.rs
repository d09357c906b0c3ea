//! Schema migrations: plain SQL files in `migrations/`, embedded by `build.rs`, applied in order,
//! one transaction each. `PRAGMA user_version` records how far a database has come.

use rusqlite::{Connection, OptionalExtension};

use super::{Error, Result};

include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

/// What a migration run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub from: u32,
    pub to: u32,
    pub applied: Vec<String>,
}

/// The schema version this binary writes.
pub fn latest() -> u32 {
    MIGRATIONS.last().map_or(0, |m| m.0)
}

pub fn run(conn: &mut Connection) -> Result<Report> {
    let from: u32 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let supported = latest();
    if from > supported {
        return Err(Error::TooNew { found: from, supported });
    }
    if from == 0 {
        // A new file: incremental auto-vacuum from the start (an existing one switches on VACUUM,
        // see [`compact`]). Only possible before the first table exists; a no-op afterwards.
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    }
    // A migration's sorts (a rollup filled by GROUP BY over millions of rows) spill to temp
    // files rather than RAM: with the pool's `temp_store = MEMORY` the upgrade to 0028 peaked at
    // 690 MB on 2 million detections, more than a 1 GB Pi has to spare.
    conn.execute_batch("PRAGMA temp_store = FILE;")?;
    let result = apply_pending(conn, from, supported);
    conn.execute_batch("PRAGMA temp_store = MEMORY;")?;
    let applied = result?;
    if !applied.is_empty() {
        // A migration that rewrote much (0028 wrote 215 MB of rollups on 2 million detections)
        // leaves it in the WAL: copy it into the database and give the WAL's disk back now,
        // rather than have every read look through it until ingest's next checkpoint.
        if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())) {
            tracing::warn!(error = %e, "the write-ahead log could not be emptied after the upgrade");
        }
    }
    if from > 0 && COMPACT_AT.iter().any(|&v| from < v && supported >= v) {
        // Upgrading past 0016 or 0017: give the freed pages back and pack the rest, once. A
        // failure (no room, a full disk half-way) leaves the database as it was, only not smaller.
        match compact(conn) {
            Ok(done) => tracing::info!(?done, "database compacted after the upgrade"),
            Err(e) => tracing::warn!(error = %e, "the database could not be compacted; it keeps its size"),
        }
    }
    Ok(Report { from, to: supported.max(from), applied })
}

/// Applies the migrations after `from` up to `to`, in order; returns their names.
fn apply_pending(conn: &mut Connection, from: u32, to: u32) -> Result<Vec<String>> {
    let mut applied = Vec::new();
    for (version, name, sql) in MIGRATIONS.iter().filter(|m| m.0 > from && m.0 <= to) {
        if sql.starts_with(FOREIGN_KEYS_OFF) {
            tracing::info!(version, name, "rebuilding tables; this takes a while on a big database");
            conn.pragma_update(None, "foreign_keys", "OFF")?;
            let applied_one = apply(conn, *version, sql, true);
            conn.pragma_update(None, "foreign_keys", "ON")?;
            applied_one?;
        } else {
            apply(conn, *version, sql, false)?;
        }
        tracing::info!(version, name, "applied migration");
        applied.push(format!("{version:04}_{name}"));
    }
    Ok(applied)
}

/// Applies the migrations up to `last` only, as an older hub would have: tests of an upgrade
/// make their database at the schema before it.
#[cfg(test)]
pub(crate) fn run_until(conn: &mut Connection, last: u32) -> Result<Vec<String>> {
    let from: u32 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    apply_pending(conn, from, last)
}

/// The migrations whose upgrade compacts the file once afterwards (`0016_compact.sql`, and
/// `0017_compact_rows.sql` and `0018_compact_ids.sql`, which rebuild the two big tables and leave
/// the old pages free).
const COMPACT_AT: [u32; 3] = [16, 17, 18];
/// The first line of a migration that rebuilds tables: it runs with foreign keys off (SQLite's
/// procedure for changing a table's shape), and every foreign key is checked before it commits.
const FOREIGN_KEYS_OFF: &str = "-- birdhub: foreign-keys-off";

/// Applies one migration in its own transaction.
fn apply(conn: &mut Connection, version: u32, sql: &str, check_foreign_keys: bool) -> Result<()> {
    let tx = conn.transaction()?;
    tx.execute_batch(sql)?;
    after(version, &tx)?;
    if check_foreign_keys {
        let broken: Option<String> =
            tx.query_row("PRAGMA foreign_key_check", [], |r| r.get::<_, String>(0)).optional()?;
        if let Some(table) = broken {
            return Err(Error::Corrupt {
                what: "reference after a table rebuild",
                value: format!("{version:04}: {table}"),
            });
        }
    }
    tx.pragma_update(None, "user_version", version)?;
    tx.commit()?;
    Ok(())
}

/// Room kept on the disk on top of what a VACUUM needs.
const COMPACT_MARGIN: u64 = 256 << 20;

/// What [`compact`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compacted {
    /// VACUUMed: the file's size before and after, and how long it took.
    Done { before_bytes: u64, after_bytes: u64, millis: u64 },
    /// Not enough free disk for the copy VACUUM writes; the file keeps its size and its free
    /// pages are reused by new rows.
    NoRoom { needed_bytes: u64, free_bytes: u64 },
    /// An in-memory or temporary database: nothing to give back.
    NotAFile,
}

/// Rebuilds the database file packed (`VACUUM`) and switches it to `auto_vacuum = INCREMENTAL`,
/// so later deletions can give pages back ([`super::system::give_back_free_pages`]).
///
/// VACUUM copies the live pages into a temporary file and then writes them all again through
/// the WAL, so it needs up to twice the database's size free, both where the database lives and
/// in SQLite's temp directory (`SQLITE_TMPDIR`, else `TMPDIR`, else `/var/tmp`); without that
/// room it does nothing. It holds the write lock throughout: it runs at start-up, before the
/// hub serves. The temp copy goes to a file, never to memory (the pool's `temp_store = MEMORY`
/// would put a copy of the whole database in RAM).
pub fn compact(conn: &Connection) -> Result<Compacted> {
    let Some(path) = conn.path().filter(|p| !p.is_empty()).map(std::path::PathBuf::from) else {
        return Ok(Compacted::NotAFile);
    };
    let pragma =
        |name: &str| -> Result<u64> { Ok(conn.pragma_query_value(None, name, |r| r.get::<_, i64>(0))?.max(0) as u64) };
    let (pages, page_size, free_pages) = (pragma("page_count")?, pragma("page_size")?, pragma("freelist_count")?);
    let live = pages.saturating_sub(free_pages) * page_size;
    let needed_bytes = 2 * live + COMPACT_MARGIN;
    let dir = path.parent().map_or_else(|| std::path::PathBuf::from("."), std::path::Path::to_path_buf);
    let temp = ["SQLITE_TMPDIR", "TMPDIR"]
        .iter()
        .find_map(|v| std::env::var_os(v).filter(|d| !d.is_empty()))
        .map_or_else(|| std::path::PathBuf::from("/var/tmp"), std::path::PathBuf::from);
    let free_bytes = [dir.as_path(), temp.as_path()].iter().filter_map(|d| free_space(d)).min().unwrap_or(0);
    if free_bytes < needed_bytes {
        return Ok(Compacted::NoRoom { needed_bytes, free_bytes });
    }
    let size = || std::fs::metadata(&path).map_or(0, |m| m.len());
    let (before_bytes, started) = (size(), std::time::Instant::now());
    tracing::info!(bytes = before_bytes, "compacting the database (VACUUM); this takes a while on a big one");
    conn.execute_batch("PRAGMA temp_store = FILE; PRAGMA auto_vacuum = INCREMENTAL;")?;
    let vacuumed = conn.execute_batch("VACUUM");
    conn.execute_batch("PRAGMA temp_store = MEMORY;")?;
    vacuumed?;
    // The new pages sit in the WAL until a checkpoint copies them into the file.
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(Compacted::Done { before_bytes, after_bytes: size(), millis: started.elapsed().as_millis() as u64 })
}

/// Free bytes on the filesystem of `dir`, if it can be asked.
fn free_space(dir: &std::path::Path) -> Option<u64> {
    let s = rustix::fs::statvfs(dir).ok()?;
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

/// Work a migration needs done in Rust, in its transaction, after its SQL.
fn after(version: u32, tx: &Connection) -> Result<()> {
    if version == 9 {
        // The statistics rollups start out holding the data already stored.
        super::stats::rollups::fill(tx)?;
    }
    if version == 24 {
        // The rollups were counted in the machine's zone ('localtime'): that is the zone every
        // satellite's rows are in now, and each team's zone from here on. The zone mover moves
        // satellites whose own zone differs once the hub runs (`usecases::zones`).
        let hub = crate::time::hub_zone();
        let pk = super::zones::ensure(tx, hub)?;
        tx.execute("UPDATE satellites SET zone_pk = ?1", [pk])?;
        let teams: Vec<crate::ids::TenantId> =
            tx.prepare("SELECT id FROM tenants")?.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
        for team in teams {
            super::zones::default_team_zone(tx, &team, hub, crate::time::Timestamp(chrono::Utc::now()))?;
        }
    }
    if version == 28 {
        let filled = super::stats::rollups::fill_grains(tx)?;
        tracing::info!(?filled, "statistics at coarser grains filled (migration 0028)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC_TABLES: &[&str] = &[
        "tenants",
        "users",
        "memberships",
        "api_keys",
        "satellites",
        "audio_chunks",
        "inference_jobs",
        "detections",
        "verification_votes",
        "comments",
        "annotations",
        "alerts",
        "alert_rules",
        "alert_channels",
        "scheduled_exports",
        "invites",
        "password_reset_tokens",
        "login_attempts",
        "audit_log",
        "settings",
        "mobile_releases",
        "calibration_buckets",
    ];

    #[test]
    fn applies_all_on_an_empty_database_then_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut conn = Connection::open(dir.path().join("a.db")).expect("open");
        let first = run(&mut conn).expect("migrate");
        assert_eq!(first.from, 0);
        assert_eq!(first.to, latest());
        assert_eq!(first.applied.len(), MIGRATIONS.len());
        for table in SPEC_TABLES {
            let n: i64 = conn
                .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [table], |r| {
                    r.get(0)
                })
                .expect("query");
            assert_eq!(n, 1, "table {table} exists");
        }
        let again = run(&mut conn).expect("second run");
        assert!(again.applied.is_empty(), "a migrated database is left alone");
    }

    #[test]
    fn an_upgrade_empties_the_write_ahead_log_and_restores_the_temp_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("w.db");
        let mut conn = Connection::open(&path).expect("open");
        conn.pragma_update(None, "journal_mode", "WAL").expect("wal");
        conn.execute_batch("PRAGMA temp_store = MEMORY;").expect("as the pool sets it");
        run(&mut conn).expect("migrate");
        let wal = std::fs::metadata(dir.path().join("w.db-wal")).map_or(0, |m| m.len());
        assert_eq!(wal, 0, "every migration's pages are in the database file, and the WAL is emptied");
        let temp_store: i64 = conn.pragma_query_value(None, "temp_store", |r| r.get(0)).expect("pragma");
        assert_eq!(temp_store, 2, "the connection goes back to the pool's in-memory temp store");
    }

    #[test]
    fn refuses_a_database_from_a_newer_birdhub() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut conn = Connection::open(dir.path().join("b.db")).expect("open");
        run(&mut conn).expect("migrate");
        conn.pragma_update(None, "user_version", latest() + 1).expect("bump");
        let err = run(&mut conn).expect_err("too new");
        assert!(matches!(err, Error::TooNew { found, supported } if found == latest() + 1 && supported == latest()));
        assert!(err.to_string().contains("newer than this birdhub"));
    }

    #[test]
    fn a_failing_migration_leaves_the_database_unchanged() {
        // The same mechanism as `run`, applied to a broken script: nothing of it may remain.
        let mut conn = Connection::open_in_memory().expect("open");
        let tx = conn.transaction().expect("tx");
        let result = tx.execute_batch("CREATE TABLE half (x); THIS IS NOT SQL;");
        assert!(result.is_err());
        drop(tx);
        let n: i64 =
            conn.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'half'", [], |r| r.get(0)).expect("query");
        assert_eq!(n, 0);
    }

    #[test]
    fn teams_from_before_the_alerts_migration_get_their_system_rule() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut conn = Connection::open(dir.path().join("c.db")).expect("open");
        conn.execute_batch("PRAGMA foreign_keys = ON").expect("pragma");
        for (version, _, sql) in MIGRATIONS.iter().filter(|m| m.0 <= 7) {
            conn.execute_batch(sql).expect("old migration");
            conn.pragma_update(None, "user_version", version).expect("version");
        }
        for who in ["a", "b"] {
            let new = super::super::users::NewUser {
                email: format!("{who}@example.org"),
                name: who.into(),
                password_hash: "x".into(),
                is_platform_admin: false,
            };
            super::super::users::create_with_team(&mut conn, &new, who).expect("team");
        }
        // Teams made by a hub before 0008 had no system rule (today's team creation adds one).
        conn.execute("DELETE FROM alert_rules", []).expect("as before 0008");
        let report = run(&mut conn).expect("migrate");
        assert!(report.applied.iter().any(|m| m.starts_with("0008")), "{report:?}");
        let mut stmt = conn
            .prepare("SELECT id, name, trigger_type FROM alert_rules WHERE system_key = 'satellite_offline'")
            .expect("sql");
        let rules: Vec<(String, String, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("rules");
        assert_eq!(rules.len(), 2, "one per team");
        for (id, name, trigger) in rules {
            let parsed = uuid::Uuid::parse_str(&id).expect("a UUID the API accepts in paths");
            assert_eq!((parsed.get_version_num(), parsed.to_string()), (4, id.clone()));
            assert_eq!((name.as_str(), trigger.as_str()), ("Satellite offline", "absence"));
        }
    }
}
