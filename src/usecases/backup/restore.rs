//! Restoring a backup into a data dir, with the hub stopped.
//!
//! Everything is checked before the data dir is touched: the archive is extracted into a
//! staging folder beside the data dir, every file's size and SHA-256 must match the manifest
//! (and no file may be missing or extra), no path may leave the data dir, and the schema must
//! not be newer than this binary's migrations. Only then is the old content moved aside (with
//! `force`) and the staged files moved in; migrations then bring an older schema up to date.

use std::{
    collections::BTreeMap,
    fs::{self, File, OpenOptions},
    io::{self, Read},
    os::unix::fs::{MetadataExt, OpenOptionsExt},
    path::{Component, Path, PathBuf},
};

use super::{Cleanup, DB_NAME, FORMAT_VERSION, HashingReader, MANIFEST_NAME, Manifest, SECRETS_NAME};
use crate::store;

/// A manifest bigger than this is not one of ours.
const MAX_MANIFEST_BYTES: u64 = 64 * 1024 * 1024;
/// The deepest path a backup holds: object keys are at most six deep (`objects/imports/...`), so
/// anything deeper is not ours, and is refused before a folder of it is made.
pub const MAX_DEPTH: usize = 16;
/// The longest path in a backup, in bytes (a path of 16 UUID-long parts is under 700).
pub const MAX_PATH_BYTES: usize = 1024;

/// Why a restore was refused or failed. Every refusal happens before the data dir changes.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("cannot read the backup {file}: {source}")]
    Archive {
        file: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{0} is not a birdhub backup: {1}")]
    NotABackup(PathBuf, String),
    #[error("the backup's archive format {found} is newer than this birdhub reads ({supported}); use a newer birdhub")]
    UnsupportedFormat { found: u32, supported: u32 },
    #[error(
        "the backup is from schema version {backup}, newer than this birdhub's migrations ({supported}); \
         install the birdhub that made it (or a newer one) to restore it"
    )]
    TooNew { backup: u32, supported: u32 },
    #[error("the backup holds the path {0:?}, which would land outside the data dir; refusing it")]
    UnsafePath(String),
    #[error(
        "the backup holds a path {0:.80}... deeper than {MAX_DEPTH} folders or longer than {MAX_PATH_BYTES} bytes; refusing it"
    )]
    TooDeep(String),
    #[error("the backup holds {0:?}, which is not a plain file or folder; refusing it")]
    UnsupportedEntry(String),
    #[error("checksum mismatch for {0}: the backup is damaged or was changed")]
    Checksum(String),
    #[error("the backup lacks {0}, which its manifest lists")]
    Missing(String),
    #[error("the backup holds {0}, which its manifest does not list")]
    Unexpected(String),
    #[error("the data dir {0} is not empty; restore into an empty one, or pass --force to move its contents aside")]
    NotEmpty(PathBuf),
    #[error("the database {0} is in use: stop the hub (sudo systemctl stop birdhub) before restoring")]
    InUse(PathBuf),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("migrating the restored database: {0}")]
    Store(#[from] store::Error),
    #[error("reading the restored database: {0}")]
    Db(#[from] rusqlite::Error),
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> RestoreError {
    let what = what.into();
    move |source| RestoreError::Io { what, source }
}

/// What a restore did.
#[derive(Debug, Clone)]
pub struct Restored {
    pub manifest: Manifest,
    /// The schema version restored, and the one migrations brought it to.
    pub migrated_from: u32,
    pub migrated_to: u32,
    /// Where the data dir's previous contents went (`--force` on a non-empty dir).
    pub moved_aside: Option<PathBuf>,
}

/// Restores the backup `file` into `data_dir` (blocking; the hub must be stopped). A non-empty
/// data dir is refused unless `force`, which moves its contents to
/// `<data_dir>.before-restore-<local time>` first.
pub fn restore(file: &Path, data_dir: &Path, force: bool) -> Result<Restored, RestoreError> {
    fs::create_dir_all(data_dir).map_err(io_err(format!("creating {}", data_dir.display())))?;
    let data_dir = data_dir.canonicalize().map_err(io_err(format!("resolving {}", data_dir.display())))?;
    let db = data_dir.join(DB_NAME);
    if db.exists() && in_use(&db) {
        return Err(RestoreError::InUse(db));
    }
    let non_empty =
        fs::read_dir(&data_dir).map_err(io_err(format!("listing {}", data_dir.display())))?.next().is_some();
    if non_empty && !force {
        return Err(RestoreError::NotEmpty(data_dir));
    }

    let staging = sibling(&data_dir, &format!("restoring-{}", uuid::Uuid::new_v4().simple()));
    fs::create_dir(&staging).map_err(io_err(format!("creating {}", staging.display())))?;
    let mut staging_guard = Cleanup(Some(staging.clone()));
    let manifest = extract_and_check(file, &staging)?;

    let moved_aside = if non_empty {
        let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
        let aside = sibling(&data_dir, &format!("before-restore-{stamp}"));
        fs::create_dir(&aside).map_err(io_err(format!("creating {}", aside.display())))?;
        move_entries(&data_dir, &aside)?;
        Some(aside)
    } else {
        None
    };
    move_entries(&staging, &data_dir)?;
    staging_guard.disarm();
    fs::remove_dir(&staging).map_err(io_err(format!("removing {}", staging.display())))?;

    let report = migrate(&db)?;
    give_to_owner_of(&data_dir);
    Ok(Restored { manifest, migrated_from: report.from, migrated_to: report.to, moved_aside })
}

/// Applies the migrations on one connection, closed before this returns (a pool would keep
/// opening connections in the background for a moment).
fn migrate(db: &Path) -> Result<store::migrate::Report, RestoreError> {
    let mut conn = rusqlite::Connection::open(db)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    let report = store::migrate::run(&mut conn)?;
    conn.close().map_err(|(_, e)| e)?;
    Ok(report)
}

/// Whether another process (a running hub) has the database open: a WAL database's users hold
/// a lock on it for as long as they are connected, so an exclusive lock cannot be had.
fn in_use(db: &Path) -> bool {
    let Ok(conn) = rusqlite::Connection::open(db) else { return false };
    let busy = |e: &rusqlite::Error| {
        matches!(e, rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
    };
    if let Err(e) = conn.busy_timeout(std::time::Duration::ZERO) {
        return busy(&e);
    }
    let tried = conn
        .pragma_update(None, "locking_mode", "EXCLUSIVE")
        .and_then(|()| conn.execute_batch("BEGIN EXCLUSIVE; ROLLBACK;"));
    tried.is_err_and(|e| busy(&e))
}

/// Extracts `file` into `staging`, checking every path and checksum against the manifest.
fn extract_and_check(file: &Path, staging: &Path) -> Result<Manifest, RestoreError> {
    let archive_err = |source| RestoreError::Archive { file: file.to_owned(), source };
    let input = File::open(file).map_err(archive_err)?;
    let decoder = zstd::Decoder::new(input).map_err(archive_err)?;
    let mut archive = tar::Archive::new(decoder);
    let mut manifest_bytes: Option<Vec<u8>> = None;
    let mut found: BTreeMap<String, (u64, String)> = BTreeMap::new();
    for entry in archive.entries().map_err(archive_err)? {
        let mut entry = entry.map_err(archive_err)?;
        let raw = entry.path().map_err(archive_err)?.into_owned();
        let name = safe_name(&raw)?;
        match entry.header().entry_type() {
            tar::EntryType::Directory => continue,
            tar::EntryType::Regular | tar::EntryType::Continuous => {}
            _ => return Err(RestoreError::UnsupportedEntry(name)),
        }
        if name == MANIFEST_NAME {
            let mut bytes = Vec::new();
            (&mut entry).take(MAX_MANIFEST_BYTES).read_to_end(&mut bytes).map_err(archive_err)?;
            manifest_bytes = Some(bytes);
            continue;
        }
        if found.contains_key(&name) {
            return Err(RestoreError::Unexpected(format!("{name} (twice)")));
        }
        let dest = staging.join(&name);
        if let Some(dir) = dest.parent() {
            fs::create_dir_all(dir).map_err(io_err(format!("creating {}", dir.display())))?;
        }
        let mode = if name == SECRETS_NAME { 0o600 } else { 0o640 };
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&dest)
            .map_err(io_err(format!("creating {}", dest.display())))?;
        let mut reader = HashingReader::new(&mut entry);
        io::copy(&mut reader, &mut out).map_err(archive_err)?;
        out.sync_all().map_err(io_err(format!("syncing {}", dest.display())))?;
        found.insert(name, reader.finish());
    }

    let bytes = manifest_bytes.ok_or_else(|| RestoreError::NotABackup(file.to_owned(), "no manifest.json".into()))?;
    let manifest: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| RestoreError::NotABackup(file.to_owned(), format!("manifest.json: {e}")))?;
    if manifest.format > FORMAT_VERSION {
        return Err(RestoreError::UnsupportedFormat { found: manifest.format, supported: FORMAT_VERSION });
    }
    let supported = store::migrate::latest();
    if manifest.schema_version > supported {
        return Err(RestoreError::TooNew { backup: manifest.schema_version, supported });
    }
    for listed in &manifest.files {
        match found.remove(&listed.path) {
            None => return Err(RestoreError::Missing(listed.path.clone())),
            Some((size, sha)) if size != listed.size || sha != listed.sha256 => {
                return Err(RestoreError::Checksum(listed.path.clone()));
            }
            Some(_) => {}
        }
    }
    if let Some(extra) = found.into_keys().next() {
        return Err(RestoreError::Unexpected(extra));
    }
    if !manifest.files.iter().any(|f| f.path == DB_NAME) {
        return Err(RestoreError::NotABackup(file.to_owned(), "no database in it".into()));
    }
    // The database itself says its version too: a manifest edited to claim an older one does
    // not get a newer database past this check.
    let conn =
        rusqlite::Connection::open_with_flags(staging.join(DB_NAME), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let in_db: u32 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if in_db > supported {
        return Err(RestoreError::TooNew { backup: in_db, supported });
    }
    Ok(manifest)
}

/// The archive path as a `/`-joined relative name, or a refusal when it could leave the data dir.
fn safe_name(path: &Path) -> Result<String, RestoreError> {
    let mut parts = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => match p.to_str() {
                Some(s) => parts.push(s),
                None => return Err(RestoreError::UnsafePath(path.display().to_string())),
            },
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(RestoreError::UnsafePath(path.display().to_string()));
            }
        }
    }
    if parts.is_empty() {
        return Err(RestoreError::UnsafePath(path.display().to_string()));
    }
    let name = parts.join("/");
    if parts.len() > MAX_DEPTH || name.len() > MAX_PATH_BYTES {
        return Err(RestoreError::TooDeep(name));
    }
    Ok(name)
}

/// `<dir>.<suffix>` beside `dir`.
fn sibling(dir: &Path, suffix: &str) -> PathBuf {
    let mut name = dir.file_name().map(|n| n.to_os_string()).unwrap_or_else(|| "data".into());
    name.push(format!(".{suffix}"));
    dir.with_file_name(name)
}

/// Moves every entry of `from` into `to` (same file system: renames).
fn move_entries(from: &Path, to: &Path) -> Result<(), RestoreError> {
    for entry in fs::read_dir(from).map_err(io_err(format!("listing {}", from.display())))? {
        let entry = entry.map_err(io_err(format!("listing {}", from.display())))?;
        let dest = to.join(entry.file_name());
        fs::rename(entry.path(), &dest).map_err(io_err(format!(
            "moving {} to {}",
            entry.path().display(),
            dest.display()
        )))?;
    }
    Ok(())
}

/// A restore run as root (`sudo birdhub admin restore`) hands the files to the data dir's owner
/// (the `birdhub` user), so the hub can open them. Anyone else cannot, and need not.
fn give_to_owner_of(data_dir: &Path) {
    let Ok(meta) = fs::metadata(data_dir) else { return };
    let (uid, gid) = (meta.uid(), meta.gid());
    let mut stack = vec![data_dir.to_owned()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(m) = fs::symlink_metadata(&path) else { continue };
            if m.is_dir() {
                stack.push(path.clone());
            }
            if (m.uid() != uid || m.gid() != gid)
                && let Err(e) = std::os::unix::fs::chown(&path, Some(uid), Some(gid))
            {
                tracing::warn!(path = %path.display(), error = %e, "could not hand the restored file to the data dir's owner");
                return;
            }
        }
    }
}
