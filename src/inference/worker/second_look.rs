//! The second look at held detections (`docs/detection-quality.md`): the window of the held
//! detection shifted back and forward by half a window, cut across the neighbouring chunks of
//! the same satellite (or silence where there is none: a satellite's own gate drops silent
//! chunks), and the neighbours' own windows when they were classified recently. Any of the four
//! confirms; the neighbours' scores are read first, as they cost no model call.
//!
//! - First look, while the chunk is classified: the previous chunk's scores (and the next
//!   chunk's, when it was classified first), then the window shifted back. Confirmed: kept at
//!   once.
//! - Otherwise the detection is held. When the satellite's next chunk has been classified, or the
//!   wait ends, the next chunk's scores and the window shifted forward decide.
//! - While a backlog drains, the next chunk is often queued already and the previous one still
//!   in another batch. Then the first look is put off (`back_look`): the detection is held at
//!   once, and the second look reads both neighbours' scores and classifies both shifted windows
//!   that they leave undecided in one call.
//!
//! With overlapping chunks (a profile's `overlapMs` of 1 s or more) the neighbour itself covers
//! the shifted window, and its scores are used without another model call.

use std::{collections::BTreeMap, sync::Arc};

use chrono::{DateTime, Utc};

use super::{Engine, JobError, Shared};
use crate::{
    ids::{ChunkId, SatelliteId},
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

/// What a first look decided: the detections it confirmed, those still held, and whether the
/// look itself was put off to the second (`back_look`).
pub(super) type FirstLook = (Vec<NewDetection>, Vec<(Candidate, NewDetection)>, bool);

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

/// A chunk's neighbour on one side, and its scores if it was classified recently.
struct Side {
    chunk: Option<ChunkAudio>,
    scores: Option<Scores>,
    /// It overlaps the chunk enough for its own scores to stand for the shifted window.
    overlapping: bool,
}

impl Side {
    /// Its scores stand for the shifted window, which then costs no model call.
    fn covers(&self) -> bool {
        self.overlapping && self.scores.is_some()
    }
}

impl Shared {
    /// The chunk of `satellite` before the one recorded at `t` (lasting `d_ms`), or after it.
    fn side(&self, satellite: SatelliteId, t: DateTime<Utc>, d_ms: i64, after: bool) -> store::Result<Side> {
        let ms = chrono::Duration::milliseconds;
        let (from, to, near) = match after {
            false => (t - ms(d_ms + 1500), t - ms(1), t - ms(d_ms)),
            true => (t + ms(1), t + ms(d_ms + 1500), t + ms(d_ms)),
        };
        let chunk = self
            .state
            .store
            .call_blocking(|c| store::held::neighbour(c, satellite, from.into(), to.into(), near.into()))?;
        Ok(self.side_of(chunk, t, d_ms, after))
    }

    /// `chunk` as the neighbour before (or `after`) the chunk recorded at `t`, lasting `d_ms`.
    fn side_of(&self, chunk: Option<ChunkAudio>, t: DateTime<Utc>, d_ms: i64, after: bool) -> Side {
        let scores = chunk.as_ref().and_then(|n| self.recent.get(&n.id));
        let overlapping = chunk.as_ref().is_some_and(|n| match after {
            false => n.recorded_at.millis() > t.timestamp_millis() - d_ms + OVERLAP_ENOUGH_MS,
            true => n.recorded_at.millis() < t.timestamp_millis() + d_ms - OVERLAP_ENOUGH_MS,
        });
        Side { chunk, scores, overlapping }
    }

    /// The chunk's samples with half a window of the previous chunk before them (silence
    /// without one): where the window shifted back is cut.
    fn behind(&self, prev: &Side, samples: &[f32]) -> Vec<f32> {
        let mut timeline = prev.chunk.as_ref().map_or_else(|| vec![0.0; HALF], |p| self.edge(p, Edge::Tail));
        timeline.extend_from_slice(samples);
        timeline
    }

    /// The first look at a chunk's held candidates: returns those it confirms, those still held,
    /// and whether the look was put off. The neighbours' scores decide first, at no cost; a
    /// window shifted back is classified only for what they leave undecided. When the next
    /// chunk is already queued but not yet classified (a backlog draining), the look waits for
    /// it: the second look then does both sides at once ([`Shared::resolve`]).
    pub(super) fn first_look(
        &self,
        job: &Claimed,
        samples: &[f32],
        policy: &Policy,
        held: Vec<(Candidate, NewDetection)>,
        engine: Engine<'_>,
    ) -> Result<FirstLook, JobError> {
        if held.is_empty() {
            return Ok((Vec::new(), held, false));
        }
        let t = job.recorded_at.at();
        let d_ms = (samples.len() as i64 * 1000) / i64::from(audio::SAMPLE_RATE);
        let retry = |e: store::Error| JobError::retry(e.to_string());
        let prev = self.side(job.satellite_id, t, d_ms, false).map_err(retry)?;
        let (by_prev, undecided): (Vec<_>, Vec<_>) =
            held.into_iter().partition(|(c, _)| scores_confirm(policy, c.index, prev.scores.as_ref()));
        let mut confirmed: Vec<NewDetection> = by_prev.into_iter().map(|(_, d)| d).collect();
        if undecided.is_empty() || prev.covers() {
            return Ok((confirmed, undecided, false));
        }
        let next = self.side(job.satellite_id, t, d_ms, true).map_err(retry)?;
        if next.chunk.is_some() && next.scores.is_none() {
            return Ok((confirmed, undecided, true));
        }
        let (by_next, undecided): (Vec<_>, Vec<_>) =
            undecided.into_iter().partition(|(c, _)| scores_confirm(policy, c.index, next.scores.as_ref()));
        confirmed.extend(by_next.into_iter().map(|(_, d)| d));
        if undecided.is_empty() {
            return Ok((confirmed, undecided, false));
        }
        let timeline = self.behind(&prev, samples);
        let mut cuts = BTreeMap::new();
        for (c, _) in &undecided {
            cuts.entry(c.start).or_insert_with(|| window_at(&timeline, c.start));
        }
        let logits = self.classify_extra(cuts, engine)?;
        let mut still = Vec::new();
        for (c, d) in undecided {
            if logits.get(&c.start).is_some_and(|l| policy.confirms_logit(l.get(c.index).copied().unwrap_or(-15.0))) {
                confirmed.push(d);
            } else {
                still.push((c, d));
            }
        }
        Ok((confirmed, still, false))
    }

    /// Classifies a second look's extra windows (each cut once, by its key) in one call,
    /// counting them. Returns the logits by key.
    fn classify_extra<K: Ord + Copy>(
        &self,
        cuts: BTreeMap<K, Vec<f32>>,
        engine: Engine<'_>,
    ) -> Result<BTreeMap<K, Vec<f32>>, JobError> {
        if cuts.is_empty() {
            return Ok(BTreeMap::new());
        }
        let refs: Vec<&[f32]> = cuts.values().map(Vec::as_slice).collect();
        let logits = engine.logits(&refs, 0)?;
        self.state.board.second_look_windows(refs.len() as u64);
        self.state.metrics.inference_windows(true, refs.len() as u64);
        Ok(cuts.keys().copied().zip(logits).collect())
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

    /// The second look proper: the next chunk's scores and the window shifted forward; for a
    /// first look that was put off (`back_look`), the previous chunk's scores and the window
    /// shifted back too. Scores decide first; the windows they leave undecided go in one call.
    fn resolve(&self, helds: Vec<Held>, next: Option<ChunkAudio>, engine: Engine<'_>) {
        let mut by_chunk: BTreeMap<ChunkId, Vec<Held>> = BTreeMap::new();
        for h in helds {
            by_chunk.entry(h.chunk.id).or_default().push(h);
        }
        let mut looks = SecondLooks::default();
        for (_, group) in by_chunk {
            let chunk = group[0].chunk.clone();
            let (sat, t) = (group[0].detection.satellite_id, chunk.recorded_at.at());
            let d = &group[0].detection;
            let policy = match self.policies.get(d.tenant_id, d.satellite_id, &self.labels) {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!(error = %e, "reading detection settings failed; the second look waits");
                    return;
                }
            };
            let sides = || -> store::Result<(Side, Option<Side>)> {
                let after = match &next {
                    Some(n) => self.side_of(Some(n.clone()), t, chunk.duration_ms, true),
                    None => self.side(sat, t, chunk.duration_ms, true)?,
                };
                let before = match group.iter().any(|h| h.back_look) {
                    true => Some(self.side(sat, t, chunk.duration_ms, false)?),
                    false => None,
                };
                Ok((after, before))
            };
            let (after, before) = match sides() {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(error = %e, "reading a held detection's neighbours failed; the second look waits");
                    return;
                }
            };
            // The neighbours' scores decide first: a window is classified only for the held
            // detections they do not confirm.
            let by_scores = |h: &Held| {
                scores_confirm(&policy, h.class_index, after.scores.as_ref())
                    || h.back_look
                        && scores_confirm(&policy, h.class_index, before.as_ref().and_then(|b| b.scores.as_ref()))
            };
            let (confirmed, group): (Vec<_>, Vec<_>) = group.into_iter().partition(by_scores);
            looks.confirmed.extend(confirmed);
            let samples =
                if group.is_empty() { Vec::new() } else { self.samples_of(&chunk.storage_key).unwrap_or_default() };
            let mut cuts = BTreeMap::new();
            if !samples.is_empty() && !after.covers() {
                let mut timeline = samples.clone();
                timeline.extend(after.chunk.as_ref().map_or_else(|| vec![0.0; HALF], |n| self.edge(n, Edge::Head)));
                for h in &group {
                    let start = start_sample(&h.detection) + HALF;
                    cuts.entry((Edge::Head, start)).or_insert_with(|| window_at(&timeline, start));
                }
            }
            if let Some(before) = before.as_ref().filter(|b| !samples.is_empty() && !b.covers()) {
                let timeline = self.behind(before, &samples);
                for h in group.iter().filter(|h| h.back_look) {
                    let start = start_sample(&h.detection);
                    cuts.entry((Edge::Tail, start)).or_insert_with(|| window_at(&timeline, start));
                }
            }
            let logits = match self.classify_extra(cuts, engine) {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!(error = %e.message, "a second look failed; it is tried again");
                    return;
                }
            };
            for h in group {
                let start = start_sample(&h.detection);
                let confirms = |key| {
                    logits
                        .get(&key)
                        .is_some_and(|l: &Vec<f32>| l.get(h.class_index).is_some_and(|v| policy.confirms_logit(*v)))
                };
                if confirms((Edge::Head, start + HALF)) || confirms((Edge::Tail, start)) {
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

/// The window that starts at `start` samples into `timeline` (padded with silence at its end).
fn window_at(timeline: &[f32], start: usize) -> Vec<f32> {
    audio::pad(timeline.get(start..).unwrap_or_default())
}

/// The held detection's best window's first sample within its chunk.
fn start_sample(d: &NewDetection) -> usize {
    usize::try_from(d.start_ms * i64::from(audio::SAMPLE_RATE) / 1000).unwrap_or(0)
}

/// Which end of a chunk: the head (a next chunk's, for the window shifted forward) or the tail
/// (a previous chunk's, for the window shifted back).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Edge {
    Head,
    Tail,
}
