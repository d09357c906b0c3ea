//! The SQLite work the hub does, counted in virtual-machine steps: the unit in which a query's
//! cost does not move with the machine (a Pi core and a laptop run the same steps for the same
//! rows). Every pooled connection carries a progress handler that adds [`GRAIN`] to its store's
//! counter each time SQLite has run about that many VM instructions; `birdhub bench api` prints
//! the difference a request made, and `/metrics` serves the running total
//! (`birdhub_sqlite_vm_steps_total`).

use std::sync::{
    Arc,
    atomic::{AtomicBool, AtomicU64, Ordering},
};

use rusqlite::{
    Connection,
    trace::{TraceEvent, TraceEventCodes},
};

/// VM instructions between two calls of the handler: fine enough to tell a 200-row read from a
/// 2,000-row one, coarse enough that counting costs nothing measurable.
pub const GRAIN: u32 = 64;

/// A store's running total of VM steps, shared by its connections. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    /// Counts `conn`'s work from now on (a connection has one progress handler; the hub sets no
    /// other), and its statements too once [`count_statements`] was called.
    pub fn attach(&self, conn: &Connection) -> rusqlite::Result<()> {
        if COUNTING.load(Ordering::Relaxed) {
            conn.trace_v2(TraceEventCodes::SQLITE_TRACE_STMT | TraceEventCodes::SQLITE_TRACE_PROFILE, Some(on_trace));
        }
        let total = Arc::clone(&self.0);
        conn.progress_handler(
            GRAIN as i32,
            Some(move || {
                total.fetch_add(u64::from(GRAIN), Ordering::Relaxed);
                // Never interrupt the statement.
                false
            }),
        )
    }

    /// Steps run so far, to within [`GRAIN`] per statement.
    pub fn steps(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Statements run and trigger programs started, process-wide, on connections attached after
/// [`count_statements`] (for `bench pipeline`'s per-job figures; off in a serving hub).
static COUNTING: AtomicBool = AtomicBool::new(false);
static STATEMENTS: AtomicU64 = AtomicU64::new(0);
static TRIGGERS: AtomicU64 = AtomicU64::new(0);

/// Counts the statements of every connection a store opens from now on.
pub fn count_statements() {
    COUNTING.store(true, Ordering::Relaxed);
}

/// (statements finished, trigger programs started) so far, process-wide.
pub fn statements() -> (u64, u64) {
    (STATEMENTS.load(Ordering::Relaxed), TRIGGERS.load(Ordering::Relaxed))
}

fn on_trace(event: TraceEvent<'_>) {
    match event {
        // SQLite reports a trigger's program as a statement whose text is "-- TRIGGER name".
        TraceEvent::Stmt(_, sql) if sql.starts_with("-- TRIGGER") => {
            TRIGGERS.fetch_add(1, Ordering::Relaxed);
        }
        TraceEvent::Profile(..) => {
            STATEMENTS.fetch_add(1, Ordering::Relaxed);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bigger_read_counts_more_steps() {
        let conn = Connection::open_in_memory().expect("open");
        let counter = Counter::default();
        counter.attach(&conn).expect("attach");
        conn.execute_batch(
            "CREATE TABLE t(x INTEGER);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) INSERT INTO t SELECT i FROM n;",
        )
        .expect("fill");
        let sum = |limit: i64| -> u64 {
            let before = counter.steps();
            let _: i64 = conn
                .query_row("SELECT coalesce(sum(x), 0) FROM (SELECT x FROM t LIMIT ?1)", [limit], |r| r.get(0))
                .expect("sum");
            counter.steps() - before
        };
        let (small, big) = (sum(100), sum(10_000));
        assert!(small < 2_000, "100 rows took {small} steps");
        assert!(big > 50 * small.max(u64::from(GRAIN)), "10,000 rows took {big} steps, 100 took {small}");
    }

    #[test]
    fn statements_and_trigger_programs_are_counted_once_asked() {
        count_statements();
        let conn = Connection::open_in_memory().expect("open");
        Counter::default().attach(&conn).expect("attach");
        conn.execute_batch(
            "CREATE TABLE t(x INTEGER); CREATE TABLE log(x INTEGER);
             CREATE TRIGGER t_log AFTER INSERT ON t BEGIN INSERT INTO log VALUES (new.x); END;",
        )
        .expect("schema");
        let (s0, t0) = statements();
        for i in 0..3 {
            conn.execute("INSERT INTO t VALUES (?1)", [i]).expect("insert");
        }
        let (s1, t1) = statements();
        // Other tests' connections may count too (the counters are process-wide): at least ours.
        assert!(s1 - s0 >= 3, "{} statements for 3 inserts", s1 - s0);
        assert!(t1 - t0 >= 3, "{} trigger programs for 3 inserts", t1 - t0);
    }
}
