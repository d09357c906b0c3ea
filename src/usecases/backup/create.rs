//! Writing a backup while the hub runs: the database is snapshotted first (`VACUUM INTO`, one
//! read transaction, so writers carry on), then the object files and the secrets are copied. An
//! object is immutable once its rename made it visible, so every row of the snapshot finds its
//! file; objects stored after the snapshot may or may not be in the archive. The archive is
//! written under a temp name beside the destination and renamed at the end, so the destination
//! is either the whole backup or untouched.

use std::{
    fs::{self, File},
    io::{self, BufWriter, Read, Write},
    path::{Path, PathBuf},
};

use chrono::{DateTime, Utc};

use super::{
    Cleanup, DB_NAME, FORMAT_VERSION, FileEntry, HashingReader, MANIFEST_NAME, Manifest, OBJECTS_DIR, SECRETS_NAME,
};
use crate::store::Store;

/// The zstd level: audio barely compresses, so a cheap level keeps a Pi's CPU free for ingest.
const ZSTD_LEVEL: i32 = 3;

/// Why a backup could not be written. Nothing is left at the destination in every case.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("no database at {0} (is this the hub's data dir?)")]
    NoDatabase(PathBuf),
    #[error("the path {0} is not valid UTF-8; SQLite cannot write the snapshot there")]
    NotUtf8(PathBuf),
    #[error("the destination {0} has no file name")]
    BadDestination(PathBuf),
    #[error("snapshotting the database: {0}")]
    Store(#[from] crate::store::Error),
    #[error("reading the snapshot's schema version: {0}")]
    Snapshot(#[from] rusqlite::Error),
    #[error("the object {0} changed size while it was copied")]
    ObjectChanged(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("the backup task failed: {0}")]
    Task(String),
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> BackupError {
    let what = what.into();
    move |source| BackupError::Io { what, source }
}

/// Backs up `data_dir` (whose database `store` has open) into the `.tar.zst` file `to`, and
/// returns what it holds. `created_at` is recorded in the manifest (the hub's clock).
pub async fn backup(
    store: &Store,
    data_dir: &Path,
    to: &Path,
    created_at: DateTime<Utc>,
) -> Result<Manifest, BackupError> {
    if !data_dir.join(DB_NAME).is_file() {
        return Err(BackupError::NoDatabase(data_dir.join(DB_NAME)));
    }
    let name = to.file_name().ok_or_else(|| BackupError::BadDestination(to.to_owned()))?.to_string_lossy();
    let parent = match to.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(io_err(format!("creating {}", parent.display())))?;
    let nonce = uuid::Uuid::new_v4().simple();
    let snapshot = parent.join(format!(".{name}.db-{nonce}"));
    let snapshot_guard = Cleanup(Some(snapshot.clone()));
    let snapshot_str = snapshot.to_str().ok_or_else(|| BackupError::NotUtf8(snapshot.clone()))?.to_owned();
    let started = std::time::Instant::now();
    store.call(move |c| Ok(c.execute("VACUUM INTO ?1", [snapshot_str]).map(|_| ())?)).await?;
    tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, "database snapshot taken");

    let (data_dir, to, tmp) = (data_dir.to_owned(), to.to_owned(), parent.join(format!(".{name}.tmp-{nonce}")));
    let manifest = tokio::task::spawn_blocking(move || {
        let _snapshot_guard = snapshot_guard;
        write_archive(&snapshot, &data_dir, &tmp, &to, created_at)
    })
    .await
    .map_err(|e| BackupError::Task(e.to_string()))??;
    tracing::info!(
        files = manifest.files.len(),
        bytes = manifest.total_bytes(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "backup written"
    );
    Ok(manifest)
}

/// The blocking part: archive the snapshot, the secrets and the objects into `tmp`, then rename.
fn write_archive(
    snapshot: &Path,
    data_dir: &Path,
    tmp: &Path,
    to: &Path,
    created_at: DateTime<Utc>,
) -> Result<Manifest, BackupError> {
    let schema_version: u32 = {
        let conn = rusqlite::Connection::open_with_flags(snapshot, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        conn.pragma_query_value(None, "user_version", |r| r.get(0))?
    };
    // It holds the secrets (the JWT and MFA keys): only the hub's user may read it.
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(tmp)
    }
    .map_err(io_err(format!("creating {}", tmp.display())))?;
    let mut guard = Cleanup(Some(tmp.to_owned()));
    let encoder = zstd::Encoder::new(BufWriter::new(file), ZSTD_LEVEL).map_err(io_err("starting zstd"))?;
    let mut tar = tar::Builder::new(encoder);
    let mut files = Vec::new();

    files.push(append_file(&mut tar, snapshot, DB_NAME, 0o640, created_at)?.ok_or_else(|| BackupError::Io {
        what: "reading the snapshot".into(),
        source: io::ErrorKind::NotFound.into(),
    })?);
    if let Some(entry) = append_file(&mut tar, &data_dir.join(SECRETS_NAME), SECRETS_NAME, 0o600, created_at)? {
        files.push(entry);
    }
    let mut objects = Vec::new();
    list_objects(&data_dir.join(OBJECTS_DIR), OBJECTS_DIR, &mut objects)?;
    for (path, name) in objects {
        // An object deleted since it was listed (retention) is simply not in the backup.
        if let Some(entry) = append_file(&mut tar, &path, &name, 0o640, created_at)? {
            files.push(entry);
        }
    }

    let manifest = Manifest {
        format: FORMAT_VERSION,
        hub_version: env!("CARGO_PKG_VERSION").to_owned(),
        schema_version,
        created_at,
        files,
    };
    let json = serde_json::to_vec_pretty(&manifest).map_err(|e| io_err("writing the manifest")(e.into()))?;
    let mut header = header(json.len() as u64, 0o640, created_at);
    tar.append_data(&mut header, MANIFEST_NAME, json.as_slice()).map_err(io_err("writing the manifest"))?;
    let encoder = tar.into_inner().map_err(io_err("finishing the archive"))?;
    let mut writer = encoder.finish().map_err(io_err("finishing zstd"))?;
    writer.flush().map_err(io_err(format!("writing {}", tmp.display())))?;
    let file = writer.into_inner().map_err(|e| io_err(format!("writing {}", tmp.display()))(e.into_error()))?;
    file.sync_all().map_err(io_err(format!("syncing {}", tmp.display())))?;
    fs::rename(tmp, to).map_err(io_err(format!("renaming the backup to {}", to.display())))?;
    guard.disarm();
    if let Some(dir) = to.parent().filter(|p| !p.as_os_str().is_empty()) {
        File::open(dir).and_then(|d| d.sync_all()).map_err(io_err(format!("syncing {}", dir.display())))?;
    }
    Ok(manifest)
}

/// Appends `path` as `name`, hashing it on the way; `None` when the file does not exist.
fn append_file<W: Write>(
    tar: &mut tar::Builder<W>,
    path: &Path,
    name: &str,
    mode: u32,
    at: DateTime<Utc>,
) -> Result<Option<FileEntry>, BackupError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(format!("opening {}", path.display()))(e)),
    };
    let size = file.metadata().map_err(io_err(format!("reading {}", path.display())))?.len();
    let mut header = header(size, mode, at);
    let mut reader = HashingReader::new(file.take(size));
    tar.append_data(&mut header, name, &mut reader).map_err(io_err(format!("archiving {}", path.display())))?;
    let (read, sha256) = reader.finish();
    if read != size {
        // The tar entry is now shorter than its header says: the archive is unusable.
        return Err(BackupError::ObjectChanged(name.to_owned()));
    }
    Ok(Some(FileEntry { path: name.to_owned(), size, sha256 }))
}

fn header(size: u64, mode: u32, at: DateTime<Utc>) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Regular);
    h.set_size(size);
    h.set_mode(mode);
    h.set_mtime(u64::try_from(at.timestamp()).unwrap_or(0));
    h
}

/// Every object file under `dir` (sorted), with its archive name. Temp files and anything else
/// whose name starts with a dot (the store's `.tmp/`) are skipped, and so are symlinks.
fn list_objects(dir: &Path, prefix: &str, out: &mut Vec<(PathBuf, String)>) -> Result<(), BackupError> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err(format!("listing {}", dir.display()))(e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_err(format!("listing {}", dir.display())))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let kind = entry.file_type().map_err(io_err(format!("reading {}", entry.path().display())))?;
        names.push((name, entry.path(), kind));
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, path, kind) in names {
        let archived = format!("{prefix}/{name}");
        if kind.is_dir() {
            list_objects(&path, &archived, out)?;
        } else if kind.is_file() {
            out.push((path, archived));
        }
    }
    Ok(())
}
