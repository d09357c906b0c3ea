//! The satellite's filter (SPEC 2.3, 2.5): an RMS silence gate and, where the model is installed
//! on the satellite, a classifier gate that drops chunks whose best class is not a bird.

use serde::{Deserialize, Serialize};

use super::chunk::CapturedChunk;

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
    /// Counts one verdict.
    pub fn record(&mut self, _verdict: &Verdict) {
        todo!("capture helper")
    }
}

/// The gate; holds the classifier when one is installed.
pub struct Gate {
    _private: (),
}

impl Gate {
    /// A gate with the classifier from `model_dir` when it is installed there, else RMS only.
    pub fn new(_model_dir: Option<&str>) -> Self {
        todo!("capture helper")
    }

    /// Whether the classifier gate is active.
    pub fn has_classifier(&self) -> bool {
        todo!("capture helper")
    }

    /// Judges one chunk (blocking: run it on a blocking thread when the classifier is loaded).
    pub fn judge(&mut self, _chunk: &CapturedChunk, _config: &FilterConfig) -> Verdict {
        todo!("capture helper")
    }
}
