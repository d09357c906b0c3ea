//! The bare model for `bench pipeline`'s ratio: the classifier alone on batches of one real
//! chunk, in the better of its two shapes on these cores.

use std::time::Instant;

use crate::inference::{Classifier, ClassifierOptions, ModelDir, Precision, audio, worker};

/// The bare model's rate at its best on these cores (chunks/s): the better of one session with a
/// thread per core and one single-thread session per core running side by side (the hub's own
/// shape), each on batches of [`worker::BATCH`] spectrograms computed by the caller.
pub(super) async fn bare_model(dir: &ModelDir, wav: &[u8], threads: usize) -> anyhow::Result<BareRate> {
    let dir = dir.clone();
    let samples = audio::to_model_rate(audio::decode_wav(wav, 10.0)?)?;
    tokio::task::spawn_blocking(move || -> anyhow::Result<BareRate> {
        let options = ClassifierOptions { threads, spin: true, precision: Precision::Fp32, sessions: 1 };
        let one = Classifier::load(&dir, options)?;
        let whole = drain_bare(&one, &samples, 1)?;
        drop(one);
        let split = if threads > 1 {
            let options = ClassifierOptions { threads: 1, spin: true, precision: Precision::Fp32, sessions: threads };
            let each = Classifier::load(&dir, options)?.with_frontend_threads(1);
            drain_bare(&each, &samples, threads)?
        } else {
            whole
        };
        Ok(BareRate { whole, split })
    })
    .await?
}

/// The bare model's two shapes (chunks/s).
#[derive(Clone, Copy, Default)]
pub(super) struct BareRate {
    /// One session with a thread per core.
    pub whole: f64,
    /// One single-thread session per core, side by side.
    pub split: f64,
}

impl BareRate {
    pub fn best(self) -> f64 {
        self.whole.max(self.split)
    }
}

/// Chunks/s of `callers` threads each running batches through `classifier` at once.
fn drain_bare(classifier: &Classifier, samples: &[f32], callers: usize) -> anyhow::Result<f64> {
    let rounds = 40;
    let run = |count: usize| -> anyhow::Result<()> {
        // Separate buffers per slot, as the workers have (one shared buffer would stay in cache).
        let windows: Vec<Vec<f32>> = (0..worker::BATCH).map(|_| audio::pad(samples)).collect();
        let batch: Vec<&[f32]> = windows.iter().map(Vec::as_slice).collect();
        for _ in 0..count {
            classifier.logits(&batch)?;
        }
        Ok(())
    };
    let each = |count| {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..callers).map(|_| s.spawn(|| run(count))).collect();
            handles
                .into_iter()
                .try_for_each(|h| h.join().map_err(|_| anyhow::anyhow!("a bare-model thread panicked"))?)
        })
    };
    each(3)?;
    let started = Instant::now();
    each(rounds)?;
    Ok((rounds * callers * worker::BATCH as usize) as f64 / started.elapsed().as_secs_f64())
}
