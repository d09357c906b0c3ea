//! What the inference workers do with a classified batch: write each job's detections with their
//! flags, mark the job done and raise the alerts the detections fire (with their deliveries), in
//! one transaction, so a crash never loses or doubles a detection or an alert.

use super::alerting::{self, AlertContext, Raised};
use crate::{
    domain::detection_flags,
    store::{self, Store, detections::NewDetection, detections::Stored},
    time::Timestamp,
};

/// One finished job: its id and the species found in its chunk.
pub type JobResult = (String, Vec<NewDetection>);

/// Writes every job's detections and marks it done (one commit per worker batch). A job that is no
/// longer running (requeued after a restart and finished elsewhere) is skipped, so a chunk's
/// detections are never written twice. Each detection's flags are judged against what the team
/// had before it, including the detections earlier in the same batch. Runs on the calling thread
/// (the workers' own), never on the async runtime.
pub fn record_batch(
    store: &Store,
    jobs: &[JobResult],
    alerts: &AlertContext,
    duration_ms: i64,
    now: Timestamp,
) -> store::Result<(Vec<Stored>, Vec<Raised>)> {
    store.call_blocking(|c| {
        let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut stored = Vec::new();
        for (job_id, found) in jobs {
            if !store::jobs::is_running(&tx, job_id)? {
                continue;
            }
            for d in found {
                stored.extend(record(&tx, d, now)?);
            }
            store::jobs::mark_done(&tx, job_id, duration_ms, now)?;
        }
        let raised = alerting::on_detections(&tx, &stored, alerts, now)?;
        tx.commit()?;
        Ok((stored, raised))
    })
}

/// Writes one detection with the flags its species' history decides, inside the caller's
/// transaction. `None` when the chunk already has this species.
pub fn record(conn: &rusqlite::Connection, d: &NewDetection, now: Timestamp) -> store::Result<Option<Stored>> {
    let history = store::detections::history(conn, d.tenant_id, &d.species_code, d.detected_at.at())?;
    store::detections::insert(conn, d, detection_flags::judge(history, d.expected_here), now)
}
