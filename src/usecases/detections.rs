//! What the inference workers do with a classified batch: write each job's detections with their
//! flags, mark the job done and raise the alerts the detections fire (with their deliveries), in
//! one transaction, so a crash never loses or doubles a detection or an alert.

use super::alerting::{self, AlertContext, Raised};
use crate::{
    domain::detection_flags,
    ids::{ChunkId, SatelliteId},
    store::{self, Store, detections::NewDetection, detections::Stored},
    time::Timestamp,
};

/// What one classified chunk leaves behind.
#[derive(Debug, Clone)]
pub struct ChunkOutcome {
    pub job_id: String,
    /// Who claimed the job: only that claim may finish it.
    pub worker: String,
    pub satellite_id: SatelliteId,
    pub chunk_id: ChunkId,
    /// Detections kept at once.
    pub kept: Vec<NewDetection>,
    /// Detections held for a second look.
    pub held: Vec<HeldFor>,
    /// The privacy filter heard a voice: the chunk's audio is marked deleted (the caller removes
    /// the file after the commit) and nothing of it is kept.
    pub privacy: bool,
    /// The filters' counters for the chunk's satellite.
    pub counts: Vec<(&'static str, u32)>,
}

/// A detection held for a second look.
#[derive(Debug, Clone)]
pub struct HeldFor {
    pub detection: NewDetection,
    /// Its class in the model's output.
    pub class: usize,
    /// Why it is held (`borderline`, `not_expected`).
    pub reason: &'static str,
    /// The first look was put off to the second (`store::held::Held::back_look`).
    pub back_look: bool,
    /// When the wait for the next chunk ends.
    pub deadline: Timestamp,
}

/// Writes every job's detections and held detections, its filter counters, and marks it done
/// (one commit per worker batch). A job its claim no longer holds (requeued after a restart or an
/// expired lease, and claimed again) is skipped, so a chunk's detections are never written twice. Each
/// detection's flags are judged against what the team had before it, including the detections
/// earlier in the same batch. Runs on the calling thread (the workers' own), never on the async
/// runtime.
pub fn record_batch(
    store: &Store,
    jobs: &[ChunkOutcome],
    alerts: &AlertContext,
    duration_ms: i64,
    now: Timestamp,
) -> store::Result<(Vec<Stored>, Vec<Raised>)> {
    store.call_blocking(|c| {
        let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut stored = Vec::new();
        for job in jobs {
            if !store::jobs::is_held(&tx, &job.job_id, &job.worker)? {
                continue;
            }
            if job.privacy {
                store::held::drop_audio(&tx, job.chunk_id)?;
            }
            for d in &job.kept {
                stored.extend(record(&tx, d, now)?);
            }
            for h in &job.held {
                store::held::hold(&tx, &h.detection, h.class, h.reason, h.back_look, h.deadline, now)?;
            }
            store::held::bump(&tx, job.satellite_id, &job.counts)?;
            // By the hour too: the dashboard says how many the last 24 hours left out, and why.
            let left_out = job.counts.iter().find(|(name, _)| *name == "notExpectedDropped").map_or(0, |(_, n)| *n);
            store::left_out::add(&tx, job.satellite_id, now, left_out)?;
            store::jobs::mark_done(&tx, &job.job_id, duration_ms, now)?;
        }
        let raised = alerting::on_detections(&tx, &stored, alerts, now)?;
        tx.commit()?;
        Ok((stored, raised))
    })
}

/// The verdicts of second looks.
#[derive(Debug, Clone, Default)]
pub struct SecondLooks {
    /// Confirmed: written as detections now.
    pub confirmed: Vec<store::held::Held>,
    /// Not confirmed, and the team discards them.
    pub discarded: Vec<store::held::Held>,
    /// Not confirmed, and the team keeps them hidden.
    pub hidden: Vec<store::held::Held>,
}

/// Applies second-look verdicts in one transaction: confirmed detections are written (with their
/// alerts), the others deleted or hidden, and each satellite's counters move.
pub fn record_second_looks(
    store: &Store,
    looks: &SecondLooks,
    alerts: &AlertContext,
    now: Timestamp,
) -> store::Result<(Vec<Stored>, Vec<Raised>)> {
    store.call_blocking(|c| {
        let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut stored = Vec::new();
        for h in &looks.confirmed {
            if store::held::take(&tx, h.pk)? {
                stored.extend(record(&tx, &h.detection, now)?);
                store::held::bump(&tx, h.detection.satellite_id, &[("secondLookConfirmed", 1)])?;
            }
        }
        for h in &looks.discarded {
            if store::held::take(&tx, h.pk)? {
                store::held::bump(&tx, h.detection.satellite_id, &[("secondLookDiscarded", 1)])?;
            }
        }
        for h in &looks.hidden {
            if store::held::hide(&tx, h.pk)? {
                store::held::bump(&tx, h.detection.satellite_id, &[("secondLookHidden", 1)])?;
            }
        }
        let raised = alerting::on_detections(&tx, &stored, alerts, now)?;
        tx.commit()?;
        Ok((stored, raised))
    })
}

/// Writes one detection with the flags its species' history decides, inside the caller's
/// transaction. `None` when the chunk already has this species.
pub fn record(conn: &rusqlite::Connection, d: &NewDetection, now: Timestamp) -> store::Result<Option<Stored>> {
    // First of the day and of the season by the detecting station's own calendar.
    let tz = store::zones::satellite_zone(conn, &d.satellite_id)?;
    let history = store::detections::history(conn, d.tenant_id, &d.species_code, d.detected_at.at(), tz)?;
    store::detections::insert(conn, d, detection_flags::judge(history, d.expected_here), now)
}
