//! The labelled set of `birdhub bench quality`: where it lives, what its manifest says, and how
//! its bird recordings are mixed with non-bird sound at a signal-to-noise ratio.
//!
//! `benches/quality/make_set.py` (run by `benches/quality/make-set.sh`) writes the audio and the
//! manifest from `benches/quality/recipe.toml`; this side only reads them. The mixes are made
//! here, at run time, so the set on disk holds each sound once.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::inference::audio;

/// The files the set's hash covers, as `make_set.py`'s `HASHED` lists them (same order).
const HASHED: [(&str, &[u8]); 4] = [
    ("benches/quality/recipe.toml", include_bytes!("../../benches/quality/recipe.toml")),
    ("benches/quality/make_set.py", include_bytes!("../../benches/quality/make_set.py")),
    ("models/recordings.py", include_bytes!("../../models/recordings.py")),
    ("models/SHA256SUMS", include_bytes!("../../models/SHA256SUMS")),
];

/// sha256 over each file's path, a NUL, its length (8 bytes, little-endian) and its bytes; the
/// first 16 hex digits. `make_set.py`'s `set_hash` computes the same.
pub fn set_hash(files: &[(&str, &[u8])]) -> String {
    let mut h = Sha256::new();
    for (path, data) in files {
        h.update(path.as_bytes());
        h.update([0]);
        h.update((data.len() as u64).to_le_bytes());
        h.update(data);
    }
    hex::encode(h.finalize())[..16].to_owned()
}

/// The hash of the recipe this binary was built with.
pub fn built_in_hash() -> String {
    set_hash(&HASHED)
}

/// `$BIRDHUB_CACHE` (default `~/.cache/birdhub`).
fn cache_dir() -> PathBuf {
    std::env::var_os("BIRDHUB_CACHE").map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
        home.join(".cache").join("birdhub")
    })
}

/// The set's directory: `--set-dir`, else what `make-set.sh` of this checkout makes or reuses
/// (it prints the directory), else the built-in recipe's directory in the cache.
pub fn locate(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(dir) = given {
        return Ok(dir.to_owned());
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/quality/make-set.sh");
    if script.is_file() {
        eprintln!("bench quality: {} (makes the set once, then reuses it)", script.display());
        let out = std::process::Command::new("bash")
            .arg(&script)
            .stderr(std::process::Stdio::inherit())
            .output()
            .with_context(|| format!("running {}", script.display()))?;
        anyhow::ensure!(out.status.success(), "{} failed ({})", script.display(), out.status);
        let dir = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        return Ok(PathBuf::from(dir));
    }
    let dir = cache_dir().join("quality").join(built_in_hash());
    anyhow::ensure!(
        dir.join("manifest.json").is_file(),
        "no quality set at {}: run benches/quality/make-set.sh from a birdhub checkout, or pass --set-dir",
        dir.display()
    );
    Ok(dir)
}

/// Where the location filter runs for a recording.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct Place {
    pub name: String,
    pub lat: f64,
    pub lon: f64,
    pub week: u32,
}

/// One 3 s window of a bird recording.
#[derive(Debug, Clone, Deserialize)]
pub struct LabelledWindow {
    pub start: usize,
    /// Species codes the source says are singing in this window.
    pub species: Vec<String>,
    /// False where the source labels nothing here: the window is classified (its neighbours
    /// may need it) but not scored.
    pub scored: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Bird {
    pub id: String,
    /// The recordings' family (`great_tit`, `storm_petrel` ...), for per-group figures.
    pub group: String,
    pub file: String,
    pub place: Place,
    /// Sample ranges `[from, to)` the bird's power is measured over (its labelled spans).
    pub power_spans: Vec<[usize; 2]>,
    pub windows: Vec<LabelledWindow>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Noise {
    pub kind: String,
    pub file: String,
    pub seconds: f64,
}

/// One bird recording mixed with one non-bird sound, starting `offset` samples into it.
#[derive(Debug, Clone, Deserialize)]
pub struct Mix {
    pub bird: usize,
    pub noise: usize,
    pub snr_db: i32,
    pub offset: usize,
}

/// `manifest.json` of a set.
#[derive(Debug, Clone, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub hash: String,
    pub seed: u64,
    pub snr_db: Vec<i32>,
    pub noise_place: Place,
    pub birds: Vec<Bird>,
    pub noises: Vec<Noise>,
    pub mixes: Vec<Mix>,
}

/// A set read from disk: its manifest and every sound at 48 kHz.
pub struct Set {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub birds: Vec<Vec<f32>>,
    pub noises: Vec<Vec<f32>>,
}

impl Set {
    pub fn load(dir: &Path) -> anyhow::Result<Self> {
        let path = dir.join("manifest.json");
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let manifest: Manifest = serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        anyhow::ensure!(
            manifest.format == "birdhub-quality-set/1",
            "{}: unknown format {}",
            path.display(),
            manifest.format
        );
        let read = |rel: &str| -> anyhow::Result<Vec<f32>> {
            let p = dir.join(rel);
            let bytes = std::fs::read(&p).with_context(|| format!("reading {}", p.display()))?;
            let decoded = audio::decode_wav(&bytes, 3600.0).with_context(|| p.display().to_string())?;
            anyhow::ensure!(decoded.sample_rate == audio::SAMPLE_RATE, "{}: not 48 kHz", p.display());
            Ok(decoded.samples)
        };
        let birds = manifest.birds.iter().map(|b| read(&b.file)).collect::<anyhow::Result<Vec<_>>>()?;
        let noises = manifest.noises.iter().map(|n| read(&n.file)).collect::<anyhow::Result<Vec<_>>>()?;
        for (m, i) in manifest.mixes.iter().zip(0..) {
            let (Some(bird), Some(noise)) = (birds.get(m.bird), noises.get(m.noise)) else {
                anyhow::bail!("{}: mix {i} names a bird or noise that is not there", path.display());
            };
            anyhow::ensure!(m.offset + bird.len() <= noise.len(), "{}: mix {i} runs past its noise", path.display());
        }
        Ok(Self { dir: dir.to_owned(), manifest, birds, noises })
    }

    /// One mix's samples (see [`mix_at_snr`]).
    pub fn mixed(&self, m: &Mix) -> Vec<f32> {
        let bird = &self.birds[m.bird];
        let noise = &self.noises[m.noise][m.offset..m.offset + bird.len()];
        mix_at_snr(bird, noise, &self.manifest.birds[m.bird].power_spans, m.snr_db as f32)
    }
}

/// Mean square of `x` over `spans` (all of `x` when `spans` is empty).
pub fn power(x: &[f32], spans: &[[usize; 2]]) -> f64 {
    let (mut sum, mut n) = (0.0f64, 0usize);
    let whole = [[0, x.len()]];
    for [from, to] in if spans.is_empty() { &whole[..] } else { spans } {
        for v in &x[(*from).min(x.len())..(*to).min(x.len())] {
            sum += f64::from(*v) * f64::from(*v);
            n += 1;
        }
    }
    if n == 0 { 0.0 } else { sum / n as f64 }
}

/// `bird + g * noise`, with `g` such that the bird's power over `spans` is `snr_db` above the
/// scaled noise's power over the same spans. `noise` is as long as `bird`.
pub fn mix_at_snr(bird: &[f32], noise: &[f32], spans: &[[usize; 2]], snr_db: f32) -> Vec<f32> {
    let (pb, pn) = (power(bird, spans), power(noise, spans));
    let g = if pn > 0.0 { (pb / (pn * 10f64.powf(f64::from(snr_db) / 10.0))).sqrt() as f32 } else { 0.0 };
    bird.iter().zip(noise).map(|(b, n)| b + g * n).collect()
}

/// Samples `[from, from + WINDOW)` of `x`, zero where `x` has none (as the hub pads a window whose
/// neighbouring chunk is missing).
pub fn window_at(x: &[f32], from: isize) -> Vec<f32> {
    let mut w = vec![0.0; audio::WINDOW];
    for (i, v) in w.iter_mut().enumerate() {
        let at = from + i as isize;
        if let Some(s) = usize::try_from(at).ok().and_then(|at| x.get(at)) {
            *v = *s;
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mix_has_the_asked_power_ratio_over_the_spans() {
        let n = 48_000;
        let bird: Vec<f32> = (0..n).map(|i| if i < 12_000 { (i as f32 * 0.3).sin() * 0.5 } else { 0.0 }).collect();
        let noise: Vec<f32> = (0..n).map(|i| ((i * 7919 % 1000) as f32 / 500.0 - 1.0) * 0.1).collect();
        let spans = [[0, 12_000]];
        for snr in [20.0f32, 0.0, -5.0] {
            let mixed = mix_at_snr(&bird, &noise, &spans, snr);
            let added: Vec<f32> = mixed.iter().zip(&bird).map(|(m, b)| m - b).collect();
            let got = 10.0 * (power(&bird, &spans) / power(&added, &spans)).log10();
            assert!((got - f64::from(snr)).abs() < 0.01, "asked {snr} dB, got {got:.3} dB");
            assert!(added[30_000].abs() > 0.0, "the noise runs past the song");
        }
        assert_eq!(mix_at_snr(&bird, &[0.0; 48_000], &spans, 0.0), bird, "silence adds nothing");
    }

    #[test]
    fn the_hash_changes_with_the_seed_and_the_generator() {
        let recipe = std::str::from_utf8(HASHED[0].1).expect("utf-8");
        assert!(recipe.contains("\nseed = "), "the recipe keeps its seed");
        let reseeded = recipe.replacen("\nseed = ", "\nseed = 1", 1);
        let mut files: [(&str, &[u8]); 4] = HASHED;
        assert_eq!(set_hash(&files), built_in_hash());
        files[0].1 = reseeded.as_bytes();
        assert_ne!(set_hash(&files), built_in_hash());
        let mut files: [(&str, &[u8]); 4] = HASHED;
        files[1].1 = b"print('another generator')";
        assert_ne!(set_hash(&files), built_in_hash());
        assert_eq!(built_in_hash().len(), 16);
    }

    #[test]
    fn windows_outside_the_recording_are_zero() {
        let x: Vec<f32> = (1..=audio::WINDOW * 2).map(|i| i as f32).collect();
        let back = window_at(&x, -(audio::WINDOW as isize) / 2);
        assert_eq!((back[0], back[audio::WINDOW / 2]), (0.0, 1.0));
        let forward = window_at(&x, (audio::WINDOW * 3 / 2) as isize);
        assert_eq!(forward[audio::WINDOW / 2 - 1], (audio::WINDOW * 2) as f32);
        assert_eq!(forward[audio::WINDOW / 2], 0.0);
    }
}
