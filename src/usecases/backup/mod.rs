//! Backup and restore of a hub's data dir as one `.tar.zst` file.
//!
//! A backup holds a consistent snapshot of the database (`VACUUM INTO`, taken while the hub
//! runs), every object file and `secrets.toml`, plus a `manifest.json` naming each file with its
//! size and SHA-256. [`create::backup`] writes it; [`restore::restore`] checks it completely
//! before it touches the data dir. [`schedule`] names, finds and prunes the daily backups.

pub mod create;
pub mod restore;
pub mod schedule;

use serde::{Deserialize, Serialize};

pub use create::{BackupError, backup};
pub use restore::{RestoreError, Restored, restore};

/// The version of the archive layout this binary writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The name of the manifest inside the archive (its last entry).
pub const MANIFEST_NAME: &str = "manifest.json";

/// The database file's name in the data dir and in the archive.
pub const DB_NAME: &str = "birdhub.db";

/// The generated secrets' file name in the data dir and in the archive.
pub const SECRETS_NAME: &str = "secrets.toml";

/// The object store's folder in the data dir and in the archive.
pub const OBJECTS_DIR: &str = "objects";

/// What a backup holds; written as `manifest.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// [`FORMAT_VERSION`] of the writer.
    pub format: u32,
    /// The birdhub version that made the backup.
    pub hub_version: String,
    /// The database's schema version (the newest migration applied to it).
    pub schema_version: u32,
    /// When the backup started (the database snapshot is from then).
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// Every file in the archive except the manifest.
    pub files: Vec<FileEntry>,
}

/// One file in a backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Relative to the data dir, `/`-separated.
    pub path: String,
    pub size: u64,
    /// Lowercase hex.
    pub sha256: String,
}

impl Manifest {
    /// The bytes of every file together (uncompressed).
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// How many object files the backup holds.
    pub fn object_count(&self) -> usize {
        self.files.iter().filter(|f| f.path.starts_with("objects/")).count()
    }

    /// The database file's size in the backup.
    pub fn db_bytes(&self) -> u64 {
        self.files.iter().find(|f| f.path == DB_NAME).map_or(0, |f| f.size)
    }
}

/// A reader that hashes what passes through it.
struct HashingReader<R> {
    inner: R,
    hasher: sha2::Sha256,
    read: u64,
}

impl<R> HashingReader<R> {
    fn new(inner: R) -> Self {
        Self { inner, hasher: sha2::Digest::new(), read: 0 }
    }

    /// The bytes read so far and their SHA-256 in hex.
    fn finish(self) -> (u64, String) {
        (self.read, hex::encode(sha2::Digest::finalize(self.hasher)))
    }
}

impl<R: std::io::Read> std::io::Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        sha2::Digest::update(&mut self.hasher, &buf[..n]);
        self.read += n as u64;
        Ok(n)
    }
}

/// Removes a file or directory when dropped, unless disarmed: no half file is left behind.
struct Cleanup(Option<std::path::PathBuf>);

impl Cleanup {
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        }
    }
}

#[cfg(test)]
mod tests;
