//! The second look at held detections (`docs/detection-quality.md`): the window of the held
//! detection shifted back and forward by half a window, cut across the neighbouring chunks of
//! the same satellite (or silence where there is none: a satellite's own gate drops silent
//! chunks), and the neighbours' own windows when they were classified recently.
//!
//! - First look, while the chunk is classified: the window shifted back (the previous chunk has
//!   usually arrived) and the previous chunk's scores. Confirmed: kept at once.
//! - Otherwise the detection is held. When the satellite's next chunk has been classified, or the
//!   wait ends, the window shifted forward and the next chunk's scores decide.
//!
//! With overlapping chunks (a profile's `overlapMs` of 1 s or more) the neighbour itself covers
//! the shifted window, and its scores are used without another model call.

use std::{collections::BTreeMap, sync::Arc};

use super::{Engine, JobError, Shared};
use crate::{
    ids::ChunkId,
    inference::{
        audio,
        screen::{Candidate, Policy},
    },
    store::{self, detections::NewDetection, held::ChunkAudio, held::Held, jobs::Claimed},
    time::Timestamp,
    usecases::detections::{self as record, SecondLooks},
};

/// Half a window (1.5 s at 48 kHz): how far the second look shifts.
const HALF: usize = audio::WINDOW / 2;
/// A neighbour starting closer than this overlaps enough to stand for the shifted window.
const OVERLAP_ENOUGH_MS: i64 = 1000;
/// Class scores of a chunk kept for its neighbours' second looks: classes whose best logit
/// is at least this (a confidence of about 0.05).
const LOGIT_FLOOR: f32 = -3.0;

/// What a first look decided: the detections it confirmed, and those still held.
pub(super) type FirstLook = (Vec<NewDetection>, Vec<(Candidate, NewDetection)>);

/// A classified chunk's best logit per class, for the classes above [`LOGIT_FLOOR`].
pub(super) type Scores = Arc<Vec<(u32, f32)>>;

/// The sparse best logits of a chunk's windows.
pub(super) fn sparse(per_window: &[(usize, Vec<f32>)]) -> Scores {
    let mut best: BTreeMap<u32, f32> = BTreeMap::new();
    for (_, logits) in per_window {
        for (i, l) in logits.iter().enumerate() {
            if *l >= LOGIT_FLOOR {
                let e = best.entry(i as u32).or_insert(*l);
                *e = e.max(*l);
            }
        }
    }
    Arc::new(best.into_iter().collect())
}

fn scores_confirm(p: &Policy, index: usize, scores: Option<&Scores>) -> bool {
    scores.is_some_and(|s| s.iter().any(|(i, l)| *i as usize == index && p.confirms_logit(*l)))
}

impl Shared {
    /// The first look at a chunk's held candidates: returns those it confirms and those still held.
    pub(super) fn first_look(
        &self,
        job: &Claimed,
        samples: &[f32],
        policy: &Policy,
        held: Vec<(Candidate, NewDetection)>,
        engine: Engine<'_>,
    ) -> Result<FirstLook, JobError> {
        if held.is_empty() {
            return Ok((Vec::new(), held));
        }
        let t = job.recorded_at.at();
        let d_ms = (samples.len() as i64 * 1000) / i64::from(audio::SAMPLE_RATE);
        let ms = chrono::Duration::milliseconds;
        let prev = self
            .state
            .store
            .call_blocking(|c| {
                store::held::neighbour(
                    c,
                    job.satellite_id,
                    (t - ms(d_ms + 1500)).into(),
                    (t - ms(1)).into(),
                    (t - ms(d_ms)).into(),
                )
            })
            .map_err(|e| JobError::retry(e.to_string()))?;
        let prev_scores = prev.as_ref().and_then(|p| self.recent.get(&p.id));
        let overlapping =
            prev.as_ref().is_some_and(|p| p.recorded_at.millis() > t.timestamp_millis() - d_ms + OVERLAP_ENOUGH_MS);
        let mut confirmed = Vec::new();
        let mut still = Vec::new();
        let (undecided, by_prev): (Vec<_>, Vec<_>) =
            held.into_iter().partition(|(c, _)| !scores_confirm(policy, c.index, prev_scores.as_ref()));
        confirmed.extend(by_prev.into_iter().map(|(_, d)| d));
        if undecided.is_empty() {
            return Ok((confirmed, still));
        }
        if overlapping && prev_scores.is_some() {
            return Ok((confirmed, undecided));
        }
        let prefix = prev.as_ref().map_or_else(|| vec![0.0; HALF], |p| self.edge(p, Edge::Tail));
        let mut timeline = prefix;
        timeline.extend_from_slice(samples);
        let logits = self.shifted(&timeline, undecided.iter().map(|(c, _)| c.start), engine)?;
        for (c, d) in undecided {
            if logits.get(&c.start).is_some_and(|l| policy.confirms_logit(l.get(c.index).copied().unwrap_or(-15.0))) {
                confirmed.push(d);
            } else {
                still.push((c, d));
            }
        }
        Ok((confirmed, still))
    }

    /// Classifies, for each distinct start (in samples of `timeline`), the window at that start,
    /// counting the extra model calls. Returns the logits by start.
    fn shifted(
        &self,
        timeline: &[f32],
        starts: impl Iterator<Item = usize>,
        engine: Engine<'_>,
    ) -> Result<BTreeMap<usize, Vec<f32>>, JobError> {
        let mut starts: Vec<usize> = starts.collect();
        starts.sort_unstable();
        starts.dedup();
        let windows: Vec<Vec<f32>> =
            starts.iter().map(|s| audio::pad(timeline.get(*s..).unwrap_or_default())).collect();
        let refs: Vec<&[f32]> = windows.iter().map(Vec::as_slice).collect();
        let logits = engine.logits(&refs, 0)?;
        self.state.board.second_look_windows(refs.len() as u64);
        Ok(starts.into_iter().zip(logits).collect())
    }

    /// Half a window from the start or the end of a chunk's audio (silence if it cannot be read).
    fn edge(&self, chunk: &ChunkAudio, edge: Edge) -> Vec<f32> {
        let samples = self.samples_of(&chunk.storage_key).unwrap_or_default();
        let mut half = match edge {
            Edge::Head => samples[..samples.len().min(HALF)].to_vec(),
            Edge::Tail => samples[samples.len().saturating_sub(HALF)..].to_vec(),
        };
        if half.len() < HALF {
            let pad = vec![0.0; HALF - half.len()];
            half = match edge {
                Edge::Head => [half, pad].concat(),
                Edge::Tail => [pad, half].concat(),
            };
        }
        half
    }

    /// A stored chunk's audio at the model's rate.
    pub(super) fn samples_of(&self, key: &str) -> Option<Vec<f32>> {
        let path = self.state.objects.path_of(key).ok()?;
        let bytes = std::fs::read(path).ok()?;
        audio::to_model_rate(audio::decode_wav(&bytes, 60.0).ok()?).ok()
    }

    /// After a batch: the held detections whose next chunk is one of `jobs`, decided now.
    pub(super) fn after_batch(&self, jobs: &[&Claimed], engine: Engine<'_>) {
        // Most batches find nothing held at all: one look saves a query per job.
        match self.state.store.call_blocking(|c| store::held::any_held(c)) {
            Ok(false) => return,
            Ok(true) => {}
            Err(e) => tracing::error!(error = %e, "reading held detections failed"),
        }
        for job in jobs {
            let t = job.recorded_at;
            let from: Timestamp = (t.at() - chrono::Duration::seconds(12)).into();
            let found = self.state.store.call_blocking(|c| store::held::held_between(c, job.satellite_id, from, t));
            let helds: Vec<Held> = match found {
                Ok(h) => h
                    .into_iter()
                    .filter(|h| h.chunk.id != job.chunk_id)
                    .filter(|h| h.chunk.recorded_at.millis() + h.chunk.duration_ms + 1500 >= t.millis())
                    .collect(),
                Err(e) => {
                    tracing::error!(error = %e, "reading held detections failed");
                    continue;
                }
            };
            if !helds.is_empty() {
                let next = ChunkAudio {
                    id: job.chunk_id,
                    recorded_at: job.recorded_at,
                    duration_ms: 0,
                    storage_key: job.storage_key.clone(),
                };
                self.resolve(helds, Some(next), engine);
            }
        }
    }

    /// Decides the held detections whose wait has ended (at most once a second per worker).
    pub(super) fn sweep(&self, engine: Engine<'_>) {
        {
            let Ok(mut last) = self.last_sweep.lock() else { return };
            if last.elapsed() < std::time::Duration::from_secs(1) {
                return;
            }
            *last = std::time::Instant::now();
        }
        let now = self.state.clock.stamp();
        match self.state.store.call_blocking(|c| store::held::due(c, now, 64)) {
            Ok(due) if !due.is_empty() => self.resolve(due, None, engine),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "reading due held detections failed"),
        }
    }

    /// The second look proper: the window shifted forward and the next chunk's scores.
    fn resolve(&self, helds: Vec<Held>, next: Option<ChunkAudio>, engine: Engine<'_>) {
        let mut by_chunk: BTreeMap<ChunkId, Vec<Held>> = BTreeMap::new();
        for h in helds {
            by_chunk.entry(h.chunk.id).or_default().push(h);
        }
        let mut looks = SecondLooks::default();
        for (_, group) in by_chunk {
            let chunk = group[0].chunk.clone();
            let end = chunk.recorded_at.millis() + chunk.duration_ms;
            let next = next.clone().or_else(|| {
                let (sat, ms) = (group[0].detection.satellite_id, chrono::Duration::milliseconds);
                let t = chunk.recorded_at.at();
                self.state
                    .store
                    .call_blocking(|c| {
                        store::held::neighbour(
                            c,
                            sat,
                            (t + ms(1)).into(),
                            (t + ms(chunk.duration_ms + 1500)).into(),
                            (t + ms(chunk.duration_ms)).into(),
                        )
                    })
                    .ok()
                    .flatten()
            });
            let next_scores = next.as_ref().and_then(|n| self.recent.get(&n.id));
            let overlapping = next.as_ref().is_some_and(|n| n.recorded_at.millis() < end - OVERLAP_ENOUGH_MS);
            let d = &group[0].detection;
            let policy = match self.policies.get(d.tenant_id, d.satellite_id, &self.labels) {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!(error = %e, "reading detection settings failed; the second look waits");
                    return;
                }
            };
            // The next chunk's scores decide first: a window is classified only for the held
            // detections they do not confirm.
            let (by_scores, group): (Vec<_>, Vec<_>) =
                group.into_iter().partition(|h| scores_confirm(&policy, h.class_index, next_scores.as_ref()));
            looks.confirmed.extend(by_scores);
            let samples =
                if group.is_empty() { Vec::new() } else { self.samples_of(&chunk.storage_key).unwrap_or_default() };
            let need_window = !(group.is_empty() || samples.is_empty() || overlapping && next_scores.is_some());
            let logits = if need_window {
                let mut timeline = samples.clone();
                timeline.extend(next.as_ref().map_or_else(|| vec![0.0; HALF], |n| self.edge(n, Edge::Head)));
                let starts = group.iter().map(|h| start_sample(&h.detection) + HALF);
                match self.shifted(&timeline, starts, engine) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::warn!(error = %e.message, "a second look failed; it is tried again");
                        return;
                    }
                }
            } else {
                BTreeMap::new()
            };
            for h in group {
                let start = start_sample(&h.detection) + HALF;
                let by_window =
                    logits.get(&start).is_some_and(|l| l.get(h.class_index).is_some_and(|v| policy.confirms_logit(*v)));
                if by_window {
                    looks.confirmed.push(h);
                } else if policy.unconfirmed == crate::domain::detection_settings::UnconfirmedAction::Hide {
                    looks.hidden.push(h);
                } else {
                    looks.discarded.push(h);
                }
            }
        }
        let now = self.state.clock.stamp();
        match record::record_second_looks(&self.state.store, &looks, &self.state.alerts, now) {
            Ok((stored, raised)) => self.announce(stored, raised),
            Err(e) => tracing::error!(error = %e, "recording second looks failed; they are tried again"),
        }
    }
}

/// The held detection's best window's first sample within its chunk.
fn start_sample(d: &NewDetection) -> usize {
    usize::try_from(d.start_ms * i64::from(audio::SAMPLE_RATE) / 1000).unwrap_or(0)
}

#[derive(Clone, Copy)]
enum Edge {
    Head,
    Tail,
}
