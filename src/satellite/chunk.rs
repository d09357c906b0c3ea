//! A captured chunk as it leaves capture: 48 kHz mono 16-bit PCM with the profile's gain applied.

use std::io::Cursor;

use chrono::{DateTime, Utc};

/// The sample rate of every chunk a satellite sends (SPEC 2.1).
pub const CHUNK_RATE: u32 = 48_000;

/// One chunk of captured audio, ready for the gate and the outbox.
#[derive(Debug, Clone, PartialEq)]
pub struct CapturedChunk {
    /// When the first sample was recorded.
    pub recorded_at: DateTime<Utc>,
    /// Mono samples at [`CHUNK_RATE`].
    pub samples: Vec<i16>,
}

impl CapturedChunk {
    /// Length in milliseconds.
    pub fn duration_ms(&self) -> u32 {
        (self.samples.len() as u64 * 1000 / u64::from(CHUNK_RATE)) as u32
    }

    /// Root mean square amplitude on the 0..1 scale (full scale = 1.0; samples are divided by
    /// 32768, so a full-scale square wave of `i16::MIN`/`i16::MAX` is within 0.003% of 1).
    /// An empty chunk is silent (0).
    pub fn rms(&self) -> f64 {
        if self.samples.is_empty() {
            return 0.0;
        }
        let sum: f64 = self
            .samples
            .iter()
            .map(|s| {
                let x = f64::from(*s) / 32768.0;
                x * x
            })
            .sum();
        (sum / self.samples.len() as f64).sqrt()
    }

    /// The samples as floats in [-1, 1) (the classifier's input scale).
    pub fn samples_f32(&self) -> Vec<f32> {
        self.samples.iter().map(|s| f32::from(*s) / 32768.0).collect()
    }

    /// A 16-bit mono WAV file of the chunk at [`CHUNK_RATE`], built in memory.
    pub fn to_wav(&self) -> Vec<u8> {
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: CHUNK_RATE,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut cursor = Cursor::new(Vec::with_capacity(44 + self.samples.len() * 2));
        // Writing to memory only fails on a data chunk over 4 GiB, which a chunk never is;
        // an encoding failure yields an empty (invalid) file rather than a panic.
        let written = (|| -> hound::Result<()> {
            let mut writer = hound::WavWriter::new(&mut cursor, spec)?;
            let mut w16 = writer.get_i16_writer(self.samples.len() as u32);
            for s in &self.samples {
                w16.write_sample(*s);
            }
            w16.flush()?;
            writer.finalize()
        })();
        match written {
            Ok(()) => cursor.into_inner(),
            Err(e) => {
                tracing::error!("encoding a chunk as WAV failed: {e}");
                Vec::new()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(samples: Vec<i16>) -> CapturedChunk {
        CapturedChunk { recorded_at: Utc::now(), samples }
    }

    #[test]
    fn rms_of_square_wave_and_silence() {
        let square: Vec<i16> = (0..48_000).map(|i| if (i / 24) % 2 == 0 { i16::MAX } else { i16::MIN }).collect();
        let rms = chunk(square).rms();
        assert!((rms - 1.0).abs() < 1e-3, "full-scale square wave: {rms}");
        assert_eq!(chunk(vec![0; 48_000]).rms(), 0.0);
        assert_eq!(chunk(Vec::new()).rms(), 0.0);
        let half: Vec<i16> = (0..4800).map(|i| if i % 2 == 0 { 16_384 } else { -16_384 }).collect();
        assert!((chunk(half).rms() - 0.5).abs() < 1e-9);
    }

    #[test]
    fn wav_round_trips_through_hound() {
        let samples: Vec<i16> = (0..144_000).map(|i| ((i as f64 * 0.05).sin() * 20_000.0) as i16).collect();
        let c = chunk(samples.clone());
        assert_eq!(c.duration_ms(), 3000);
        let wav = c.to_wav();
        assert_eq!(wav.len(), 44 + samples.len() * 2);
        let mut reader = hound::WavReader::new(Cursor::new(wav)).expect("a WAV file");
        let spec = reader.spec();
        assert_eq!((spec.channels, spec.sample_rate, spec.bits_per_sample), (1, CHUNK_RATE, 16));
        assert_eq!(spec.sample_format, hound::SampleFormat::Int);
        let back: Vec<i16> = reader.samples::<i16>().map(|s| s.expect("sample")).collect();
        assert_eq!(back, samples);
    }
}
