//! What the inference workers share with the rest of the hub: the signal that wakes them when
//! a chunk is queued, and the board of their counters (`GET /workers`, SPEC 4.12).

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Condvar, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use serde::Serialize;

use crate::time::Timestamp;

/// Wakes idle workers when a chunk is queued.
#[derive(Clone, Default)]
pub struct JobSignal(Arc<(Mutex<u64>, Condvar)>);

impl JobSignal {
    /// A job was queued: one idle worker is enough to take it. Waking every worker made all but
    /// one of them ask the queue for nothing after each chunk (issue 39); a busy worker asks
    /// again when it finishes, and the count tells it something came meanwhile.
    pub fn notify(&self) {
        self.bump();
        self.0.1.notify_one();
    }

    /// Wakes every worker (to stop).
    pub(super) fn notify_all(&self) {
        self.bump();
        self.0.1.notify_all();
    }

    fn bump(&self) {
        if let Ok(mut n) = self.0.0.lock() {
            *n += 1;
        }
    }

    /// Waits until notified after `seen` or `timeout` passes; returns the latest count.
    pub(super) fn wait(&self, seen: u64, timeout: Duration) -> u64 {
        let (lock, cv) = &*self.0;
        let Ok(guard) = lock.lock() else { return seen };
        match cv.wait_timeout_while(guard, timeout, |n| *n == seen) {
            Ok((n, _)) => *n,
            Err(_) => seen,
        }
    }

    pub(super) fn current(&self) -> u64 {
        self.0.0.lock().map(|n| *n).unwrap_or(0)
    }
}

/// What a worker is doing (SPEC 4.12 `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerStatus {
    /// Waiting for a queued chunk.
    #[default]
    Idle,
    /// Classifying a batch.
    Busy,
    /// Stopped with the hub.
    Stopped,
    /// No model is installed yet (the pool's placeholder row); the queue grows meanwhile.
    WaitingForModel,
}

/// One worker's counters (SPEC 4.12: processed, succeeded, failed, average duration).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerStats {
    pub id: String,
    pub status: WorkerStatus,
    pub jobs_processed: u64,
    pub jobs_succeeded: u64,
    pub jobs_failed: u64,
    pub avg_duration_ms: f64,
    #[serde(skip)]
    pub(super) total_ms: f64,
    pub last_job_at: Option<Timestamp>,
}

/// Counters of every worker of this process.
#[derive(Clone, Default)]
pub struct WorkerBoard {
    pub(super) stats: Arc<Mutex<BTreeMap<String, WorkerStats>>>,
    /// Woken when a job finishes, so the service registry publishes fresh counters at once.
    pub(super) finished: Arc<tokio::sync::Notify>,
    /// Windows classified for chunks, and the extra ones second looks classified.
    windows: Arc<(AtomicU64, AtomicU64)>,
}

impl WorkerBoard {
    pub fn snapshot(&self) -> Vec<WorkerStats> {
        self.stats.lock().map(|m| m.values().cloned().collect()).unwrap_or_default()
    }

    /// Resolves when a job has finished since the last call (or is finishing now).
    pub async fn job_finished(&self) {
        self.finished.notified().await;
    }

    /// Model calls (windows) so far: for the chunks themselves, and for second looks.
    pub fn windows(&self) -> (u64, u64) {
        (self.windows.0.load(Ordering::Relaxed), self.windows.1.load(Ordering::Relaxed))
    }

    pub(super) fn chunk_windows(&self, n: u64) {
        self.windows.0.fetch_add(n, Ordering::Relaxed);
    }

    pub(super) fn second_look_windows(&self, n: u64) {
        self.windows.1.fetch_add(n, Ordering::Relaxed);
    }

    pub(super) fn update(&self, id: &str, f: impl FnOnce(&mut WorkerStats)) {
        if let Ok(mut m) = self.stats.lock() {
            let entry =
                m.entry(id.to_owned()).or_insert_with(|| WorkerStats { id: id.to_owned(), ..Default::default() });
            f(entry);
        }
    }
}
