//! The outbox's audio files: durable writes (file and directory fsynced), removal, the real size
//! of the directory and the clean-up of orphan files that no row refers to.

use std::{
    collections::HashSet,
    fs,
    io::{self, Write},
    path::{Path, PathBuf},
    time::{Duration, SystemTime},
};

/// Orphan files younger than this are left alone at open (a push may be between its file and
/// its row in another process, or a clock may have stepped).
pub const ORPHAN_GRACE: Duration = Duration::from_secs(3600);

/// The file of a chunk.
pub fn wav_path(audio: &Path, chunk_id: &uuid::Uuid) -> PathBuf {
    audio.join(format!("{chunk_id}.wav"))
}

/// Writes a new file and makes it durable: the data and the directory entry are fsynced before
/// this returns. A file of that name must not exist yet.
pub fn write_durable(dir: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let result = (|| {
        let mut file = fs::OpenOptions::new().write(true).create_new(true).open(path)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(path);
    }
    result
}

/// Removes files, ignoring those already gone and logging other failures (a file that cannot
/// be removed now shows up in `diskBytes` and is cleaned as an orphan later).
pub fn remove_all(audio: &Path, ids: &[uuid::Uuid]) {
    for id in ids {
        let path = wav_path(audio, id);
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("outbox: removing {}: {e}", path.display()),
        }
    }
}

/// The total size in bytes of the regular files in `audio` (orphans included).
pub fn disk_bytes(audio: &Path) -> io::Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(audio)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_file() {
            total += meta.len();
        }
    }
    Ok(total)
}

/// Removes the files in `audio` that are not `<id>.wav` of a known row and were last modified
/// more than [`ORPHAN_GRACE`] before `now`. Returns how many were removed.
pub fn clean_orphans(audio: &Path, known: &HashSet<String>, now: SystemTime) -> io::Result<usize> {
    let mut removed = 0;
    for entry in fs::read_dir(audio)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if !meta.is_file() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let referenced = name.strip_suffix(".wav").is_some_and(|stem| known.contains(stem));
        if referenced {
            continue;
        }
        let age = meta.modified().ok().and_then(|m| now.duration_since(m).ok()).unwrap_or_default();
        if age < ORPHAN_GRACE {
            continue;
        }
        match fs::remove_file(entry.path()) {
            Ok(()) => removed += 1,
            Err(e) => tracing::warn!("outbox: removing orphan {}: {e}", entry.path().display()),
        }
    }
    Ok(removed)
}
