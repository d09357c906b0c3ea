//! How a job ends outside a batch's commit: failed (retried with backoff, at once after an ended
//! lease, or given back uncounted), and each job's counters for `GET /workers` and `/metrics`.

use std::time::Instant;

use super::{MAX_ATTEMPTS, REMOTE_TAG, Shared};
use crate::store::{self, jobs::Claimed};

/// Why one job failed, and whether trying again could help.
pub(super) struct JobError {
    pub(super) message: String,
    pub(super) permanent: bool,
    /// What became of an offer to the remote workers, when that is why.
    pub(super) offer: Offer,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Offer {
    /// Not an offer's failure.
    None,
    /// No answer by the lease deadline: back to the queue at once (the attempt counts).
    LeaseEnded,
    /// A stopping worker gave it back: back to the queue at once, the attempt not counted.
    GivenBack,
}

impl JobError {
    pub(super) fn retry(message: impl Into<String>) -> Self {
        JobError { message: message.into(), permanent: false, offer: Offer::None }
    }

    pub(super) fn permanent(message: impl Into<String>) -> Self {
        JobError { message: message.into(), permanent: true, offer: Offer::None }
    }
}

impl Shared {
    pub(super) fn finish_failed(&self, worker: &str, job: &Claimed, e: JobError, started: Instant) {
        if e.offer == Offer::GivenBack {
            tracing::info!(job = %job.job_id, chunk = %job.chunk_id, "a stopping worker gave a job back; it is queued again");
            if let Err(err) = self.state.store.call_blocking(|c| store::jobs::release(c, &[&job.job_id], worker)) {
                tracing::error!(error = %err, "could not queue a given-back job again");
            }
            return;
        }
        let retry = !e.permanent && job.attempts < MAX_ATTEMPTS;
        let at = retry.then(|| match e.offer {
            Offer::LeaseEnded => self.state.clock.stamp(),
            _ => self.state.clock.stamp_in(chrono::Duration::seconds(5 << (job.attempts.saturating_sub(1)).min(6))),
        });
        tracing::warn!(job = %job.job_id, chunk = %job.chunk_id, attempts = job.attempts, retry, error = %e.message, "inference job failed");
        let now = self.state.clock.stamp();
        if let Err(err) = self.state.store.call_blocking(|c| store::jobs::fail(c, &job.job_id, &e.message, at, now)) {
            tracing::error!(error = %err, "could not record a failed job");
        }
        self.record(worker, false, started);
    }

    pub(super) fn record(&self, worker: &str, ok: bool, started: Instant) {
        self.state.metrics.inference_job(ok);
        let ms = started.elapsed().as_secs_f64() * 1e3;
        let now = self.state.clock.stamp();
        if worker.contains(REMOTE_TAG) {
            // Remote work is counted per worker by the pool (`GET /workers`' `remote`).
            self.state.board.finished.notify_one();
            return;
        }
        self.state.board.update(worker, |w| {
            w.jobs_processed += 1;
            if ok {
                w.jobs_succeeded += 1;
            } else {
                w.jobs_failed += 1;
            }
            w.total_ms += ms;
            w.avg_duration_ms = w.total_ms / w.jobs_processed as f64;
            w.last_job_at = Some(now);
        });
        self.state.board.finished.notify_one();
    }
}
