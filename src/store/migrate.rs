//! Schema migrations: plain SQL files in `migrations/`, embedded by `build.rs`, applied in order,
//! one transaction each. `PRAGMA user_version` records how far a database has come.

use rusqlite::Connection;

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
    let mut applied = Vec::new();
    for (version, name, sql) in MIGRATIONS.iter().filter(|m| m.0 > from) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        after(*version, &tx)?;
        tx.pragma_update(None, "user_version", version)?;
        tx.commit()?;
        tracing::info!(version, name, "applied migration");
        applied.push(format!("{version:04}_{name}"));
    }
    Ok(Report { from, to: supported.max(from), applied })
}

/// Work a migration needs done in Rust, in its transaction, after its SQL.
fn after(version: u32, tx: &Connection) -> Result<()> {
    if version == 9 {
        // The statistics rollups start out holding the data already stored.
        super::stats::rollups::fill(tx)?;
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
