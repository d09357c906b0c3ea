//! Streaming writes: an object that arrives in pieces (an APK upload) goes to a temp file chunk by
//! chunk, so memory stays flat whatever its size. [`StagingWriter::finish`] fsyncs it into a
//! [`Staged`] that commits like any other; dropping the writer or the staged file at any point
//! (an error, a client that went away) removes the temp file.

use std::path::PathBuf;

use tokio::io::AsyncWriteExt;
use uuid::Uuid;

use super::{ObjectError, ObjectStore, Staged, TMP_DIR};

/// A temp file being filled. Not visible under any key until finished and committed.
#[derive(Debug)]
pub struct StagingWriter {
    file: tokio::fs::File,
    /// `None` once handed over to a [`Staged`].
    tmp: Option<PathBuf>,
    root: PathBuf,
    len: u64,
}

impl ObjectStore {
    /// Opens a new temp file for an object that arrives in pieces.
    pub async fn stage_stream(&self) -> Result<StagingWriter, ObjectError> {
        let tmp = self.root.join(TMP_DIR).join(Uuid::new_v4().to_string());
        let file = tokio::fs::OpenOptions::new().write(true).create_new(true).open(&tmp).await?;
        Ok(StagingWriter { file, tmp: Some(tmp), root: self.root.clone(), len: 0 })
    }

    /// Copies at most `max` bytes from `from` into a fsynced temp file (blocking), a buffer at
    /// a time; `None` (and nothing left behind) when `from` holds more than `max`.
    pub fn stage_copy(&self, from: impl std::io::Read, max: u64) -> Result<Option<Staged>, ObjectError> {
        let tmp = self.root.join(TMP_DIR).join(Uuid::new_v4().to_string());
        let mut file = std::fs::File::create_new(&tmp)?;
        let mut staged = Staged { tmp: Some(tmp), root: self.root.clone(), len: 0 };
        staged.len = std::io::copy(&mut from.take(max + 1), &mut file)?;
        if staged.len > max {
            return Ok(None);
        }
        file.sync_all()?;
        Ok(Some(staged))
    }
}

impl StagingWriter {
    /// Appends `bytes`.
    pub async fn write(&mut self, bytes: &[u8]) -> Result<(), ObjectError> {
        self.file.write_all(bytes).await?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Flushes and fsyncs the temp file; the result commits under a key (or removes itself when dropped).
    pub async fn finish(mut self) -> Result<Staged, ObjectError> {
        self.file.flush().await?;
        self.file.sync_all().await?;
        let tmp = self.tmp.take();
        Ok(Staged { tmp, root: self.root.clone(), len: self.len })
    }
}

impl Drop for StagingWriter {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            // Unlinking an open file is fine on Unix: the handle closes right after.
            let _ = std::fs::remove_file(tmp);
        }
    }
}
