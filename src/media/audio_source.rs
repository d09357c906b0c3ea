//! The audio a spectrogram is drawn from, read within bounds (issue 48, finding 4).
//!
//! A stored chunk is the hub's own WAV of a few seconds, but an imported clip may be anything an
//! old station had, hundreds of megabytes of it, and anyone holding a share link may ask for its
//! picture. So:
//! - a file of up to [`WHOLE_MAX`] bytes is read whole and decoded as before (at most
//!   [`MAX_SECONDS`]; a longer one is refused);
//! - a larger file is never read whole: its first [`PREFIX_MAX`] bytes are decoded front to back
//!   and decoding stops after [`MAX_SECONDS`] (the picture shows the start of the recording);
//! - a file that did not decode is remembered by its key ([`Sources::undecodable`]), so the next
//!   request is refused at once without reading it again (stored objects never change);
//! - at most one drawing per CPU core runs at a time ([`Sources::slot`]); the others wait, so a
//!   burst costs time, not memory.

use std::{sync::Arc, time::Duration};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::{
    inference::audio::{self, Audio, decode},
    objects::{ObjectError, ObjectStore},
};

/// Files up to this size are read whole, as they always were.
pub const WHOLE_MAX: u64 = 16 * 1_048_576;
/// How much of a larger file is read at most.
pub const PREFIX_MAX: u64 = 16 * 1_048_576;
/// The longest stretch of audio a picture shows.
pub const MAX_SECONDS: f64 = 60.0;
/// Samples decoded at most (a minute at 96 kHz; 23 MB of `f32`): a minute at a higher rate is
/// cut shorter.
pub const MAX_SAMPLES: usize = 60 * 96_000;
/// How many files are remembered as undecodable, and for how long.
const REMEMBERED: u64 = 10_000;
const REMEMBERED_FOR: Duration = Duration::from_secs(24 * 3600);

/// Why a chunk's audio gave no samples.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The file is not audio this hub decodes (remembered).
    #[error("{0}")]
    Unreadable(Arc<str>),
    #[error(transparent)]
    Object(#[from] ObjectError),
}

/// The bounds of spectrogram drawing, shared by every request (in [`crate::state::AppState`]).
#[derive(Clone)]
pub struct Sources {
    /// Keys of stored files that did not decode, with the reason.
    undecodable: moka::sync::Cache<String, Arc<str>>,
    /// One permit per drawing that may run at once.
    slots: Arc<Semaphore>,
}

impl Sources {
    /// Up to `parallel` drawings at once (at least one).
    pub fn new(parallel: usize) -> Self {
        Self {
            undecodable: moka::sync::Cache::builder().max_capacity(REMEMBERED).time_to_live(REMEMBERED_FOR).build(),
            slots: Arc::new(Semaphore::new(parallel.max(1))),
        }
    }

    /// One per CPU core.
    pub fn per_core() -> Self {
        Self::new(std::thread::available_parallelism().map(std::num::NonZeroUsize::get).unwrap_or(1))
    }

    /// Waits for a turn to draw; the turn lasts as long as the permit is held.
    pub async fn slot(&self) -> OwnedSemaphorePermit {
        // The semaphore is never closed, so acquiring only waits.
        loop {
            if let Ok(permit) = Arc::clone(&self.slots).acquire_owned().await {
                return permit;
            }
        }
    }

    /// The first minute of the stored file `key` as mono samples (see the module's rules).
    pub async fn first_minute(&self, objects: &ObjectStore, key: &str) -> Result<Audio, SourceError> {
        if let Some(why) = self.undecodable.get(key) {
            return Err(SourceError::Unreadable(why));
        }
        let size = objects.size(key).await?;
        let ext = key.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
        let decoded = if size <= WHOLE_MAX {
            let bytes = objects.get(key).await?;
            tokio::task::spawn_blocking(move || match ext.as_deref() {
                Some("wav") => audio::decode_wav(&bytes, MAX_SECONDS),
                other => decode::decode_bytes(bytes, other, MAX_SECONDS),
            })
            .await
        } else {
            let path = objects.path_of(key)?;
            let file = tokio::task::spawn_blocking(move || std::fs::File::open(path))
                .await
                .map_err(|e| ObjectError::Task(e.to_string()))?
                .map_err(ObjectError::Io)?;
            tokio::task::spawn_blocking(move || {
                let stream = decode::AudioStream::open_prefix(file, ext.as_deref(), PREFIX_MAX)?;
                decode::decode_first(stream, MAX_SECONDS, MAX_SAMPLES)
            })
            .await
        }
        .map_err(|e| ObjectError::Task(e.to_string()))?;
        decoded.map_err(|e| {
            let why: Arc<str> = e.to_string().into();
            self.undecodable.insert(key.to_owned(), Arc::clone(&why));
            SourceError::Unreadable(why)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_large_file_is_read_only_at_its_start_and_a_bad_one_only_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let objects = ObjectStore::open(dir.path()).expect("store");
        let sources = Sources::new(1);
        // A WAV whose minute of 48 kHz tone is followed by far more data than a picture needs.
        let mut wav = audio::encode_wav_i16(&vec![0.25; 48_000 * 90], 48_000);
        wav.resize(wav.len() + (WHOLE_MAX as usize), 0);
        objects.put("audio/long.wav", wav).await.expect("put");
        let got = sources.first_minute(&objects, "audio/long.wav").await.expect("the start decodes");
        assert_eq!((got.sample_rate, got.samples.len()), (48_000, 48_000 * 60), "a minute, no more");

        objects.put("audio/junk.wav", vec![7u8; 1_000]).await.expect("put");
        let first = sources.first_minute(&objects, "audio/junk.wav").await;
        assert!(matches!(first, Err(SourceError::Unreadable(_))), "{first:?}");
        objects.put("audio/junk.wav", audio::encode_wav_i16(&[0.1; 4_800], 48_000)).await.expect("replace");
        let again = sources.first_minute(&objects, "audio/junk.wav").await;
        assert!(matches!(again, Err(SourceError::Unreadable(_))), "remembered, not read again: {again:?}");
    }
}
