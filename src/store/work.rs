//! The SQLite work the hub does, counted in virtual-machine steps: the unit in which a query's
//! cost does not move with the machine (a Pi core and a laptop run the same steps for the same
//! rows). Every pooled connection carries a progress handler that adds [`GRAIN`] to its store's
//! counter each time SQLite has run about that many VM instructions; `birdhub bench api` prints
//! the difference a request made, and `/metrics` serves the running total
//! (`birdhub_sqlite_vm_steps_total`).

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use rusqlite::Connection;

/// VM instructions between two calls of the handler: fine enough to tell a 200-row read from a
/// 2,000-row one, coarse enough that counting costs nothing measurable.
pub const GRAIN: u32 = 64;

/// A store's running total of VM steps, shared by its connections. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    /// Counts `conn`'s work from now on (a connection has one progress handler; the hub sets no
    /// other).
    pub fn attach(&self, conn: &Connection) -> rusqlite::Result<()> {
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
}
