//! The filesystem object store: WAV chunks, APKs and images under `<data_dir>/objects/`.
//!
//! Writes are atomic: the bytes go to a temp file in `objects/.tmp/`, are fsynced, then renamed into
//! place and the directory is fsynced. A crash at any point leaves either the old object or the new
//! one, never a partial file; orphaned temp files are swept when the store opens.

use std::{
    fs::{self, File},
    io::{self, Write},
    path::{Path, PathBuf},
};

use uuid::Uuid;

mod batch;
mod writer;
pub use writer::StagingWriter;

/// Why an object operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    #[error("invalid object key {0:?}")]
    InvalidKey(String),
    #[error("object {0:?} not found")]
    NotFound(String),
    #[error("object store I/O: {0}")]
    Io(#[from] io::Error),
    #[error("object store task failed: {0}")]
    Task(String),
}

const TMP_DIR: &str = ".tmp";

/// Space on the filesystem that holds the objects (and, under the data dir, the database).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskSpace {
    /// What an unprivileged writer can still use.
    pub free_bytes: u64,
    pub total_bytes: u64,
}

/// A handle on the object root. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ObjectStore {
    root: PathBuf,
}

/// Bytes written and fsynced to a temp file, not yet visible under any key.
/// Dropping it without [`Staged::commit`] removes the temp file.
#[derive(Debug)]
pub struct Staged {
    tmp: Option<PathBuf>,
    root: PathBuf,
    len: u64,
}

impl ObjectStore {
    /// Opens the store at `root`, creating it, and sweeps temp files left by a crash.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, ObjectError> {
        let root = root.into();
        let tmp = root.join(TMP_DIR);
        fs::create_dir_all(&tmp)?;
        let mut swept = 0;
        for entry in fs::read_dir(&tmp)? {
            if fs::remove_file(entry?.path()).is_ok() {
                swept += 1;
            }
        }
        if swept > 0 {
            tracing::warn!(swept, "removed partial object writes left by an earlier crash");
        }
        Ok(Self { root })
    }

    /// The free and total space of the filesystem the objects live on.
    pub fn disk_space(&self) -> Result<DiskSpace, ObjectError> {
        let s = rustix::fs::statvfs(&self.root).map_err(io::Error::from)?;
        Ok(DiskSpace {
            free_bytes: s.f_bavail.saturating_mul(s.f_frsize),
            total_bytes: s.f_blocks.saturating_mul(s.f_frsize),
        })
    }

    /// Where `key` lives on disk (after validating it).
    pub fn path_of(&self, key: &str) -> Result<PathBuf, ObjectError> {
        validate_key(key)?;
        Ok(self.root.join(key))
    }

    /// Writes `bytes` to a fsynced temp file (blocking). Commit it to make it visible.
    pub fn stage(&self, bytes: &[u8]) -> Result<Staged, ObjectError> {
        let tmp = self.root.join(TMP_DIR).join(Uuid::new_v4().to_string());
        let mut f = File::create_new(&tmp)?;
        let staged = Staged { tmp: Some(tmp), root: self.root.clone(), len: bytes.len() as u64 };
        f.write_all(bytes)?;
        f.sync_all()?;
        Ok(staged)
    }

    /// Atomically stores `bytes` under `key`, replacing any previous object. Returns the size.
    pub async fn put(&self, key: &str, bytes: impl AsRef<[u8]> + Send + 'static) -> Result<u64, ObjectError> {
        validate_key(key)?;
        let (this, key) = (self.clone(), key.to_owned());
        blocking(move || this.stage(bytes.as_ref())?.commit(&key)).await
    }

    /// Reads a whole object.
    pub async fn get(&self, key: &str) -> Result<Vec<u8>, ObjectError> {
        let path = self.path_of(key)?;
        tokio::fs::read(&path).await.map_err(|e| not_found_or(e, key))
    }

    /// Opens an object for streaming.
    pub async fn open_read(&self, key: &str) -> Result<tokio::fs::File, ObjectError> {
        let path = self.path_of(key)?;
        tokio::fs::File::open(&path).await.map_err(|e| not_found_or(e, key))
    }

    /// Size in bytes, or `NotFound`.
    pub async fn size(&self, key: &str) -> Result<u64, ObjectError> {
        let path = self.path_of(key)?;
        Ok(tokio::fs::metadata(&path).await.map_err(|e| not_found_or(e, key))?.len())
    }

    /// Removes an object; `false` when there was none.
    pub async fn delete(&self, key: &str) -> Result<bool, ObjectError> {
        let path = self.path_of(key)?;
        match tokio::fs::remove_file(&path).await {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

impl ObjectStore {
    /// Removes an object from a blocking thread (inside a transaction, so a row and its file go
    /// together); `false` when there was none.
    pub fn remove_blocking(&self, key: &str) -> Result<bool, ObjectError> {
        match fs::remove_file(self.path_of(key)?) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

impl Staged {
    /// Where the bytes are until [`Staged::commit`], for checks that read them back first.
    pub fn path(&self) -> Option<&Path> {
        self.tmp.as_deref()
    }

    /// Size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the staged object is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Renames the temp file to `key` and fsyncs the directory, so the object survives a power cut.
    pub fn commit(self, key: &str) -> Result<u64, ObjectError> {
        validate_key(key)?;
        let (dir, len) = self.place(key)?;
        File::open(&dir)?.sync_all()?;
        Ok(len)
    }

    /// Renames the temp file to `key`; returns its directory (still to be fsynced) and size.
    fn place(mut self, key: &str) -> Result<(PathBuf, u64), ObjectError> {
        let dest = self.root.join(key);
        let dir = dest.parent().unwrap_or(&self.root).to_owned();
        let Some(tmp) = self.tmp.take() else { return Err(ObjectError::Task("staged twice".into())) };
        // The directory usually exists (a satellite's day gets a chunk every 3 s): try the rename
        // first and create the directories only when it is missing, which saves a mkdir and a
        // stat per chunk (issue 39).
        let placed = match fs::rename(&tmp, &dest) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                fs::create_dir_all(&dir).and_then(|()| fs::rename(&tmp, &dest))
            }
            other => other,
        };
        if let Err(e) = placed {
            let _ = fs::remove_file(&tmp);
            return Err(e.into());
        }
        Ok((dir, self.len))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let _ = fs::remove_file(tmp);
        }
    }
}

/// Keys are relative paths of `[A-Za-z0-9._-]` segments; no segment starts with a dot.
fn validate_key(key: &str) -> Result<(), ObjectError> {
    let ok_segment = |s: &str| {
        !s.is_empty()
            && !s.starts_with('.')
            && s.len() <= 128
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    };
    if key.len() <= 512 && key.split('/').all(ok_segment) {
        Ok(())
    } else {
        Err(ObjectError::InvalidKey(key.to_owned()))
    }
}

fn not_found_or(e: io::Error, key: &str) -> ObjectError {
    if e.kind() == io::ErrorKind::NotFound { ObjectError::NotFound(key.to_owned()) } else { e.into() }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ObjectError> + Send + 'static,
) -> Result<T, ObjectError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| ObjectError::Task(e.to_string()))?
}

/// The temp dir, for tests that inspect what a crash left behind.
pub fn tmp_dir(root: &Path) -> PathBuf {
    root.join(TMP_DIR)
}

#[cfg(test)]
mod tests;
