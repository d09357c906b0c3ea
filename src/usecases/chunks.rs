//! What a satellite does most: hand over a chunk of audio. The WAV is checked (mono, readable,
//! its rate and length as announced), written durably to disk, and its row and inference job are
//! committed together; only then is the chunk acknowledged `stored`. A retried chunk is stored once.
//! A disk under retention's minimum refuses new chunks with `disk_full` (the satellite keeps them).
//! The MQTT ingest calls this; an HTTP upload would call the same function.
//!
//! - [`check`]: everything that needs no I/O, before a chunk waits for the disk.
//! - [`batch`]: chunks that arrive together share one set of fsyncs and one commit.
//! - [`writer`]: the task that gathers them, with back-pressure.
//! - [`clock`]: a stamp the satellite's clock got implausibly wrong is corrected before writing.

mod batch;
pub mod clock;
mod writer;

pub use writer::{ChunkWriter, Handles};

use crate::{
    clock::Clock,
    ids::{ChunkId, SatelliteId, TenantId},
    inference::audio,
    objects::{ObjectError, ObjectStore},
    store::{self, Store},
    time::Timestamp,
};

/// Chunk durations accepted (a standard chunk is 3 s).
pub const MIN_CHUNK_MS: i64 = 500;
pub const MAX_CHUNK_MS: i64 = 10_000;
/// How far the announced duration may be from the WAV's own.
const DURATION_SLACK_MS: i64 = 100;

/// A chunk as the satellite announced it, with its WAV bytes.
#[derive(Debug, Clone)]
pub struct Upload {
    pub tenant: TenantId,
    pub satellite: SatelliteId,
    pub chunk: ChunkId,
    pub recorded_at: Timestamp,
    pub duration_ms: i64,
    pub sample_rate: i64,
    pub location: Option<(f64, f64)>,
    pub wav: Vec<u8>,
}

/// What became of an accepted chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Written now; the inference job is queued.
    New,
    /// The hub already holds this chunk (a retry); nothing was written.
    Duplicate,
}

#[derive(Debug, thiserror::Error)]
pub enum ChunkError {
    #[error("latitude/longitude out of range")]
    InvalidLocation,
    #[error("audio must be mono")]
    NotMono,
    #[error("{0}")]
    BadWav(String),
    #[error("sampleRate {announced} does not match the WAV's {actual} Hz")]
    SampleRateMismatch { announced: i64, actual: u32 },
    #[error("chunk is {0} ms; {MIN_CHUNK_MS} to {MAX_CHUNK_MS} ms accepted")]
    BadLength(i64),
    #[error("durationMs {announced} does not match the WAV's {actual} ms")]
    DurationMismatch { announced: i64, actual: i64 },
    #[error("the hub could not store the chunk ({0}); send it again")]
    NotStored(String),
    /// The disk is under its minimum and retention could not make room (`disk_full: ...`).
    #[error("{0}")]
    DiskFull(#[from] super::audio_retention::DiskFull),
}

/// A refusal as the metrics count it (a closed set of labels).
impl From<&ChunkError> for crate::metrics::RefusedReason {
    fn from(e: &ChunkError) -> Self {
        use ChunkError::*;
        match e {
            DiskFull(_) => Self::DiskFull,
            NotStored(_) => Self::NotStored,
            InvalidLocation
            | NotMono
            | BadWav(_)
            | SampleRateMismatch { .. }
            | BadLength(_)
            | DurationMismatch { .. } => Self::BadAudio,
        }
    }
}

impl From<store::Error> for ChunkError {
    fn from(e: store::Error) -> Self {
        Self::NotStored(e.to_string())
    }
}

impl From<ObjectError> for ChunkError {
    fn from(e: ObjectError) -> Self {
        Self::NotStored(e.to_string())
    }
}

/// Whether the WAV announces more than one channel (a broken header is judged by the decoder).
fn is_stereo(wav: &[u8]) -> bool {
    hound::WavReader::new(std::io::Cursor::new(wav)).map(|r| r.spec().channels != 1).unwrap_or(false)
}

/// An upload that passed every check and waits to be written, with its WAV's own length.
#[derive(Debug, Clone)]
pub struct Checked {
    up: Upload,
    wav_ms: i64,
    /// The `recordedAt` the satellite sent, when [`clock::correct`] replaced it.
    reported_at: Option<Timestamp>,
}

impl Checked {
    pub fn chunk(&self) -> ChunkId {
        self.up.chunk
    }
}

/// Checks a chunk without any I/O: location, a mono WAV that the workers will decode, its rate
/// and length as announced. The samples are not decoded here ([`audio::probe_wav`]).
pub fn check(up: Upload) -> Result<Checked, ChunkError> {
    let bad_location = |(lat, lon): (f64, f64)| !(-90.0..=90.0).contains(&lat) || !(-180.0..=180.0).contains(&lon);
    if up.location.is_some_and(bad_location) {
        return Err(ChunkError::InvalidLocation);
    }
    if is_stereo(&up.wav) {
        return Err(ChunkError::NotMono);
    }
    let shape =
        audio::probe_wav(&up.wav, MAX_CHUNK_MS as f64 / 1000.0).map_err(|e| ChunkError::BadWav(e.to_string()))?;
    let wav_ms = (shape.duration_secs() * 1000.0).round() as i64;
    if i64::from(shape.sample_rate) != up.sample_rate {
        return Err(ChunkError::SampleRateMismatch { announced: up.sample_rate, actual: shape.sample_rate });
    }
    if !(MIN_CHUNK_MS..=MAX_CHUNK_MS).contains(&wav_ms) {
        return Err(ChunkError::BadLength(wav_ms));
    }
    if (wav_ms - up.duration_ms).abs() > DURATION_SLACK_MS {
        return Err(ChunkError::DurationMismatch { announced: up.duration_ms, actual: wav_ms });
    }
    Ok(Checked { up, wav_ms, reported_at: None })
}

/// Checks and stores one chunk. On `Ok` the WAV is on disk and the row and job are committed.
/// Ingest stores through a [`ChunkWriter`] instead, which commits chunks that arrive together.
pub async fn store_chunk(
    store: &Store,
    objects: &ObjectStore,
    clock: &Clock,
    disk: &super::audio_retention::DiskGuard,
    up: Upload,
) -> Result<Stored, ChunkError> {
    let checked = check(up)?;
    let mut results = batch::store_batch(store, objects, clock, disk, vec![checked]).await;
    results.pop().unwrap_or_else(|| Err(ChunkError::NotStored("no result".into())))
}

#[cfg(test)]
mod tests;
