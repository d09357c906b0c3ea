//! The spectrogram front end, computed natively so ONNX Runtime only runs the network
//! (`birdnet_net.onnx`). It follows `frontend.json` as written by `models/fetch.sh`; the constants
//! (windows, mel matrices) come from the files it names. See `models/README.md` for the maths:
//! min/max normalisation, two STFT branches keeping the **real part** of the rFFT, sparse mel
//! projection, `(m^2)^e` compression, mel axis reversed, output `[2, 96, 511]`.
//!
//! Where the time goes, per chunk (511 frames in each branch): one complex FFT of half the frame's
//! length per frame (its plan made once at load), the real part of only the bins the mel bands
//! read, the mel bands summed over blocks of frames, and a vectorised `x^e` ([`fastpow`]). Buffers
//! are per thread and reused, and the loops run with the widest vector instructions the CPU has
//! (`pulp` picks AVX2 + FMA at run time on x86-64; NEON is always there on aarch64).

mod fastpow;

use std::{cell::RefCell, path::Path, sync::Arc};

use rustfft::{Fft, FftPlanner, num_complex::Complex};
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

/// One STFT branch.
///
/// Only the real part of the spectrum's lowest `bins_end` bins is used. A frame `u` of `N` samples
/// is packed as `z[j] = u[2j] + i u[2j+1]`, one complex FFT of `M = N/2` points gives `Z`, and
/// `Re U[k] = (Re Z[k] + Re Z[M-k]) / 2 + (cos t Im D - sin t Re D) / 2` with `D = Z[k] - conj Z[M-k]`
/// and `t = 2 pi k / N`: only the bins the mel bands read are unpacked.
struct Branch {
    /// The frame length `N`.
    size: usize,
    hop: usize,
    n_frames: usize,
    window: Vec<f32>,
    /// `cos(2 pi k / N)` and `sin(2 pi k / N)` for `k < bins_end`.
    twiddles: Vec<(f32, f32)>,
    /// One past the highest bin any mel band reads.
    bins_end: usize,
    rows: Vec<MelRow>,
    exponent: f32,
    reverse: bool,
    fft: Arc<dyn Fft<f32>>,
}

/// The front end; shareable across threads (each thread keeps its own scratch buffers).
pub struct Frontend {
    norm: Normalize,
    branches: Vec<Branch>,
    n_mels: usize,
    n_frames: usize,
}

/// Per-thread buffers, grown once and reused for every chunk.
#[derive(Default)]
struct Scratch {
    input: Vec<f32>,
    packed: Vec<Complex<f32>>,
    fft: Vec<Complex<f32>>,
    /// `[bin][frame]`: the real spectrum of every frame, bin-major so the mel bands run over
    /// frames in contiguous, vectorisable rows.
    bins: Vec<f32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

fn sized<T: Default + Clone>(v: &mut Vec<T>, len: usize) -> &mut [T] {
    if v.len() < len {
        v.resize(len, T::default());
    }
    &mut v[..len]
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
        let mut planner = FftPlanner::<f32>::new();
        let mut branches = Vec::new();
        for b in &spec.branches {
            let n = b.frame_length;
            if b.spectrum != "real_part" || b.fft_size != n || n < 2 || n % 2 != 0 || b.n_bins != n / 2 + 1 {
                return Err(bad(format!("unsupported spectrum settings in branch of size {}", b.fft_size)));
            }
            if b.n_mels != n_mels || b.n_frames != n_frames || (b.n_frames - 1) * b.hop + n > WINDOW {
                return Err(bad("branches disagree on the output shape".into()));
            }
            let window = read_f32(&dir.join(&b.window_file), n)?;
            let mel = read_f32(&dir.join(&b.mel_file), b.n_mels * b.n_bins)?;
            if b.mel_nonzero_ranges.len() != b.n_mels {
                return Err(bad("one non-zero range per mel band expected".into()));
            }
            let rows: Vec<MelRow> = b
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
            let bins_end = rows.iter().map(|r| r.first_bin + r.weights.len()).max().unwrap_or(0);
            let angle = |k: usize| 2.0 * std::f64::consts::PI * k as f64 / n as f64;
            branches.push(Branch {
                size: n,
                hop: b.hop,
                n_frames: b.n_frames,
                window,
                twiddles: (0..bins_end).map(|k| (angle(k).cos() as f32, angle(k).sin() as f32)).collect(),
                bins_end,
                rows,
                exponent: b.exponent,
                reverse: b.reverse_mels,
                fft: planner.plan_fft_forward(n / 2),
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
        SCRATCH.with_borrow_mut(|scratch| pulp::Arch::new().dispatch(Compute { frontend: self, chunk, out, scratch }));
    }

    #[inline(always)]
    fn compute_with(&self, chunk: &[f32], out: &mut [f32], scratch: &mut Scratch) {
        let lo = chunk.iter().copied().fold(f32::INFINITY, f32::min);
        let hi = chunk.iter().map(|x| x - lo).fold(f32::NEG_INFINITY, f32::max);
        let scale = 1.0 / (hi + self.norm.eps);
        let y = sized(&mut scratch.input, WINDOW);
        for (y, x) in y.iter_mut().zip(chunk) {
            *y = ((x - lo) * scale - self.norm.sub) * self.norm.mul;
        }
        let plane = self.n_mels * self.n_frames;
        for (b, branch) in self.branches.iter().enumerate() {
            let out = &mut out[b * plane..(b + 1) * plane];
            let bins = sized(&mut scratch.bins, branch.bins_end * BLOCK);
            for first in (0..branch.n_frames).step_by(BLOCK) {
                let count = BLOCK.min(branch.n_frames - first);
                for f in 0..count {
                    let start = (first + f) * branch.hop;
                    let frame = &scratch.input[start..start + branch.size];
                    branch.real_spectrum(frame, &mut scratch.packed, &mut scratch.fft, bins, f);
                }
                branch.mel_bands(bins, out, self.n_mels, first, count);
            }
            fastpow::pow_in_place(out, branch.exponent);
        }
    }
}

/// Frames whose spectra are kept together, bin-major (`[bin][frame]`), so each mel band is summed
/// over a whole block of frames at once in contiguous, vectorisable rows.
const BLOCK: usize = 16;

/// One chunk's computation, run with the widest vector instructions this CPU has (AVX2 and FMA
/// on most x86-64; the loops above are written for the compiler to vectorise).
struct Compute<'a> {
    frontend: &'a Frontend,
    chunk: &'a [f32],
    out: &'a mut [f32],
    scratch: &'a mut Scratch,
}

impl pulp::WithSimd for Compute<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        self.frontend.compute_with(self.chunk, self.out, self.scratch);
    }
}

impl Branch {
    /// Writes the real part of bins `0..bins_end` of one frame's spectrum into column `f` of `bins`
    /// (`[bin][BLOCK]`).
    #[inline(always)]
    fn real_spectrum(
        &self,
        frame: &[f32],
        packed: &mut Vec<Complex<f32>>,
        fft: &mut Vec<Complex<f32>>,
        bins: &mut [f32],
        f: usize,
    ) {
        let m = self.size / 2;
        let z = sized(packed, m);
        let floats: &mut [f32] = bytemuck::cast_slice_mut(&mut *z);
        for ((d, u), w) in floats.iter_mut().zip(frame).zip(&self.window) {
            *d = u * w;
        }
        let scratch = sized(fft, self.fft.get_inplace_scratch_len());
        self.fft.process_with_scratch(z, scratch);
        bins[f] = z[0].re;
        for (k, &(cos, sin)) in self.twiddles.iter().enumerate().skip(1) {
            let (a, b) = (z[k], z[m - k]);
            let (d_re, d_im) = (a.re - b.re, a.im + b.im);
            bins[k * BLOCK + f] = 0.5 * (a.re + b.re) + 0.5 * (cos * d_im - sin * d_re);
        }
    }

    /// `out[mel][first + f] = (sum_k mel[k] bins[k][f])^2` for the block's `count` frames, the mel
    /// axis reversed when asked.
    #[inline(always)]
    fn mel_bands(&self, bins: &[f32], out: &mut [f32], n_mels: usize, first: usize, count: usize) {
        let frames = self.n_frames;
        for (j, row) in self.rows.iter().enumerate() {
            let mut sums = [0.0f32; BLOCK];
            for (k, w) in (row.first_bin..).zip(&row.weights) {
                for (s, x) in sums.iter_mut().zip(&bins[k * BLOCK..(k + 1) * BLOCK]) {
                    *s += w * x;
                }
            }
            let i = if self.reverse { n_mels - 1 - j } else { j };
            for (d, s) in out[i * frames + first..i * frames + first + count].iter_mut().zip(sums) {
                *d = s * s;
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
