//! The satellite's filter (SPEC 2.3, 2.5): an RMS silence gate and, where the model is installed
//! on the satellite, a classifier gate that drops chunks whose best class is not a bird.
//!
//! [`Gate::judge`] decides, in this order:
//! 1. `filterEnabled` false: [`Verdict::Send`], whatever the audio.
//! 2. RMS (0..1 full scale) below `filterMinRms`: [`Verdict::Silence`].
//! 3. Without a classifier: `Send`.
//! 4. With one: BirdNET runs on the chunk (first 3 s, zero-padded if shorter; chunks are already
//!    at the model's 48 kHz) and the logits go through the plain sigmoid (sensitivity 1). If the
//!    best **bird** class reaches `classifierMinBirdProb`: `Send`.
//! 5. Otherwise the best **non-bird** class is mapped to its category (see
//!    [`categories`]): if that category is in `excludedClassifierCategories`,
//!    `Classifier(category)`. If it is one of the five categories but not excluded, the tenant
//!    wants that kind of sound at the hub (e.g. `drop_amphibian_at_satellite = false` for a frog
//!    survey): `Send` when that class reaches `classifierMinBirdProb` too (the same bar as a
//!    bird). Everything else is `Classifier("other")`: `Noise`/`Environmental`, a non-excluded
//!    class below the bar, or a chunk where a weak bird still beats every non-bird class.
//!
//! If the classifier fails on a chunk the chunk is sent (a warning is logged): the gate never
//! loses audio because of its own fault.

use serde::{Deserialize, Serialize};

pub mod categories;

use self::categories::Category;
use super::chunk::CapturedChunk;
use crate::inference::{
    Classifier, ClassifierOptions, ModelDir, Precision,
    audio::{self, WINDOW},
    predict,
};

/// The filter fields of a `config` push.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterConfig {
    pub enabled: bool,
    pub min_rms: f64,
    pub classifier_min_bird_prob: f64,
    /// Subset of `anthropogenic`, `human_voice`, `amphibian`, `insect`, `other_animal`.
    pub excluded: Vec<String>,
}

/// What the gate decided for one chunk.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Send,
    Silence,
    /// The best non-bird class was in an excluded category (`amphibian`, ...), or no bird
    /// class reached `classifier_min_bird_prob` (`other`).
    Classifier(String),
}

/// `filterStats` of the heartbeat; counters that persist across restarts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FilterStats {
    pub total_processed: u64,
    pub total_sent: u64,
    pub rejected_silence: u64,
    pub rejected_classifier: u64,
    pub rejected_amphibian: u64,
    pub rejected_insect: u64,
    pub rejected_anthropogenic: u64,
    pub rejected_human_voice: u64,
    pub rejected_other_animal: u64,
    pub rejected_other: u64,
}

impl FilterStats {
    /// Counts one verdict: every verdict in `total_processed`; a classifier drop in
    /// `rejected_classifier` and in its category's counter (an unknown name counts as `other`).
    pub fn record(&mut self, verdict: &Verdict) {
        self.total_processed += 1;
        match verdict {
            Verdict::Send => self.total_sent += 1,
            Verdict::Silence => self.rejected_silence += 1,
            Verdict::Classifier(category) => {
                self.rejected_classifier += 1;
                match category.as_str() {
                    "amphibian" => self.rejected_amphibian += 1,
                    "insect" => self.rejected_insect += 1,
                    "anthropogenic" => self.rejected_anthropogenic += 1,
                    "human_voice" => self.rejected_human_voice += 1,
                    "other_animal" => self.rejected_other_animal += 1,
                    _ => self.rejected_other += 1,
                }
            }
        }
    }
}

/// ONNX Runtime threads of the satellite's classifier: it shares a small Pi with capture and
/// MQTT, so it takes two cores at most and does not spin.
const THREADS: usize = 2;

/// The loaded classifier and the category of each of its classes (`None`: a bird).
struct Loaded {
    classifier: Classifier,
    categories: Vec<Option<Category>>,
}

/// The gate; holds the classifier when one is installed.
pub struct Gate {
    loaded: Option<Loaded>,
}

impl Gate {
    /// A gate with the classifier from `model_dir` when it is installed there, else RMS only.
    /// `Some("")` looks in the usual places (see [`ModelDir::locate`]); `None` means RMS only.
    /// A model that cannot be loaded is logged and the gate falls back to RMS only.
    pub fn new(model_dir: Option<&str>) -> Self {
        let Some(configured) = model_dir else { return Self::rms_only() };
        let loaded = ModelDir::locate(configured).and_then(|dir| {
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(THREADS);
            Classifier::load(&dir, ClassifierOptions { threads, spin: false, precision: Precision::Fp32, sessions: 1 })
        });
        match loaded {
            Ok(classifier) => {
                let categories = classifier.labels().iter().map(|l| categories::category_of(&l.scientific)).collect();
                tracing::info!("classifier gate: {} loaded", classifier.model_id());
                Self { loaded: Some(Loaded { classifier, categories }) }
            }
            Err(e) => {
                tracing::warn!("classifier gate off, RMS gate only: {e}");
                Self::rms_only()
            }
        }
    }

    /// A gate with the RMS gate only.
    pub fn rms_only() -> Self {
        Self { loaded: None }
    }

    /// Whether the classifier gate is active.
    pub fn has_classifier(&self) -> bool {
        self.loaded.is_some()
    }

    /// Judges one chunk (blocking: run it on a blocking thread when the classifier is loaded).
    pub fn judge(&mut self, chunk: &CapturedChunk, config: &FilterConfig) -> Verdict {
        if !config.enabled {
            return Verdict::Send;
        }
        if chunk.rms() < config.min_rms {
            return Verdict::Silence;
        }
        let Some(loaded) = &self.loaded else { return Verdict::Send };
        match loaded.scores(chunk) {
            Ok(scores) => decide(&scores, &loaded.categories, config),
            Err(e) => {
                tracing::warn!("classifier gate failed on a chunk, sending it: {e}");
                Verdict::Send
            }
        }
    }
}

impl Loaded {
    /// Per-class probabilities of the chunk's first 3 s.
    fn scores(&self, chunk: &CapturedChunk) -> Result<Vec<f32>, crate::inference::ModelError> {
        let window = audio::pad(&chunk.samples_f32());
        debug_assert_eq!(window.len(), WINDOW);
        let logits = self.classifier.logits(&[window.as_slice()])?;
        let first = logits.into_iter().next().unwrap_or_default();
        Ok(first.iter().map(|l| predict::sigmoid(*l, predict::DEFAULT_SENSITIVITY)).collect())
    }
}

/// Steps 4 and 5 of the module docs: `scores` are per-class probabilities, `categories` the
/// category of each class (`None`: a bird).
fn decide(scores: &[f32], categories: &[Option<Category>], config: &FilterConfig) -> Verdict {
    let best = |bird: bool| {
        scores
            .iter()
            .zip(categories)
            .filter(|(_, c)| c.is_none() == bird)
            .map(|(s, c)| (*s, *c))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    };
    let best_bird = best(true).map_or(0.0, |(s, _)| f64::from(s));
    if best_bird >= config.classifier_min_bird_prob {
        return Verdict::Send;
    }
    match best(false) {
        Some((score, Some(category))) if category != Category::Other && f64::from(score) > best_bird => {
            if config.excluded.iter().any(|e| e == category.as_str()) {
                Verdict::Classifier(category.as_str().to_owned())
            } else if f64::from(score) >= config.classifier_min_bird_prob {
                Verdict::Send
            } else {
                Verdict::Classifier(Category::Other.as_str().to_owned())
            }
        }
        _ => Verdict::Classifier(Category::Other.as_str().to_owned()),
    }
}

#[cfg(test)]
mod tests;
