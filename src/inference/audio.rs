//! Audio in: WAV decoding (hound), resampling to the model's 48 kHz (rubato) and cutting into
//! 3 s windows. Every malformed input is an [`AudioError`], never a panic.
//!
//! - [`decode`]: any supported file (WAV, FLAC, MP3, Ogg Vorbis), whole or block by block.
//! - [`resample`]: rate conversion of a clip or of a stream of blocks.
//! - [`probe`]: a WAV's rate and length without decoding it (ingest's check).

pub mod decode;
pub mod probe;
pub mod resample;

pub use probe::{WavShape, probe_wav};

use std::io::Cursor;

use hound::{SampleFormat, WavReader};

/// The model's sample rate.
pub const SAMPLE_RATE: u32 = 48_000;
/// Samples in one 3 s model window.
pub const WINDOW: usize = 144_000;
/// A trailing piece shorter than this is dropped rather than padded (unless it is the only one).
pub const MIN_TAIL: usize = SAMPLE_RATE as usize;

/// Why audio could not be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AudioError {
    #[error("not a readable WAV file: {0}")]
    Malformed(String),
    #[error("unsupported WAV format: {0}")]
    Unsupported(String),
    #[error("the file holds no audio")]
    Empty,
    #[error("the recording is too long ({seconds:.0} s; at most {max:.0} s)")]
    TooLong { seconds: f64, max: f64 },
    #[error("resampling failed: {0}")]
    Resample(String),
    #[error("not a readable audio file (WAV, FLAC, MP3 or Ogg Vorbis): {0}")]
    Undecodable(String),
}

/// Mono samples in [-1, 1] at `sample_rate`.
#[derive(Debug, Clone, PartialEq)]
pub struct Audio {
    pub samples: Vec<f32>,
    pub sample_rate: u32,
}

impl Audio {
    pub fn duration_secs(&self) -> f64 {
        self.samples.len() as f64 / f64::from(self.sample_rate)
    }
}

/// Decodes a WAV file: 8/16/24/32-bit integer or 32-bit float PCM, any channel count (averaged
/// to mono). Recordings longer than `max_seconds` are refused before their samples are read.
pub fn decode_wav(bytes: &[u8], max_seconds: f64) -> Result<Audio, AudioError> {
    decode_wav_into(bytes, max_seconds, Vec::new())
}

/// [`decode_wav`], writing 16-bit PCM's samples into `buffer` (cleared first): a worker reuses
/// one buffer per chunk instead of mapping fresh memory for each.
pub fn decode_wav_into(bytes: &[u8], max_seconds: f64, buffer: Vec<f32>) -> Result<Audio, AudioError> {
    let mut reader = WavReader::new(Cursor::new(bytes)).map_err(|e| AudioError::Malformed(e.to_string()))?;
    let spec = reader.spec();
    let channels = usize::from(spec.channels);
    if channels == 0 {
        return Err(AudioError::Malformed("zero channels".into()));
    }
    if !(1_000..=384_000).contains(&spec.sample_rate) {
        return Err(AudioError::Unsupported(format!("sample rate {} Hz", spec.sample_rate)));
    }
    let seconds = f64::from(reader.duration()) / f64::from(spec.sample_rate);
    if seconds > max_seconds {
        return Err(AudioError::TooLong { seconds, max: max_seconds });
    }
    // Trust the data, not the header: a lying header cannot make us allocate more than the file holds.
    let frames_hint = (reader.duration() as usize).min(bytes.len() / channels.max(1));

    // 16-bit PCM (what satellites send) is converted straight from the bytes: hound's
    // sample-by-sample reader was a tenth of the hub's work per chunk.
    if spec.sample_format == SampleFormat::Int && spec.bits_per_sample == 16 {
        let values = reader.len() as usize;
        // Reading the first sample proves the container holds 2-byte samples (hound refuses any
        // other width for 16 bits); the data starts just before where it left off.
        match reader.samples::<i16>().next() {
            None => return Err(AudioError::Empty),
            Some(Err(e)) => return Err(AudioError::Malformed(format!("truncated or corrupt sample data: {e}"))),
            Some(Ok(_)) => {}
        }
        let start = usize::try_from(reader.into_inner().position()).unwrap_or(usize::MAX).saturating_sub(2);
        let data = bytes.get(start..).unwrap_or_default();
        if data.len() < values * 2 {
            return Err(AudioError::Malformed(format!(
                "truncated or corrupt sample data: {} of {} bytes",
                data.len(),
                values * 2
            )));
        }
        return mono_i16(&data[..values * 2], channels, spec.sample_rate, buffer);
    }
    let interleaved: Vec<f32> = match (spec.sample_format, spec.bits_per_sample) {
        (SampleFormat::Float, 32) => collect(reader.into_samples::<f32>(), |s| s)?,
        (SampleFormat::Int, bits @ (8 | 16 | 24 | 32)) => {
            let scale = 1.0 / (1u64 << (bits - 1)) as f32;
            collect(reader.into_samples::<i32>(), |s| s as f32 * scale)?
        }
        (format, bits) => return Err(AudioError::Unsupported(format!("{bits}-bit {format:?} samples"))),
    };
    if interleaved.is_empty() {
        return Err(AudioError::Empty);
    }
    let mut samples = Vec::with_capacity(frames_hint);
    samples.extend(interleaved.chunks(channels).map(|frame| frame.iter().sum::<f32>() / frame.len() as f32));
    if samples.iter().any(|s| !s.is_finite()) {
        return Err(AudioError::Malformed("samples are not finite numbers".into()));
    }
    Ok(Audio { samples, sample_rate: spec.sample_rate })
}

/// Little-endian 16-bit samples, `channels` interleaved, averaged to mono into `samples`.
fn mono_i16(data: &[u8], channels: usize, sample_rate: u32, mut samples: Vec<f32>) -> Result<Audio, AudioError> {
    const SCALE: f32 = 1.0 / 32768.0;
    let value = |b: &[u8]| f32::from(i16::from_le_bytes([b[0], b[1]])) * SCALE;
    samples.clear();
    if channels == 1 {
        samples.extend(data.chunks_exact(2).map(value));
    } else {
        let share = 1.0 / channels as f32;
        samples
            .extend(data.chunks_exact(2 * channels).map(|frame| frame.chunks_exact(2).map(value).sum::<f32>() * share));
    }
    if samples.is_empty() {
        return Err(AudioError::Empty);
    }
    Ok(Audio { samples, sample_rate })
}

fn collect<S>(
    samples: impl Iterator<Item = hound::Result<S>>,
    convert: impl Fn(S) -> f32,
) -> Result<Vec<f32>, AudioError> {
    samples
        .map(|s| s.map(&convert).map_err(|e| AudioError::Malformed(format!("truncated or corrupt sample data: {e}"))))
        .collect()
}

/// Resamples to 48 kHz (band-limited FFT resampler); audio already at 48 kHz is returned as is.
pub fn to_model_rate(audio: Audio) -> Result<Vec<f32>, AudioError> {
    resample::resample(audio, SAMPLE_RATE)
}

/// Cuts 48 kHz samples into 3 s windows stepping by `WINDOW - overlap` samples. A short final
/// piece is zero-padded when it is at least [`MIN_TAIL`] long or when it is the whole recording;
/// otherwise it is dropped. Returns (start sample, window) pairs.
pub fn windows(samples: &[f32], overlap: usize) -> Vec<(usize, Vec<f32>)> {
    window_spans(samples, overlap)
        .into_iter()
        .map(|(start, padded)| (start, padded.unwrap_or_else(|| samples[start..start + WINDOW].to_vec())))
        .collect()
}

/// The windows of [`windows`] without copying the full ones: each start sample, with a padded
/// copy only for a short final piece (`None`: the window is `samples[start..start + WINDOW]`).
pub fn window_spans(samples: &[f32], overlap: usize) -> Vec<(usize, Option<Vec<f32>>)> {
    let step = WINDOW.saturating_sub(overlap).max(SAMPLE_RATE as usize / 10);
    let mut out = Vec::new();
    let mut start = 0;
    while start < samples.len() {
        let piece = &samples[start..(start + WINDOW).min(samples.len())];
        if piece.len() < WINDOW && piece.len() < MIN_TAIL && start > 0 {
            break;
        }
        out.push((start, (piece.len() < WINDOW).then(|| pad(piece))));
        if start + WINDOW >= samples.len() {
            break;
        }
        start += step;
    }
    out
}

/// The window a [`window_spans`] entry stands for.
pub fn span<'a>(samples: &'a [f32], (start, padded): &'a (usize, Option<Vec<f32>>)) -> &'a [f32] {
    match padded {
        Some(w) => w,
        None => &samples[*start..*start + WINDOW],
    }
}

/// Exactly one window: trimmed to 3 s or zero-padded up to it.
pub fn pad(samples: &[f32]) -> Vec<f32> {
    let mut w = samples[..samples.len().min(WINDOW)].to_vec();
    w.resize(WINDOW, 0.0);
    w
}

/// Encodes mono f32 samples as a 16-bit PCM WAV (for tests, benchmarks and simulated satellites).
pub fn encode_wav_i16(samples: &[f32], sample_rate: u32) -> Vec<u8> {
    let spec = hound::WavSpec { channels: 1, sample_rate, bits_per_sample: 16, sample_format: SampleFormat::Int };
    let mut cursor = Cursor::new(Vec::new());
    {
        let Ok(mut writer) = hound::WavWriter::new(&mut cursor, spec) else { return Vec::new() };
        for s in samples {
            let _ = writer.write_sample((s.clamp(-1.0, 1.0) * 32767.0) as i16);
        }
        let _ = writer.finalize();
    }
    cursor.into_inner()
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_decode;
