//! The inference workers: dedicated threads that claim queued chunks from SQLite in batches, run
//! the classifier, and write detections and finish the job in one transaction. Without a model the
//! pool waits (checking every 30 s) and the queue simply grows; nothing is lost.
//!
//! Failures retry with backoff (5 s, 10 s, 20 s, 40 s) up to [`MAX_ATTEMPTS`], then the job is
//! `failed` with its error kept. A missing or unreadable WAV fails at once.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use tokio_util::sync::CancellationToken;

use super::{Classifier, ModelDir, RangeFilter, audio, labels::Labels, range, remote::RemotePool, screen};

mod board;
mod buffers;
mod engine;
mod finish;
pub use board::{JobSignal, WorkerBoard, WorkerStats, WorkerStatus};
use finish::{JobError, Offer};
mod remote_slot;
mod second_look;
use crate::{
    clock::Clock,
    config::InferenceSettings,
    events::{Bus, DetectionCreated, Event},
    ids::{ChunkId, SatelliteId},
    objects::ObjectStore,
    store::{self, Store, detections::NewDetection, jobs::Claimed},
    usecases::detections as record,
};
use engine::Engine;

/// The handles the workers use, and nothing more.
#[derive(Clone)]
pub struct WorkerContext {
    /// The job queue and where detections are written.
    pub store: Store,
    /// Where the chunks' WAV files are.
    pub objects: ObjectStore,
    /// Where new detections are announced.
    pub bus: Bus,
    pub clock: Clock,
    /// Wakes idle workers when ingest queues a chunk.
    pub signal: JobSignal,
    /// The counters `GET /workers` reports.
    pub board: WorkerBoard,
    /// Model directory, worker count and the detection threshold.
    pub settings: InferenceSettings,
    /// Names the worker threads of this process.
    pub instance_id: uuid::Uuid,
    /// The alert engine's context: detection rules run in the batch's transaction.
    pub alerts: crate::usecases::alerting::AlertContext,
    /// The range meta-model, shared with the API's expected-species route (one session, one cache).
    pub range: range::Shared,
    /// Inference durations, job results and detections for `GET /metrics`.
    pub metrics: crate::metrics::Metrics,
    /// The remote workers: hub slots offer them jobs alongside (or, with `workers = 0`, instead
    /// of) the threads that run the model here.
    pub remote: RemotePool,
}

pub const MAX_ATTEMPTS: u32 = 5;
/// Jobs one worker claims at a time (they are classified as one batch).
pub const BATCH: u32 = 8;
const MODEL_RETRY: Duration = Duration::from_secs(30);

/// Supervises the pool: waits for a model, starts the threads, stops them on shutdown.
pub async fn run(state: WorkerContext, shutdown: CancellationToken) -> anyhow::Result<()> {
    let requeued = state.store.call(|c| store::jobs::requeue_running(c)).await?;
    if requeued > 0 {
        tracing::info!(requeued, "inference jobs left running by a previous run are queued again");
    }
    let plan = super::ThreadPlan::current(state.settings.workers);
    plan.log();
    let count = plan.workers;
    let (local, labels, filter) = loop {
        let dir = state.settings.model_dir.clone();
        // A session per worker, each on its share of the allowed cores (`ThreadPlan`).
        let (options, frontend_threads) = (plan.classifier_options(state.settings.precision), plan.frontend_threads);
        let shared_range = state.range.clone();
        let loaded = tokio::task::spawn_blocking(move || {
            let dir = ModelDir::locate(&dir)?;
            // A coordinator (`workers = 0`) reads only the labels: the remote workers run the network.
            let local = match count {
                0 => None,
                _ => Some(Classifier::load(&dir, options)?.with_frontend_threads(frontend_threads)),
            };
            let labels = match &local {
                Some(c) => c.labels().clone(),
                None => {
                    dir.check()?;
                    Labels::load(&dir.file("labels/en.txt"))?
                }
            };
            let fingerprint = super::remote::labels_fingerprint(&dir.path)
                .map_err(|e| super::ModelError::invalid(&dir.file("labels/en.txt"), e))?;
            let filter = shared_range.get().ok();
            Ok::<_, super::ModelError>((local, (labels, fingerprint), filter))
        })
        .await?;
        match loaded {
            Ok(loaded) => break loaded,
            Err(e) => {
                state.board.update("pool", |w| w.status = WorkerStatus::WaitingForModel);
                tracing::warn!("inference is waiting for the model: {e}");
                tokio::select! {
                    _ = shutdown.cancelled() => return Ok(()),
                    _ = tokio::time::sleep(MODEL_RETRY) => {}
                }
            }
        }
    };
    if let Ok(mut m) = state.board.stats.lock() {
        m.remove("pool");
    }
    let (labels, fingerprint) = labels;
    state.remote.expect(super::remote::pool::Expected {
        model: super::MODEL_ID.into(),
        labels: fingerprint,
        classes: labels.len(),
    });
    let policies = super::policies::Policies::new(state.store.clone(), state.settings.threshold);
    tokio::spawn(policies.clone().watch(state.bus.clone()));
    let lease = Duration::from_secs(state.settings.lease_seconds.max(1));
    let shared = Arc::new(Shared {
        state: state.clone(),
        local,
        labels,
        lease,
        filter,
        stop: AtomicBool::new(false),
        policies,
        recent: moka::sync::Cache::new(RECENT_CHUNKS),
        heard: Mutex::default(),
        last_sweep: Mutex::new(Instant::now()),
        last_expiry: Mutex::new(Instant::now()),
    });
    match &shared.local {
        Some(c) => tracing::info!(
            workers = count,
            model = super::MODEL_ID,
            precision = %c.precision(),
            "inference workers started"
        ),
        None => tracing::warn!(
            "inference.workers = 0: this hub runs no model and only coordinates; chunks wait for remote \
             workers (`birdhub worker`, docs/scaling.md)"
        ),
    }
    let mut threads: Vec<_> = (0..count)
        .map(|i| {
            let shared = shared.clone();
            let id = format!("{}-{i}", state.instance_id.simple());
            std::thread::Builder::new().name(format!("inference-{i}")).spawn(move || shared.work(&id))
        })
        .collect::<Result<_, _>>()?;
    for i in 0..REMOTE_SLOTS {
        let shared = shared.clone();
        let id = format!("{}{REMOTE_TAG}{i}", state.instance_id.simple());
        threads.push(std::thread::Builder::new().name(format!("remote-{i}")).spawn(move || shared.offer(&id))?);
    }
    shutdown.cancelled().await;
    shared.stop.store(true, Ordering::Relaxed);
    state.signal.notify_all();
    state.remote.close();
    tokio::task::spawn_blocking(move || {
        for t in threads {
            let _ = t.join();
        }
    })
    .await?;
    Ok(())
}

struct Shared {
    state: WorkerContext,
    /// The model in this process; `None` on a coordinator (`inference.workers = 0`).
    local: Option<Classifier>,
    /// The model's labels (from the classifier, or read alone on a coordinator).
    labels: Labels,
    /// How long an offer to the remote workers may go unanswered.
    lease: Duration,
    filter: Option<Arc<RangeFilter>>,
    stop: AtomicBool,
    /// Each satellite's detection settings, through a cache that settings changes empty.
    policies: super::policies::Policies,
    /// Recently classified chunks' scores, for their neighbours' second looks.
    recent: moka::sync::Cache<ChunkId, second_look::Scores>,
    /// When a suppressing sound (a dog) was last heard on each satellite (recording time, ms).
    heard: Mutex<std::collections::HashMap<SatelliteId, i64>>,
    /// When held detections were last checked for an ended wait.
    last_sweep: Mutex<Instant>,
    /// When the queue was last swept for ended leases.
    last_expiry: Mutex<Instant>,
}

/// Chunks whose scores are kept for their neighbours (a few seconds of every satellite).
const RECENT_CHUNKS: u64 = 2048;

/// Hub threads that offer jobs to remote workers; each holds one offer at a time, and
/// [`super::remote::pool::IN_FLIGHT_PER_WORKER`] per joined worker may be out at once.
pub const REMOTE_SLOTS: usize = 32;
/// What names a remote slot's claims in the queue (`worker_id`).
const REMOTE_TAG: &str = "-remote-";
/// How often a remote slot looks for leases that ended with nobody to give their jobs back.
const EXPIRY_SWEEP: Duration = Duration::from_secs(10);

impl Shared {
    fn work(&self, id: &str) {
        let Some(local) = &self.local else { return };
        let engine = Engine::Local(local);
        let board = &self.state.board;
        board.update(id, |w| w.status = WorkerStatus::Idle);
        let mut seen = self.state.signal.current();
        while !self.stop.load(Ordering::Relaxed) {
            let now = self.state.clock.stamp();
            let claimed = self.state.store.call_blocking(|c| store::jobs::claim(c, id, BATCH, now));
            let jobs = match claimed {
                Ok(j) => j,
                Err(e) => {
                    tracing::error!(error = %e, "claiming inference jobs failed");
                    std::thread::sleep(Duration::from_secs(1));
                    continue;
                }
            };
            self.sweep(engine);
            if jobs.is_empty() {
                self.idle(local);
                board.update(id, |w| w.status = WorkerStatus::Idle);
                seen = self.state.signal.wait(seen, Duration::from_secs(1));
                continue;
            }
            board.update(id, |w| w.status = WorkerStatus::Busy);
            self.process(id, jobs, engine);
        }
        board.update(id, |w| w.status = WorkerStatus::Stopped);
    }

    /// The queue is empty: give back the memory ONNX Runtime kept for the batches of a backlog,
    /// so an idle hub holds what it held before it (a no-op after single windows), and close the
    /// range model if a burst of misses kept it open.
    fn idle(&self, classifier: &Classifier) {
        if let Err(e) = classifier.release_batch_memory() {
            tracing::warn!(error = %e, "could not release the classifier's batch memory");
        }
        if let Some(f) = &self.filter {
            f.close_if_unused();
        }
    }

    fn process(&self, worker: &str, jobs: Vec<Claimed>, engine: Engine<'_>) {
        let started = Instant::now();
        self.classify_batch(worker, jobs, started, engine);
        self.state.metrics.inference_batch(started.elapsed());
    }

    fn classify_batch(&self, worker: &str, jobs: Vec<Claimed>, started: Instant, engine: Engine<'_>) {
        // Decode every job's audio; a job whose audio is unusable fails on its own.
        let mut prepared = Vec::with_capacity(jobs.len());
        for job in jobs {
            match self.load_windows(&job) {
                Ok((samples, windows)) => prepared.push((job, samples, windows)),
                Err(e) => self.finish_failed(worker, &job, e, started),
            }
        }
        let refs: Vec<&[f32]> =
            prepared.iter().flat_map(|(_, samples, w)| w.iter().map(|s| audio::span(samples, s))).collect();
        self.warm_range(prepared.iter().map(|(job, _, _)| job), engine);
        let logits = match engine.logits(&refs, prepared.len()) {
            Ok(l) => l,
            Err(e) => {
                for (job, _, _) in &prepared {
                    let e = JobError { message: e.message.clone(), ..e };
                    self.finish_failed(worker, job, e, started);
                }
                return;
            }
        };
        self.state.board.chunk_windows(refs.len() as u64);
        self.state.metrics.inference_windows(false, refs.len() as u64);
        drop(refs);
        let mut logits = logits.into_iter();
        let mut outcomes = Vec::with_capacity(prepared.len());
        let mut done = Vec::with_capacity(prepared.len());
        for (job, samples, windows) in prepared {
            let per_window: Vec<(usize, Vec<f32>)> =
                windows.into_iter().map(|(start, _)| (start, logits.next().unwrap_or_default())).collect();
            match self.outcome(worker, &job, &samples, &per_window, engine) {
                Ok(o) => {
                    outcomes.push(o);
                    done.push(job);
                }
                Err(e) => self.finish_failed(worker, &job, e, started),
            }
            buffers::give_back(samples);
        }
        // One transaction for the whole batch: each job's detections and its `done` together.
        let elapsed = (started.elapsed().as_millis() as usize / outcomes.len().max(1)) as i64;
        let now = self.state.clock.stamp();
        match record::record_batch(&self.state.store, &outcomes, &self.state.alerts, elapsed, now) {
            Ok((stored, raised)) => {
                self.announce(stored, raised);
                for (o, job) in outcomes.iter().zip(&done) {
                    if o.privacy {
                        self.forget_audio(job);
                    }
                    self.record(worker, true, started);
                }
                self.after_batch(&done.iter().collect::<Vec<_>>(), engine);
            }
            Err(e) => {
                for job in &done {
                    self.finish_failed(worker, job, JobError::retry(e.to_string()), started);
                }
            }
        }
    }

    /// Tells the rest of the hub about committed detections and the alerts they raised.
    fn announce(&self, stored: Vec<store::detections::Stored>, raised: Vec<crate::usecases::alerting::Raised>) {
        for d in stored {
            self.state.metrics.detection(d.satellite_id);
            self.state.bus.publish(Event::DetectionCreated(Arc::new(created(&d))));
        }
        crate::usecases::alerting::announce(&self.state.bus, raised);
    }

    /// The privacy filter heard a voice in this chunk: its audio file goes (the row was marked
    /// in the batch's commit).
    fn forget_audio(&self, job: &Claimed) {
        if let Err(e) = self.state.objects.remove_blocking(&job.storage_key) {
            tracing::error!(chunk = %job.chunk_id, error = %e, "could not delete the audio the privacy filter dropped");
        }
    }

    /// Answers the range model for the batch's places before the network runs. A miss opens the
    /// range model (~60 MB while it loads): that happens while no network run is in progress and
    /// after the batch memory went back, so the two peaks never add up.
    fn warm_range<'a>(&self, jobs: impl Iterator<Item = &'a Claimed>, engine: Engine<'_>) {
        let Some(filter) = &self.filter else { return };
        for job in jobs {
            let (Some(lat), Some(lon)) = (job.latitude, job.longitude) else { continue };
            let week = range::week_of(job.recorded_at.at().date_naive());
            if filter.needs_run(lat, lon, week) {
                // An error shows up again (and is handled) when the detections read the scores.
                let _ = engine.exclusive(|| filter.scores(lat, lon, week));
            }
        }
    }

    /// The chunk's audio at 48 kHz, and its 3 s windows with their start sample.
    #[allow(clippy::type_complexity)]
    fn load_windows(&self, job: &Claimed) -> Result<(Vec<f32>, Vec<(usize, Option<Vec<f32>>)>), JobError> {
        let permanent = JobError::permanent;
        let path = self.state.objects.path_of(&job.storage_key).map_err(|e| permanent(e.to_string()))?;
        let decoded = buffers::with_file(&path, |bytes| audio::decode_wav_into(bytes, 60.0, buffers::take()))
            .map_err(|e| permanent(format!("audio {}: {e}", job.storage_key)))?
            .map_err(|e| permanent(e.to_string()))?;
        let samples = audio::to_model_rate(decoded).map_err(|e| permanent(e.to_string()))?;
        let windows = audio::window_spans(&samples, 0);
        if windows.is_empty() {
            return Err(permanent("the chunk holds no audio".into()));
        }
        Ok((samples, windows))
    }

    /// What the chunk's satellite keeps of it ([`super::screen`]): detections kept at once,
    /// held ones (after the first look, see [`second_look`]), or nothing when a voice was heard.
    fn outcome(
        &self,
        worker: &str,
        job: &Claimed,
        samples: &[f32],
        per_window: &[(usize, Vec<f32>)],
        engine: Engine<'_>,
    ) -> Result<record::ChunkOutcome, JobError> {
        let labels = &self.labels;
        let policy =
            self.policies.get(job.tenant_id, job.satellite_id, labels).map_err(|e| JobError::retry(e.to_string()))?;
        let recorded = job.recorded_at.at();
        let scores = match (&self.filter, job.latitude, job.longitude) {
            (Some(f), Some(lat), Some(lon)) => f.scores(lat, lon, range::week_of(recorded.date_naive())).ok(),
            _ => None,
        };
        let at = recorded.timestamp_millis();
        let suppressed = self
            .heard
            .lock()
            .ok()
            .and_then(|h| h.get(&job.satellite_id).copied())
            .is_some_and(|dog| at >= dog && at - dog <= i64::from(policy.suppress_seconds) * 1000);
        let verdict = screen::screen(&policy, per_window, scores.as_deref().map(Vec::as_slice), suppressed);
        if verdict.suppressor_heard
            && let Ok(mut h) = self.heard.lock()
        {
            let last = h.entry(job.satellite_id).or_insert(at);
            *last = (*last).max(at);
        }
        self.recent.insert(job.chunk_id, second_look::sparse(per_window));
        let c = verdict.counts;
        let counts = vec![
            ("privacyDropped", c.privacy_dropped),
            ("suppressed", c.suppressed),
            ("excluded", c.excluded),
            ("notIncluded", c.not_included),
            ("belowThreshold", c.below_threshold),
            ("notExpectedDropped", c.not_expected_dropped),
        ];
        let mut outcome = record::ChunkOutcome {
            job_id: job.job_id.clone(),
            worker: worker.to_owned(),
            satellite_id: job.satellite_id,
            chunk_id: job.chunk_id,
            kept: Vec::new(),
            held: Vec::new(),
            privacy: verdict.privacy,
            counts,
        };
        let mut held = Vec::new();
        for cand in verdict.candidates {
            let Some(d) = self.detection(job, &cand) else { continue };
            match cand.hold {
                None => outcome.kept.push(d),
                Some(_) => held.push((cand, d)),
            }
        }
        let (confirmed, still, back_look) = self.first_look(job, samples, &policy, held, engine)?;
        let deadline = self.state.clock.stamp_in(chrono::Duration::seconds(i64::from(policy.wait_sec)));
        if !confirmed.is_empty() {
            outcome.counts.push(("secondLookConfirmed", confirmed.len() as u32));
        }
        outcome.kept.extend(confirmed);
        outcome.held = still
            .into_iter()
            .map(|(c, detection)| record::HeldFor {
                detection,
                class: c.index,
                reason: c.hold.map_or("borderline", screen::Hold::as_str),
                back_look,
                deadline,
            })
            .collect();
        Ok(outcome)
    }

    /// The detection a kept candidate becomes.
    fn detection(&self, job: &Claimed, c: &screen::Candidate) -> Option<NewDetection> {
        let label = self.labels.get(c.index)?;
        let start_ms = (c.start as i64 * 1000) / i64::from(audio::SAMPLE_RATE);
        Some(NewDetection {
            tenant_id: job.tenant_id,
            satellite_id: job.satellite_id,
            satellite_name: job.satellite_name.clone(),
            audio_chunk_id: job.chunk_id,
            model_id: super::MODEL_ID.into(),
            species_code: label.code.clone(),
            scientific_name: label.scientific.clone(),
            common_name: label.common.clone(),
            confidence: c.confidence,
            detected_at: (job.recorded_at.at() + chrono::Duration::milliseconds(start_ms)).into(),
            start_ms,
            end_ms: start_ms + 3000,
            expected_here: c.expected_here,
        })
    }
}

/// The bus event for a stored detection.
fn created(d: &store::detections::Stored) -> DetectionCreated {
    DetectionCreated {
        id: d.id,
        tenant_id: d.tenant_id,
        satellite_id: d.satellite_id,
        satellite_name: d.satellite_name.clone(),
        species_code: d.species_code.clone(),
        common_name: d.common_name.clone(),
        scientific_name: d.scientific_name.clone(),
        confidence: d.confidence as f32,
        is_rare: d.is_rare,
        is_first_of_day: d.is_first_of_day,
        is_first_of_season: d.is_first_of_season,
        is_first_for_team: d.is_first_for_team,
        rare_reason: d.rare_reason.clone(),
        detected_at: d.detected_at.at(),
        audio_chunk_id: d.audio_chunk_id,
    }
}
