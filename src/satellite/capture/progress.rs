//! `dir-progress.json`: which files of a `dir:` source were chunked, by name, size and
//! modification time, so a restart does not send them again and a file that changes is read anew.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::UNIX_EPOCH,
};

use serde::{Deserialize, Serialize};

/// The progress file's name in the state directory.
pub const FILE_NAME: &str = "dir-progress.json";

/// What identifies one version of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStamp {
    pub size: u64,
    pub mtime_ms: i64,
}

impl FileStamp {
    /// The stamp of the file's metadata.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        let mtime_ms = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        Self { size: meta.len(), mtime_ms }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    files: BTreeMap<String, FileStamp>,
}

/// The done files, kept on disk.
#[derive(Debug)]
pub struct Progress {
    path: PathBuf,
    stored: Stored,
}

impl Progress {
    /// Loads the progress file from `state_dir`; a missing or unreadable one is an empty record
    /// (an unreadable one is logged: its files are read again).
    pub fn load(state_dir: &Path) -> Self {
        let path = state_dir.join(FILE_NAME);
        let stored = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), "ignoring an unreadable capture progress file: {e}");
                Stored::default()
            }),
            Err(_) => Stored::default(),
        };
        Self { path, stored }
    }

    /// Whether this version of the file was chunked.
    pub fn is_done(&self, name: &str, stamp: FileStamp) -> bool {
        self.stored.files.get(name) == Some(&stamp)
    }

    /// Records a file as done and saves (write to a temporary file, then rename). Entries of
    /// files not in `present` are dropped, so the record does not grow forever.
    pub fn mark_done(&mut self, name: &str, stamp: FileStamp, present: &[String]) {
        self.stored.files.insert(name.to_owned(), stamp);
        self.stored.files.retain(|k, _| k == name || present.iter().any(|p| p == k));
        if let Err(e) = self.save() {
            tracing::warn!(path = %self.path.display(), "cannot save the capture progress: {e}");
        }
    }

    fn save(&self) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&self.stored).map_err(std::io::Error::other)?)?;
        std::fs::rename(&tmp, &self.path)
    }
}
