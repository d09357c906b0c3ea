//! A chunk's audio as the soundscape BirdWeather accepts (docs/birdweather.md): decoded from
//! what the hub stored (WAV for its own chunks; MP3, FLAC, Ogg for imported clips), mixed to
//! mono, resampled to 48 kHz, 16-bit, and encoded as FLAC in memory. The whole stream is known
//! before it is written, so STREAMINFO carries the real total sample count (BirdWeather records a
//! streamed FLAC with 0 samples as 0 s long, and its player hangs).

use flacenc::{component::BitRepr, error::Verify};

use crate::inference::audio::{AudioError, decode::decode_bytes, resample::resample};

/// The soundscape's sample rate.
pub const RATE: u32 = 48_000;
/// Longer audio is refused rather than uploaded (the hub's chunks are seconds long; an imported
/// BirdNET-Pi recording is 15 s).
const MAX_SECONDS: f64 = 120.0;

/// An encoded soundscape.
#[derive(Debug, Clone)]
pub struct Soundscape {
    pub flac: Vec<u8>,
    /// Samples per channel (mono: all of them), as STREAMINFO says.
    pub samples: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum FlacError {
    #[error("the chunk's audio could not be read: {0}")]
    Audio(#[from] AudioError),
    #[error("the chunk has no audio samples")]
    Empty,
    #[error("FLAC encoding failed: {0}")]
    Encode(String),
}

/// Decodes a stored audio file (`extension` is a hint: `wav`, `mp3` ...) into a soundscape.
pub fn from_stored(bytes: Vec<u8>, extension: Option<&str>) -> Result<Soundscape, FlacError> {
    let audio = decode_bytes(bytes, extension, MAX_SECONDS)?;
    let samples = resample(audio, RATE)?;
    encode(&samples)
}

/// Encodes mono samples in [-1, 1] at [`RATE`] as 16-bit FLAC.
pub fn encode(samples: &[f32]) -> Result<Soundscape, FlacError> {
    if samples.is_empty() {
        return Err(FlacError::Empty);
    }
    let ints: Vec<i32> = samples.iter().map(|s| (s.clamp(-1.0, 1.0) * 32767.0).round() as i32).collect();
    let mut config = flacenc::config::Encoder::default();
    // One thread: the sender runs beside ingest and inference on a small machine.
    config.multithread = false;
    let config = config.into_verified().map_err(|(_, e)| FlacError::Encode(e.to_string()))?;
    let source = flacenc::source::MemSource::from_samples(&ints, 1, 16, RATE as usize);
    let stream = flacenc::encode_with_fixed_block_size(&config, source, config.block_size)
        .map_err(|e| FlacError::Encode(e.to_string()))?;
    let mut sink = flacenc::bitsink::ByteSink::new();
    stream.write(&mut sink).map_err(|e| FlacError::Encode(e.to_string()))?;
    Ok(Soundscape { flac: sink.as_slice().to_vec(), samples: ints.len() as u64 })
}

/// What a FLAC file's STREAMINFO says: (sample rate, channels, bits per sample, total samples).
/// `None` when `bytes` do not start with `fLaC` and a STREAMINFO block.
pub fn stream_info(bytes: &[u8]) -> Option<(u32, u8, u8, u64)> {
    if bytes.get(..4)? != b"fLaC" || bytes.get(4)? & 0x7f != 0 {
        return None;
    }
    // The block header is 4 bytes; STREAMINFO's bytes 10..18 pack rate (20 bits), channels - 1
    // (3), bits - 1 (5) and total samples (36).
    let info = bytes.get(8..8 + 34)?;
    let packed = u64::from_be_bytes(info.get(10..18)?.try_into().ok()?);
    let rate = (packed >> 44) as u32;
    let channels = ((packed >> 41) & 0x7) as u8 + 1;
    let bits = ((packed >> 36) & 0x1f) as u8 + 1;
    Some((rate, channels, bits, packed & 0xf_ffff_ffff))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaminfo_carries_the_real_sample_count() {
        let tone: Vec<f32> = (0..144_000).map(|i| (i as f32 * 0.05).sin() * 0.5).collect();
        let s = encode(&tone).expect("encoded");
        assert_eq!(&s.flac[..4], b"fLaC");
        assert_eq!(stream_info(&s.flac), Some((48_000, 1, 16, 144_000)));
        assert!(s.flac.len() < 144_000 * 2, "compressed below raw PCM");
    }

    #[test]
    fn a_wav_at_another_rate_becomes_48_khz() {
        let wav = crate::inference::audio::encode_wav_i16(&vec![0.1; 32_000], 16_000);
        let s = from_stored(wav, Some("wav")).expect("encoded");
        let (rate, channels, _, total) = stream_info(&s.flac).expect("streaminfo");
        assert_eq!((rate, channels), (48_000, 1));
        assert!((95_000..=97_000).contains(&total), "2 s at 48 kHz, got {total}");
        assert!(matches!(encode(&[]), Err(FlacError::Empty)));
    }
}
