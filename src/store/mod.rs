//! SQLite storage: the connection pool, the pragmas, the migrations and every SQL statement.
//!
//! One file per aggregate (`users.rs`, ...). Handlers never touch rusqlite: they call
//! [`Store::call`] with a function from one of these files, and it runs on a blocking thread.
//!
//! The two big tables, `audio_chunks` and `detections`, are compact (migration 0017): they refer
//! to teams, satellites, sessions and chunks by the small integer `pk` those rows carry beside
//! their UUID, and keep `recorded_at` / `detected_at` as Unix milliseconds. Their SQL turns a
//! UUID into its key where it meets them (`tenant_pk = (SELECT pk FROM tenants WHERE id = ?1)`),
//! binds times with [`crate::time::Timestamp::millis`], and reads the UUIDs back through the
//! keys; every other table keeps UUIDs and the SPEC's text times.

pub mod activity;
pub mod alert_channels;
pub mod alert_deliveries;
pub mod alert_rules;
pub mod alerts;
pub mod annotations;
pub mod api_keys;
pub mod audio_retention;
pub mod audit;
pub mod birdweather;
pub mod calibration;
pub mod chunks;
pub mod clock;
pub mod comments;
pub mod detection_count;
pub mod detection_list;
pub mod detections;
pub mod export;
pub mod first_flags;
pub mod held;
pub mod home_feed;
pub mod import_rows;
pub mod imports;
pub mod invites;
pub mod jobs;
pub mod learned_thresholds;
pub mod left_out;
pub mod login_attempts;
pub mod mail_log;
pub mod mfa;
pub mod migrate;
pub mod mobile_releases;
pub mod monitor;
pub mod recording_sessions;
pub mod registry;
pub mod resets;
pub mod satellites;
pub mod scheduled_exports;
pub mod sessions;
pub mod settings;
pub mod share_links;
pub mod species_images;
pub mod stats;
pub mod system;
pub mod team_zones;
pub mod telemetry;
pub mod tenants;
pub mod timeline;
pub mod users;
pub mod votes;
pub mod weather;
pub mod work;
pub mod worker_keys;
pub mod zones;

use std::{path::Path, time::Duration};

use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::Connection;

/// Why a storage call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("not found")]
    NotFound,
    /// A UNIQUE or PRIMARY KEY constraint refused the write. The caller knows what it inserted,
    /// so the use case names the conflict (`EmailTaken`, `NameTaken`, ...) in its own error type.
    #[error("a row with the same unique key already exists")]
    Duplicate,
    /// A stored value that does not parse (a timestamp, an enum): a bug or a damaged row, never "now".
    #[error("stored {what} is not valid: {value:?}")]
    Corrupt { what: &'static str, value: String },
    #[error(
        "the database is at schema version {found}, newer than this birdhub understands ({supported}); \
         install the newer birdhub or restore a matching backup"
    )]
    TooNew { found: u32, supported: u32 },
    #[error("database error: {0}")]
    Db(rusqlite::Error),
    #[error("database pool: {0}")]
    Pool(#[from] r2d2::Error),
    #[error("database task failed: {0}")]
    Task(String),
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        match &e {
            rusqlite::Error::QueryReturnedNoRows => Self::NotFound,
            rusqlite::Error::SqliteFailure(f, _)
                if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                    || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY =>
            {
                Self::Duplicate
            }
            _ => Self::Db(e),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A pool of SQLite connections to the hub's database file. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    pool: r2d2::Pool<SqliteConnectionManager>,
    work: work::Counter,
}

/// A connection checked out of the store's pool (back in the pool when dropped).
pub type Pooled = r2d2::PooledConnection<SqliteConnectionManager>;

/// Prepared statements each pooled connection keeps.
const STATEMENT_CACHE: usize = 64;

/// How long a connection waits for another writer before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The most connections the pool opens (readers run side by side under WAL).
const MAX_CONNECTIONS: u32 = 8;
/// Connections opened with the pool; the rest open on demand.
const MIN_IDLE: u32 = 2;

impl Store {
    /// Opens (creating if needed) the database at `path` and applies the pragmas to every connection.
    /// Does not migrate: call [`Store::migrate`].
    pub fn open(path: &Path) -> Result<Self> {
        // WAL is a property of the file: switch it once, before the pool opens connections in parallel
        // (switching from several connections at once would race for the lock).
        let first = Connection::open(path)?;
        first.busy_timeout(BUSY_TIMEOUT)?;
        // A new file takes incremental auto-vacuum before WAL: switching to WAL writes the
        // header, and after that SQLite ignores the setting until a VACUUM.
        let pages: i64 = first.pragma_query_value(None, "page_count", |r| r.get(0))?;
        if pages == 0 {
            first.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
        }
        first.pragma_update(None, "journal_mode", "WAL")?;
        drop(first);
        let work = work::Counter::default();
        let counting = work.clone();
        let manager = SqliteConnectionManager::file(path).with_init(move |c| {
            c.busy_timeout(BUSY_TIMEOUT)?;
            counting.attach(c)?;
            // Room for the statements ingest runs per chunk beside those of the pages and jobs
            // that share the connection (rusqlite keeps 16), so they stay prepared (issue 39).
            c.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
            // Plans that never depend on the values bound: without this, SQLite (3.53) reads a
            // bound `LIMIT ?` as a constant and re-prepares the statement every time it is bound
            // again, so a cached list query or poll is parsed and planned anew on each run.
            c.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
            c.execute_batch(
                "PRAGMA synchronous = NORMAL;
                 PRAGMA foreign_keys = ON;
                 PRAGMA temp_store = MEMORY;",
            )
        });
        // No `SELECT 1` on every checkout (r2d2's default test): a connection to a local file
        // does not go stale, and preparing that statement at each of the several checkouts a
        // chunk makes was about 5 % of a coordinator's CPU (`bench workers`, issue 49).
        // Two connections open at once and the others as they are needed: each holds its own
        // parsed copy of the schema (about 1.3 MB, the rollup triggers most of it), and an idle
        // hub needs few (issue 50). None is closed for being idle or old (r2d2 closes them after
        // 10 and 30 minutes by default): a connection to a local file does not age, and reopening
        // one parses the schema again, from r2d2's background thread.
        let pool = r2d2::Pool::builder()
            .max_size(MAX_CONNECTIONS)
            .min_idle(Some(MIN_IDLE))
            .idle_timeout(None)
            .max_lifetime(None)
            .connection_timeout(Duration::from_secs(10))
            .test_on_check_out(false)
            .build(manager)?;
        Ok(Self { pool, work })
    }

    /// SQLite virtual-machine steps this store's connections have run since it opened: the
    /// machine-independent cost of its reads and writes ([`work`]).
    pub fn vm_steps(&self) -> u64 {
        self.work.steps()
    }

    /// Applies every pending migration; refuses a database newer than this binary.
    pub async fn migrate(&self) -> Result<migrate::Report> {
        self.call(migrate::run).await
    }

    /// Runs `f` with a pooled connection on a blocking thread, off the async runtime.
    pub async fn call<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        let pool = self.pool.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = pool.get()?;
            f(&mut conn)
        })
        .await
        .map_err(|e| Error::Task(e.to_string()))?
    }

    /// The journal mode in force (`wal`), for tests and status reports.
    pub async fn journal_mode(&self) -> Result<String> {
        self.call(|c| Ok(c.pragma_query_value(None, "journal_mode", |r| r.get(0))?)).await
    }

    /// Runs `f` on the calling thread with a pooled connection (for dedicated worker threads,
    /// never for async code).
    pub fn call_blocking<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        let mut conn = self.pool.get()?;
        f(&mut conn)
    }

    /// A satellite's effective time zone ([`zones::satellite_zone`]).
    pub async fn satellite_zone(&self, id: crate::ids::SatelliteId) -> Result<chrono_tz::Tz> {
        self.call(move |c| zones::satellite_zone(c, &id)).await
    }

    /// A team's time zone ([`zones::team_zone`]).
    pub async fn team_zone(&self, id: crate::ids::TenantId) -> Result<chrono_tz::Tz> {
        self.call(move |c| zones::team_zone(c, &id)).await
    }

    /// A pooled connection to keep, for a thread that does nothing else (the chunk writer): its
    /// prepared statements and page cache stay warm, and no checkout is paid per use.
    pub fn dedicated(&self) -> Result<Pooled> {
        Ok(self.pool.get()?)
    }

    /// A cheap round trip, for health checks.
    pub async fn ping(&self) -> Result<()> {
        self.call(|c| Ok(c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0)).map(|_| ())?)).await
    }
}

#[cfg(test)]
mod compact_tests;

#[cfg(test)]
mod detection_count_tests;

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn connections_use_wal_foreign_keys_and_a_busy_timeout() {
        let (store, _dir) = super::testing::store().await;
        assert_eq!(store.journal_mode().await.expect("mode"), "wal");
        let (fk, timeout, sync): (i64, i64, i64) = store
            .call(|c| {
                Ok((
                    c.pragma_query_value(None, "foreign_keys", |r| r.get(0))?,
                    c.pragma_query_value(None, "busy_timeout", |r| r.get(0))?,
                    c.pragma_query_value(None, "synchronous", |r| r.get(0))?,
                ))
            })
            .await
            .expect("pragmas");
        assert_eq!(fk, 1);
        assert_eq!(timeout, 5000);
        assert_eq!(sync, 1, "NORMAL");
        // Foreign keys are really enforced: a membership of nobody in nothing is refused.
        let orphan = store
            .call(|c| {
                Ok(c.execute("INSERT INTO memberships (tenant_id, user_id, role) VALUES ('x', 'y', 'admin')", [])?)
            })
            .await;
        assert!(orphan.is_err());
    }

    #[tokio::test]
    async fn a_cached_query_with_a_bound_limit_is_not_prepared_again_on_each_run() {
        let (store, _dir) = super::testing::store().await;
        let reprepared = store
            .call(|c| {
                for limit in [1, 5, 20, 1] {
                    let mut stmt = c.prepare_cached("SELECT id FROM tenants ORDER BY id LIMIT ?1")?;
                    let _ = stmt.query_map([limit], |r| r.get::<_, String>(0))?.count();
                }
                let stmt = c.prepare_cached("SELECT id FROM tenants ORDER BY id LIMIT ?1")?;
                Ok(stmt.get_status(rusqlite::StatementStatus::RePrepare))
            })
            .await
            .expect("query");
        assert_eq!(reprepared, 0, "every run with another limit parsed and planned the query again");
    }
}

#[cfg(test)]
mod index_names {
    //! Queries name their index (`INDEXED BY`) so SQLite cannot pick a slow plan. A renamed or
    //! dropped index would make those queries fail at run time; this fails CI instead.
    use std::collections::BTreeSet;

    /// Every `INDEXED BY <name>` written literally in the store's SQL.
    fn literal_names() -> Vec<String> {
        let sources = [
            include_str!("calibration.rs"),
            include_str!("detection_count.rs"),
            include_str!("detection_list.rs"),
            include_str!("detections.rs"),
            include_str!("recording_sessions.rs"),
            include_str!("timeline.rs"),
            include_str!("jobs.rs"),
            include_str!("chunks.rs"),
            include_str!("votes.rs"),
        ];
        let mut names = Vec::new();
        for text in sources {
            for part in text.split("INDEXED BY ").skip(1) {
                let name: String = part.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    names.push(name);
                }
            }
        }
        names
    }

    #[tokio::test]
    async fn every_named_index_exists_in_the_schema() {
        let (store, _dir) = super::testing::store().await;
        let schema: BTreeSet<String> = store
            .call(|c| {
                let mut stmt = c.prepare("SELECT name FROM sqlite_master WHERE type = 'index'")?;
                let names = stmt.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
                Ok(names)
            })
            .await
            .expect("schema");
        let mut named: BTreeSet<String> = literal_names().into_iter().collect();
        named.extend(super::detection_list::every_index().into_iter().map(str::to_owned));
        named.extend(super::recording_sessions::every_index().into_iter().map(str::to_owned));
        assert!(named.len() >= 10, "the scan found the named indexes: {named:?}");
        let missing: Vec<&String> = named.iter().filter(|n| !schema.contains(*n)).collect();
        assert!(missing.is_empty(), "queries name indexes the schema does not have: {missing:?}");
    }
}

#[cfg(test)]
mod write_transactions {
    //! In WAL mode a deferred transaction that reads and then writes cannot wait for another
    //! writer: when one commits in between, SQLite answers "database is locked" at once, whatever
    //! the busy timeout (seen under load in `bench pipeline`). So every transaction that writes
    //! starts IMMEDIATE and waits its turn. Migrations run alone at start-up and are exempt.

    fn sources(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).expect("src").flatten() {
            let path = entry.path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push((path.display().to_string(), std::fs::read_to_string(&path).unwrap_or_default()));
            }
        }
    }

    #[test]
    fn every_transaction_outside_migrations_is_immediate() {
        let mut files = Vec::new();
        sources(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
        assert!(files.len() > 50, "the scan found the sources");
        let deferred: Vec<String> = files
            .iter()
            .filter(|(path, _)| !path.ends_with("migrate.rs"))
            .flat_map(|(path, text)| {
                text.lines()
                    .enumerate()
                    .filter(|(_, l)| l.contains(&[".transaction", "()"].concat()))
                    .map(move |(i, _)| format!("{path}:{}", i + 1))
            })
            .collect();
        assert!(deferred.is_empty(), "deferred transactions: {deferred:?}");
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! A fresh, fully migrated database in a temp dir, and people with teams, for store tests.

    /// `who@example.org` with a team of their own: (team, person).
    pub fn team(c: &mut rusqlite::Connection, who: &str) -> super::Result<(crate::ids::TenantId, crate::ids::UserId)> {
        let new = super::users::NewUser {
            email: format!("{who}@example.org"),
            name: who.into(),
            password_hash: "x".into(),
            is_platform_admin: false,
        };
        let made = super::users::create_with_team(c, &new, who)?;
        Ok((made.tenant_id, made.user_id))
    }

    pub async fn store() -> (super::Store, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = super::Store::open(&dir.path().join("test.db")).expect("open");
        store.migrate().await.expect("migrate");
        (store, dir)
    }
}
