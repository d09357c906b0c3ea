//! A captured chunk as it leaves capture: 48 kHz mono 16-bit PCM with the profile's gain applied.

use chrono::{DateTime, Utc};

/// The sample rate of every chunk a satellite sends (SPEC 2.1).
pub const CHUNK_RATE: u32 = 48_000;

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

    /// Root mean square amplitude on the 0..1 scale (full scale = 1.0).
    pub fn rms(&self) -> f64 {
        todo!("capture helper")
    }

    /// A 16-bit mono WAV file of the chunk.
    pub fn to_wav(&self) -> Vec<u8> {
        todo!("capture helper")
    }
}
