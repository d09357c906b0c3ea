//! Finding a BirdNET-Go station's files (IMPORTS.md B.1) and opening its database without
//! writing it: a WAL database (a `-wal` beside it, or WAL mode in its header) is copied with its
//! `-wal` into a scratch directory and read there, so uncheckpointed rows are seen and the
//! source is never touched; any other file is opened read-only in place.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::clips::yaml_keys;
use crate::usecases::imports::{
    boundary::SourceRoot, foreign_db, peer::SourceError, source::read_small, space, unpack,
};

/// The most of a `config.yaml` read: a real one is a few KiB; a larger file is ignored.
pub(super) const MAX_CONFIG_BYTES: u64 = 64 * 1024;
/// Free space left for the hub's own writes beside a WAL database's copy.
const COPY_KEEP_FREE: u64 = 64 * 1024 * 1024;

/// What was found at the path the user gave.
pub(super) struct Found {
    /// `birdnet.db` (or the file given).
    pub(super) db: Option<PathBuf>,
    /// `birdnet_v2.db` beside it: a v2 migration's sidecar (used only once completed).
    pub(super) sidecar: Option<PathBuf>,
    /// The directory the database is in: clips and `config.yaml` are looked for from here.
    pub(super) base: PathBuf,
    /// What the directory holds, for a "nothing here" message.
    pub(super) listing: String,
}

pub(super) fn find(path: &Path) -> Result<Found, SourceError> {
    let shown = path.display().to_string();
    if path.is_file() {
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        return Ok(Found { db: Some(path.to_path_buf()), sidecar: None, base, listing: String::new() });
    }
    if !path.is_dir() {
        return Err(SourceError::NotFound {
            path: shown,
            expected: "BirdNET-Go database birdnet.db or its data directory".into(),
            found: "nothing at this path".into(),
        });
    }
    let mut dirs = vec![path.to_path_buf(), path.join("data")];
    // A tar of a data directory often holds one top folder (`data/` or `birdnet-go-app/`).
    if let Some(only) = only_subdir(path) {
        dirs.push(only.join("data"));
        dirs.push(only);
    }
    for dir in &dirs {
        let db = dir.join("birdnet.db");
        let sidecar = dir.join("birdnet_v2.db");
        let (db, sidecar) = (db.is_file().then_some(db), sidecar.is_file().then_some(sidecar));
        if db.is_some() || sidecar.is_some() {
            return Ok(Found { db, sidecar, base: dir.clone(), listing: String::new() });
        }
    }
    Err(SourceError::NotFound {
        path: shown,
        expected: "BirdNET-Go database birdnet.db (at the top or in data/)".into(),
        found: listing(path),
    })
}

fn only_subdir(dir: &Path) -> Option<PathBuf> {
    let entries: Vec<_> = std::fs::read_dir(dir).ok()?.filter_map(Result::ok).collect();
    match entries.as_slice() {
        [one] if one.path().is_dir() => Some(one.path()),
        _ => None,
    }
}

/// `a.txt, b/, …` (at most 12 names), or "an empty directory".
fn listing(dir: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if e.path().is_dir() { format!("{name}/") } else { name }
                })
                .collect()
        })
        .unwrap_or_default();
    if names.is_empty() {
        return "an empty directory".into();
    }
    names.sort();
    let more = names.len().saturating_sub(12);
    names.truncate(12);
    if more > 0 {
        names.push(format!("and {more} more"));
    }
    names.join(", ")
}

/// `config.yaml` near the database: beside it, one level up, or in a sibling `config/`
/// (the install script's `~/birdnet-go-app/{data,config}`), inside `within` (what was handed
/// over). Empty when there is none, or it is larger than [`MAX_CONFIG_BYTES`].
pub(super) fn config(base: &Path, within: Option<&SourceRoot>) -> BTreeMap<String, String> {
    let parent = base.parent().map(Path::to_path_buf).unwrap_or_else(|| base.to_path_buf());
    let candidates = [
        base.join("config.yaml"),
        base.join("config/config.yaml"),
        parent.join("config.yaml"),
        parent.join("config/config.yaml"),
    ];
    let Some(within) = within else { return BTreeMap::new() };
    candidates
        .iter()
        .find_map(|p| within.file(p))
        .and_then(|p| read_small(&p, MAX_CONFIG_BYTES))
        .map(|t| yaml_keys(&t))
        .unwrap_or_default()
}

/// An open, read-only view of the database as it was when opened.
pub(super) struct Snapshot {
    pub(super) conn: Connection,
    /// The scratch copy of a WAL database, removed when the source is dropped.
    copy: Option<PathBuf>,
}

impl Snapshot {
    pub(super) fn take(db: &Path, scratch: &Path) -> Result<Self, SourceError> {
        let unreadable = |e: &dyn std::fmt::Display| SourceError::Unreadable {
            path: db.display().to_string(),
            message: e.to_string(),
        };
        let wal = sibling(db, "-wal");
        if !wal.is_file() && !wal_mode(db)? {
            let conn = foreign_db::open(db, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(|e| unreadable(&e))?;
            foreign_db::query_only(&conn)?;
            check(&conn).map_err(|e| unreadable(&e))?;
            return Ok(Self { conn, copy: None });
        }
        // The copy is as large as the database: it reserves its bytes from the hub's import
        // budget first, so it cannot fill the disk beside other imports.
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let bytes = size(db).saturating_add(size(&wal)).saturating_add(64 * 1024);
        std::fs::create_dir_all(scratch)?;
        let _reserved =
            space::Reservation::take(scratch, bytes, 4, COPY_KEEP_FREE)?.map_err(|s| SourceError::Unreadable {
                path: db.display().to_string(),
                message: format!(
                    "not enough free space on the hub to copy this WAL database: it needs {} bytes, {} are free",
                    s.needed, s.free
                ),
            })?;
        let dir = scratch.join(unpack::scratch_name("birdnet-go"));
        std::fs::create_dir_all(&dir)?;
        let copy = dir.join("birdnet.db");
        let copied = (|| {
            std::fs::copy(db, &copy)?;
            if wal.is_file() {
                std::fs::copy(&wal, sibling(&copy, "-wal"))?;
            }
            Ok::<_, std::io::Error>(())
        })();
        if let Err(e) = copied {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e.into());
        }
        // The copy is ours: opening it read-write lets SQLite replay the copied WAL.
        let opened = foreign_db::open(&copy, OpenFlags::SQLITE_OPEN_READ_WRITE).and_then(|c| {
            check(&c)?;
            foreign_db::query_only(&c)?;
            Ok(c)
        });
        match opened {
            Ok(conn) => Ok(Self { conn, copy: Some(dir) }),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                Err(unreadable(&e))
            }
        }
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        if let Some(dir) = self.copy.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn sibling(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// A file that is not SQLite fails here, with SQLite's own words ("file is not a database").
fn check(conn: &Connection) -> rusqlite::Result<()> {
    conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |_| Ok(()))
}

/// The header's read/write versions are 2 in WAL mode; opening such a file read-only with no
/// `-shm` would need to create one beside the source.
fn wal_mode(db: &Path) -> Result<bool, SourceError> {
    let mut header = [0u8; 20];
    let mut f = std::fs::File::open(db)?;
    let n = f.read(&mut header)?;
    Ok(n == 20 && header.starts_with(b"SQLite format 3\0") && header[18] == 2 && header[19] == 2)
}
