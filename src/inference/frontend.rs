//! The spectrogram front end, computed natively so ONNX Runtime only runs the network
//! (`birdnet_net.onnx`). It follows `frontend.json` as written by `models/fetch.sh`; the constants
//! (windows, mel matrices) come from the files it names. See `models/README.md` for the maths:
//! min/max normalisation, two STFT branches keeping the **real part** of the rFFT, sparse mel
//! projection, `(m^2)^e` compression, mel axis reversed, output `[2, 96, 511]`.

use std::{path::Path, sync::Arc};

use realfft::{RealFftPlanner, RealToComplex, num_complex::Complex};
use serde::Deserialize;

use super::{ModelError, audio::WINDOW};

#[derive(Debug, Deserialize)]
struct Spec {
    format: String,
    input_samples: usize,
    normalize: Normalize,
    branches: Vec<BranchSpec>,
}

#[derive(Debug, Deserialize)]
struct Normalize {
    eps: f32,
    sub: f32,
    mul: f32,
}

#[derive(Debug, Deserialize)]
struct BranchSpec {
    frame_length: usize,
    hop: usize,
    fft_size: usize,
    n_frames: usize,
    window_file: String,
    spectrum: String,
    n_bins: usize,
    n_mels: usize,
    mel_file: String,
    mel_nonzero_ranges: Vec<(usize, usize)>,
    exponent: f32,
    reverse_mels: bool,
}

/// One mel band: its first FFT bin and the weights from there on.
struct MelRow {
    first_bin: usize,
    weights: Vec<f32>,
}

struct Branch {
    hop: usize,
    n_frames: usize,
    window: Vec<f32>,
    rows: Vec<MelRow>,
    exponent: f32,
    reverse: bool,
    fft: Arc<dyn RealToComplex<f32>>,
}

/// The front end; shareable across threads (each call uses its own scratch buffers).
pub struct Frontend {
    norm: Normalize,
    branches: Vec<Branch>,
    n_mels: usize,
    n_frames: usize,
}

impl Frontend {
    /// Loads `frontend.json` and its constant files from the model directory.
    pub fn load(dir: &Path) -> Result<Self, ModelError> {
        let path = dir.join("frontend.json");
        let text = std::fs::read_to_string(&path).map_err(|e| ModelError::io(&path, e))?;
        let spec: Spec = serde_json::from_str(&text).map_err(|e| ModelError::invalid(&path, e))?;
        let bad = |why: String| ModelError::invalid(&path, why);
        if spec.format != "birdhub-frontend/1" || spec.input_samples != WINDOW || spec.branches.is_empty() {
            return Err(bad(format!("unsupported front end {:?} for {} samples", spec.format, spec.input_samples)));
        }
        let (n_mels, n_frames) = (spec.branches[0].n_mels, spec.branches[0].n_frames);
        let mut planner = RealFftPlanner::<f32>::new();
        let mut branches = Vec::new();
        for b in &spec.branches {
            if b.spectrum != "real_part" || b.fft_size != b.frame_length || b.n_bins != b.fft_size / 2 + 1 {
                return Err(bad(format!("unsupported spectrum settings in branch of size {}", b.fft_size)));
            }
            if b.n_mels != n_mels || b.n_frames != n_frames || (b.n_frames - 1) * b.hop + b.frame_length > WINDOW {
                return Err(bad("branches disagree on the output shape".into()));
            }
            let window = read_f32(&dir.join(&b.window_file), b.frame_length)?;
            let mel = read_f32(&dir.join(&b.mel_file), b.n_mels * b.n_bins)?;
            if b.mel_nonzero_ranges.len() != b.n_mels {
                return Err(bad("one non-zero range per mel band expected".into()));
            }
            let rows = b
                .mel_nonzero_ranges
                .iter()
                .enumerate()
                .map(|(j, &(lo, hi))| {
                    if lo > hi || hi > b.n_bins {
                        return Err(bad(format!("mel band {j} range {lo}..{hi} is out of bounds")));
                    }
                    Ok(MelRow { first_bin: lo, weights: mel[j * b.n_bins + lo..j * b.n_bins + hi].to_vec() })
                })
                .collect::<Result<_, _>>()?;
            branches.push(Branch {
                hop: b.hop,
                n_frames: b.n_frames,
                window,
                rows,
                exponent: b.exponent,
                reverse: b.reverse_mels,
                fft: planner.plan_fft_forward(b.fft_size),
            });
        }
        Ok(Self { norm: spec.normalize, branches, n_mels, n_frames })
    }

    /// Values per chunk: branches x mels x frames.
    pub fn output_len(&self) -> usize {
        self.branches.len() * self.n_mels * self.n_frames
    }

    /// The model input shape of one chunk: `[branches, mels, frames]`.
    pub fn output_shape(&self) -> [usize; 3] {
        [self.branches.len(), self.n_mels, self.n_frames]
    }

    /// Computes the spectrogram of one 3 s chunk into `out` (length [`Self::output_len`]).
    pub fn compute(&self, chunk: &[f32], out: &mut [f32]) {
        debug_assert_eq!(chunk.len(), WINDOW);
        debug_assert_eq!(out.len(), self.output_len());
        let lo = chunk.iter().copied().fold(f32::INFINITY, f32::min);
        let hi = chunk.iter().map(|x| x - lo).fold(f32::NEG_INFINITY, f32::max);
        let scale = 1.0 / (hi + self.norm.eps);
        let y: Vec<f32> = chunk.iter().map(|x| ((x - lo) * scale - self.norm.sub) * self.norm.mul).collect();

        let plane = self.n_mels * self.n_frames;
        for (b, branch) in self.branches.iter().enumerate() {
            let out = &mut out[b * plane..(b + 1) * plane];
            let mut frame = branch.fft.make_input_vec();
            let mut spectrum: Vec<Complex<f32>> = branch.fft.make_output_vec();
            let mut scratch = branch.fft.make_scratch_vec();
            for t in 0..branch.n_frames {
                let start = t * branch.hop;
                for ((f, x), w) in frame.iter_mut().zip(&y[start..]).zip(&branch.window) {
                    *f = x * w;
                }
                // Sizes come from the plan itself, so this cannot fail.
                let _ = branch.fft.process_with_scratch(&mut frame, &mut spectrum, &mut scratch);
                for (j, row) in branch.rows.iter().enumerate() {
                    let bins = &spectrum[row.first_bin..row.first_bin + row.weights.len()];
                    let m: f32 = row.weights.iter().zip(bins).map(|(w, c)| w * c.re).sum();
                    let i = if branch.reverse { self.n_mels - 1 - j } else { j };
                    out[i * self.n_frames + t] = (m * m).powf(branch.exponent);
                }
            }
        }
    }
}

/// Reads `count` little-endian f32 values.
pub fn read_f32(path: &Path, count: usize) -> Result<Vec<f32>, ModelError> {
    let bytes = std::fs::read(path).map_err(|e| ModelError::io(path, e))?;
    if bytes.len() != count * 4 {
        return Err(ModelError::invalid(path, format!("expected {count} f32 values, found {} bytes", bytes.len())));
    }
    Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}
