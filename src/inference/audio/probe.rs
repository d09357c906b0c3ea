//! A WAV's shape without decoding its samples, for ingest: the hub stores a chunk's bytes as the
//! satellite sent them and only needs to know that [`decode_wav`] will accept them when a worker
//! reads them, and their rate and length.
//!
//! 16-bit PCM, what satellites send, is judged from the header and the data's length: any such
//! sample decodes, so a file whose data is all there is a file `decode_wav` accepts. Anything
//! else (float samples that could be NaN, other widths, a short or odd file) is decoded, which
//! also gives the refusal the same words as before.

use std::io::Cursor;

use hound::{SampleFormat, WavReader};

use super::{AudioError, decode_wav};

/// What ingest needs to know of a WAV.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WavShape {
    pub sample_rate: u32,
    /// Samples per channel (what the mono mix will hold).
    pub frames: u32,
}

impl WavShape {
    pub fn duration_secs(&self) -> f64 {
        f64::from(self.frames) / f64::from(self.sample_rate)
    }
}

/// The shape of a WAV that [`decode_wav`] accepts with `max_seconds`, or the error it gives.
pub fn probe_wav(bytes: &[u8], max_seconds: f64) -> Result<WavShape, AudioError> {
    if let Some(shape) = pcm16_shape(bytes, max_seconds) {
        return Ok(shape);
    }
    let audio = decode_wav(bytes, max_seconds)?;
    Ok(WavShape { sample_rate: audio.sample_rate, frames: audio.samples.len() as u32 })
}

/// The shape of a complete, non-empty 16-bit PCM WAV within `decode_wav`'s limits; `None` for
/// anything else, which is left to the decoder.
fn pcm16_shape(bytes: &[u8], max_seconds: f64) -> Option<WavShape> {
    let mut reader = WavReader::new(Cursor::new(bytes)).ok()?;
    let spec = reader.spec();
    let usable = spec.sample_format == SampleFormat::Int
        && spec.bits_per_sample == 16
        && spec.channels > 0
        && (1_000..=384_000).contains(&spec.sample_rate);
    if !usable || f64::from(reader.duration()) / f64::from(spec.sample_rate) > max_seconds {
        return None;
    }
    let (frames, samples) = (reader.duration(), reader.len() as usize);
    // Reading one sample proves the container holds 2-byte samples (hound refuses any other
    // width for 16 bits); the rest then decode exactly when their bytes are there.
    reader.samples::<i16>().next()?.ok()?;
    let left = bytes.len().saturating_sub(reader.into_inner().position() as usize);
    (left >= (samples - 1) * 2).then_some(WavShape { sample_rate: spec.sample_rate, frames })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::audio::encode_wav_i16;

    /// What the decoder says, as a shape.
    fn decoded(bytes: &[u8], max: f64) -> Result<WavShape, AudioError> {
        decode_wav(bytes, max).map(|a| WavShape { sample_rate: a.sample_rate, frames: a.samples.len() as u32 })
    }

    #[test]
    fn agrees_with_the_decoder_on_good_and_damaged_files() {
        let tone: Vec<f32> = (0..48_000).map(|i| (i as f32 * 0.05).sin() * 0.3).collect();
        let good = encode_wav_i16(&tone, 16_000);
        let stereo = {
            let spec = hound::WavSpec {
                channels: 2,
                sample_rate: 48_000,
                bits_per_sample: 16,
                sample_format: SampleFormat::Int,
            };
            let mut cur = Cursor::new(Vec::new());
            let mut w = hound::WavWriter::new(&mut cur, spec).expect("writer");
            (0..9_600).for_each(|i| w.write_sample((i % 300) as i16).expect("sample"));
            w.finalize().expect("finalize");
            cur.into_inner()
        };
        let mut cases: Vec<Vec<u8>> = vec![good.clone(), stereo, encode_wav_i16(&[], 48_000)];
        for cut in [0, 10, 44, 45, 46, good.len() / 2, good.len() - 2, good.len() - 1] {
            cases.push(good[..cut].to_vec());
        }
        // Deterministic mutations of the header and the first bytes of data.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..1000 {
            let mut bytes = good.clone();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            bytes[(seed as usize) % 60] = (seed >> 32) as u8;
            cases.push(bytes);
        }
        for (i, bytes) in cases.iter().enumerate() {
            for max in [60.0, 2.0, 1.0] {
                assert_eq!(probe_wav(bytes, max), decoded(bytes, max), "case {i}, max {max}");
            }
        }
        assert!(pcm16_shape(&good, 60.0).is_some(), "a satellite's chunk takes the short way");
        assert_eq!(probe_wav(&good, 60.0).expect("good").duration_secs(), 3.0);
    }
}
