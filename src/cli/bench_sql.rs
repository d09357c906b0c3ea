//! `bench pipeline`'s counts of a drained queue: the model calls, and SQLite's work per job.

use crate::store::{self, Store};

/// Model calls (windows classified) of a drained queue: for the chunks, and the extra ones of
/// second looks at held detections; and the SQLite work of the drain.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Calls {
    pub chunks: u64,
    pub windows: u64,
    pub second_look: u64,
    pub sql: Sql,
}

impl std::ops::AddAssign for Calls {
    fn add_assign(&mut self, o: Self) {
        self.chunks += o.chunks;
        self.windows += o.windows;
        self.second_look += o.second_look;
        self.sql = self.sql.plus(o.sql);
    }
}

/// The SQLite work of a drain: statements finished, trigger programs started, VM steps, and the
/// bytes the process sent to storage (`write_bytes` of `/proc/self/io`: the WAL's frames and
/// the checkpoints' pages; the drain writes no audio).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Sql {
    statements: u64,
    triggers: u64,
    steps: u64,
    written: u64,
}

impl Sql {
    pub(super) fn now(store: &Store) -> Self {
        let (statements, triggers) = store::work::statements();
        let written = std::fs::read_to_string("/proc/self/io")
            .ok()
            .and_then(|io| io.lines().find_map(|l| l.strip_prefix("write_bytes: ").and_then(|v| v.trim().parse().ok())))
            .unwrap_or(0);
        Self { statements, triggers, steps: store.vm_steps(), written }
    }

    pub(super) fn minus(self, o: Self) -> Self {
        Self {
            statements: self.statements.saturating_sub(o.statements),
            triggers: self.triggers.saturating_sub(o.triggers),
            steps: self.steps.saturating_sub(o.steps),
            written: self.written.saturating_sub(o.written),
        }
    }
}

impl Sql {
    pub(super) fn plus(self, o: Self) -> Self {
        Self {
            statements: self.statements + o.statements,
            triggers: self.triggers + o.triggers,
            steps: self.steps + o.steps,
            written: self.written + o.written,
        }
    }

    /// Prints the figures per job of `jobs`.
    pub(super) fn print_per_job(&self, jobs: u64) {
        let per_job = |n: u64| n as f64 / jobs.max(1) as f64;
        println!(
            "SQLite per job (drained):   {:.1} statements, {:.1} trigger programs, {:.0} VM steps, {:.1} pages of 4 KiB written ({:.0} KB: WAL frames and checkpoints)",
            per_job(self.statements),
            per_job(self.triggers),
            per_job(self.steps),
            per_job(self.written) / 4096.0,
            per_job(self.written) / 1000.0,
        );
    }
}
