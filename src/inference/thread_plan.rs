//! How the inference threads fit the cores this process may use ([`CoreBudget`]): how many
//! workers, their ONNX Runtime sessions and intra-op threads, each worker's front-end threads and
//! the batch, and why. The hub logs its plan at start; `birdhub bench inference` prints it.
//!
//! The rules: `inference.workers = "auto"` runs one worker per allowed core. Each worker has an
//! ONNX Runtime session of its own with its share of the cores as intra-op threads (at least
//! one), so all the sessions together never run more threads than the allowed cores. Each worker
//! spreads a batch's spectrograms over the same share. Nothing spins. An explicit worker count
//! above the cores is honoured, with a warning that it oversubscribes them.

use serde::Serialize;

use super::{ClassifierOptions, Precision, cores::CoreBudget, cores::plural, worker::BATCH};
use crate::config::WorkerCount;

/// The threads the inference pool runs, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadPlan {
    /// Worker threads that claim and classify batches (0: a coordinator, no model here).
    pub workers: usize,
    /// ONNX Runtime sessions of the network: one per worker (at least one).
    pub sessions: usize,
    /// ONNX Runtime's intra-op threads of each session.
    pub intra_op_threads: usize,
    /// Threads one worker spreads a batch's spectrograms over.
    pub frontend_threads: usize,
    /// Chunks a worker claims and classifies at once.
    pub batch: usize,
    /// The cores the plan was made for ([`CoreBudget::cores`]).
    pub cores: usize,
    /// More workers than cores were asked for: they will take turns on the cores.
    pub oversubscribed: bool,
    /// Why: the budget's reason and where the worker count came from.
    pub reason: String,
}

impl ThreadPlan {
    /// The plan for `workers` (from `inference.workers`) on `budget`.
    pub fn new(budget: &CoreBudget, workers: WorkerCount) -> Self {
        let cores = budget.cores.max(1);
        let (workers, source) = match workers {
            WorkerCount::Auto => (cores, "one worker per core".to_owned()),
            WorkerCount::Threads(0) => (0, "inference.workers = 0: a coordinator, no model here".to_owned()),
            WorkerCount::Threads(n) => (n, format!("inference.workers = {n}")),
        };
        let oversubscribed = workers > cores;
        let mut reason = format!("{}; {source}", budget.reason);
        if oversubscribed {
            reason.push_str(&format!(", which oversubscribes the {}", plural(cores, "core")));
        }
        let share = (cores / workers.max(1)).max(1);
        Self {
            workers,
            sessions: workers.max(1),
            intra_op_threads: share,
            frontend_threads: share,
            batch: BATCH as usize,
            cores,
            oversubscribed,
            reason,
        }
    }

    /// The plan for `workers` on this process's cores.
    pub fn current(workers: WorkerCount) -> Self {
        Self::new(CoreBudget::current(), workers)
    }

    /// How to load the classifier the workers share.
    pub fn classifier_options(&self, precision: Precision) -> ClassifierOptions {
        ClassifierOptions { threads: self.intra_op_threads, spin: false, precision, sessions: self.sessions }
    }

    /// One line: `2 workers x 1 front-end thread, ONNX Runtime 2 sessions x 1 intra-op thread,
    /// batch 8`.
    pub fn summary(&self) -> String {
        format!(
            "{} x {}, ONNX Runtime {} x {}, batch {}",
            plural(self.workers, "worker"),
            plural(self.frontend_threads, "front-end thread"),
            plural(self.sessions, "session"),
            plural(self.intra_op_threads, "intra-op thread"),
            self.batch
        )
    }

    /// Logs the plan (once, at start): a warning when it oversubscribes the cores.
    pub fn log(&self) {
        if self.oversubscribed {
            tracing::warn!(workers = self.workers, cores = self.cores, "inference threads: {self}");
        } else {
            tracing::info!(workers = self.workers, cores = self.cores, "inference threads: {self}");
        }
    }
}

/// The summary and, in brackets, the reason.
impl std::fmt::Display for ThreadPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.summary(), self.reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(machine: usize, allowed: usize) -> CoreBudget {
        let list = if allowed == 1 { "0".to_owned() } else { format!("0-{}", allowed - 1) };
        CoreBudget::from_parts(machine, Some((allowed, list)), None)
    }

    #[test]
    fn one_allowed_core_runs_one_worker_on_one_thread() {
        let plan = ThreadPlan::new(&budget(4, 1), WorkerCount::Auto);
        assert_eq!((plan.workers, plan.sessions, plan.intra_op_threads, plan.frontend_threads), (1, 1, 1, 1));
        assert_eq!(plan.batch, 8);
        assert!(!plan.oversubscribed);
        assert!(!plan.classifier_options(Precision::Fp32).spin, "nothing spins");
        assert_eq!(
            plan.summary(),
            "1 worker x 1 front-end thread, ONNX Runtime 1 session x 1 intra-op thread, batch 8"
        );
        assert_eq!(plan.reason, "1 of 4 cores: affinity allows CPUs 0; one worker per core");
    }

    #[test]
    fn auto_follows_the_allowed_cores_not_the_machine() {
        let plan = ThreadPlan::new(&budget(8, 2), WorkerCount::Auto);
        assert_eq!((plan.workers, plan.sessions, plan.intra_op_threads, plan.frontend_threads), (2, 2, 1, 1));
        let plan = ThreadPlan::new(&CoreBudget::from_parts(8, None, Some(3.5)), WorkerCount::Auto);
        assert_eq!((plan.workers, plan.sessions, plan.intra_op_threads), (4, 4, 1));
    }

    #[test]
    fn explicit_workers_share_the_cores_and_say_when_they_oversubscribe() {
        // Two sessions of four threads: all of them together, eight, never more than the cores.
        let plan = ThreadPlan::new(&budget(8, 8), WorkerCount::Threads(2));
        assert_eq!(
            (plan.sessions, plan.intra_op_threads, plan.frontend_threads, plan.oversubscribed),
            (2, 4, 4, false)
        );
        let plan = ThreadPlan::new(&budget(4, 1), WorkerCount::Threads(3));
        assert_eq!((plan.sessions, plan.intra_op_threads, plan.frontend_threads, plan.oversubscribed), (3, 1, 1, true));
        assert!(plan.reason.ends_with("inference.workers = 3, which oversubscribes the 1 core"), "{}", plan.reason);
    }

    #[test]
    fn a_coordinator_plans_no_workers() {
        let plan = ThreadPlan::new(&budget(2, 2), WorkerCount::Threads(0));
        assert_eq!((plan.workers, plan.oversubscribed), (0, false));
        assert!(plan.reason.contains("coordinator"), "{}", plan.reason);
    }
}
