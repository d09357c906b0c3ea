//! What turns a thread's windows into scores: the model in this process, or the remote workers
//! through the pool's offers. Everything around it (screening, second looks, writing) is the
//! same for both.

use std::time::Duration;

use super::{JobError, Offer};
use crate::inference::{
    Classifier, ModelError,
    remote::{RemotePool, pool::ScoreError},
};

#[derive(Clone, Copy)]
pub(super) enum Engine<'a> {
    Local(&'a Classifier),
    /// Offers to the worker group, each waiting at most the lease.
    Remote(&'a RemotePool, Duration),
}

impl Engine<'_> {
    /// Logits for the windows; `chunks` is how many chunk jobs they are (0 for a second look's
    /// extra windows).
    pub(super) fn logits(&self, windows: &[&[f32]], chunks: usize) -> Result<Vec<Vec<f32>>, JobError> {
        if windows.is_empty() {
            return Ok(Vec::new());
        }
        match self {
            Engine::Local(c) => c.logits(windows).map_err(|e| JobError::retry(e.to_string())),
            Engine::Remote(pool, lease) => pool.score(windows, chunks, *lease).map_err(|e| {
                let offer = match e {
                    ScoreError::Expired(_) => Offer::LeaseEnded,
                    ScoreError::Released => Offer::GivenBack,
                    ScoreError::Failed(_) | ScoreError::Wire(_) => Offer::None,
                };
                JobError { message: e.to_string(), permanent: false, offer }
            }),
        }
    }

    /// Runs `f` (loading the range model) while the local network is not running; remote
    /// offers need no such care.
    pub(super) fn exclusive<T>(&self, f: impl FnOnce() -> T) -> Result<T, ModelError> {
        match self {
            Engine::Local(c) => c.exclusive_released(f),
            Engine::Remote(..) => Ok(f()),
        }
    }
}
