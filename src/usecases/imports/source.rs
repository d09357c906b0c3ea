//! Finding an old station's database and clips under what a person points at: a directory (a
//! station's home, a `scripts/` directory, an unpacked backup), a copied database file, or a tar
//! backup (unpacked into a scratch directory first). Errors name what was expected and what was
//! found there.

use std::{
    io::Read as _,
    path::{Path, PathBuf},
};

use super::{
    ImportError, birdnet_go, birdnet_pi,
    boundary::SourceRoot,
    peer::{PeerKind, PeerSource, SourceError},
    unpack,
};

/// A source, opened, and where its parts are.
pub struct Opened {
    pub source: Box<dyn PeerSource>,
    /// What the engine reopens: BirdNET-Pi's database file; for BirdNET-Go the path its reader
    /// was given.
    pub database: PathBuf,
    /// BirdNET-Pi's `By_Date` directory, when found.
    pub clips: Option<PathBuf>,
    /// A scratch directory a tar was unpacked into (removed when the job ends).
    pub scratch: Option<PathBuf>,
}

/// What is in a directory, for "found: ..." ("a.txt, b/", at most 12 names).
pub fn listing(dir: &Path) -> String {
    let Ok(entries) = std::fs::read_dir(dir) else { return "nothing readable".into() };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.path().is_dir() { format!("{name}/") } else { name }
        })
        .collect();
    names.sort();
    if names.is_empty() {
        return "an empty directory".into();
    }
    let more = names.len().saturating_sub(12);
    names.truncate(12);
    let mut s = names.join(", ");
    if more > 0 {
        s.push_str(&format!(" and {more} more"));
    }
    s
}

/// BirdNET-Pi's database under `dir`: at the top, in `scripts/`, or in `BirdNET-Pi/scripts/`.
fn pi_database(dir: &Path) -> Option<PathBuf> {
    ["birds.db", "scripts/birds.db", "BirdNET-Pi/scripts/birds.db"].iter().map(|p| dir.join(p)).find(|p| p.is_file())
}

/// At most `max` bytes of a small text file (a station's config): `None` when it cannot be
/// read, is not UTF-8, or is larger (then ignored, with a note in the log).
pub fn read_small(path: &Path, max: u64) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > max {
        tracing::warn!(file = %path.display(), max, "a station's config file is larger than a config can be: ignored");
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// The `By_Date` directory of a BirdNET-Pi's clips, near `dir` or the database, inside `within`
/// (what was handed over). A directory named on the command line (`confined` false) may also
/// have it beside itself, as a station's home does (`~/BirdNET-Pi` and `~/BirdSongs`); an
/// upload or an unpacked tar never leaves itself.
fn pi_clips(dir: &Path, db: &Path, within: &SourceRoot, confined: bool) -> Option<PathBuf> {
    let db_dir = db.parent().unwrap_or(dir);
    let inside = [
        dir.join("By_Date"),
        dir.join("Extracted/By_Date"),
        dir.join("BirdSongs/Extracted/By_Date"),
        db_dir.join("By_Date"),
    ];
    if let Some(found) = inside.iter().find_map(|p| within.subdir(p)) {
        return Some(found.path().to_path_buf());
    }
    if confined {
        return None;
    }
    let mut beside = Vec::new();
    for up in [dir.parent(), db_dir.parent(), db_dir.parent().and_then(Path::parent)].into_iter().flatten() {
        beside.push(up.join("BirdSongs/Extracted/By_Date"));
        beside.push(up.join("Extracted/By_Date"));
    }
    beside.into_iter().find_map(|p| SourceRoot::new(&p)).map(|r| r.path().to_path_buf())
}

/// `--clips DIR`: the directory itself holds the dated directories, or a `By_Date/` (or
/// `Extracted/By_Date/`) inside it does; never a link out of `DIR`.
fn clips_override(dir: &Path) -> Option<PathBuf> {
    let root = SourceRoot::new(dir)?;
    ["By_Date", "Extracted/By_Date"]
        .iter()
        .find_map(|sub| root.subdir(&dir.join(sub)))
        .map(|r| r.path().to_path_buf())
        .or_else(|| Some(root.path().to_path_buf()))
}

/// BirdNET-Pi's `birdnet.conf` near `dir` or the database (inside `within` when `confined`).
fn pi_conf(dir: &Path, db: &Path, within: Option<&SourceRoot>) -> Option<PathBuf> {
    let db_dir = db.parent().unwrap_or(dir);
    [dir.join("birdnet.conf"), dir.join("BirdNET-Pi/birdnet.conf"), db_dir.join("birdnet.conf")]
        .into_iter()
        .chain(db_dir.parent().map(|p| p.join("birdnet.conf")))
        .find_map(|p| match within {
            Some(root) => root.file(&p),
            None => p.is_file().then_some(p),
        })
}

/// Opens BirdNET-Pi's database at `db` with clips and config found near `dir` (what was handed
/// over; `confined`: an upload or an unpacked tar, never left).
pub fn open_pi(dir: &Path, db: &Path, clips: Option<&Path>, confined: bool) -> Result<Opened, SourceError> {
    let within = SourceRoot::new(dir).ok_or_else(|| SourceError::NotFound {
        path: dir.display().to_string(),
        expected: expected(PeerKind::BirdnetPi).into(),
        found: "nothing readable".into(),
    })?;
    let clips = match clips {
        Some(c) => clips_override(c),
        None => pi_clips(dir, db, &within, confined),
    };
    let conf = pi_conf(dir, db, confined.then_some(&within));
    let source = birdnet_pi::open(db, clips.as_deref(), conf.as_deref())?;
    Ok(Opened { source: Box::new(source), database: db.to_path_buf(), clips, scratch: None })
}

/// Opens what `path` holds as a `kind` station. A tar is unpacked under `scratch_root` first.
pub fn open(kind: PeerKind, path: &Path, clips: Option<&Path>, scratch_root: &Path) -> Result<Opened, ImportError> {
    if !path.exists() {
        return Err(SourceError::NotFound {
            path: path.display().to_string(),
            expected: expected(kind).into(),
            found: "nothing (no such file or directory)".into(),
        }
        .into());
    }
    if path.is_file() && unpack::is_tar(path) {
        let dir = unpack::unpack(path, scratch_root)?;
        return match open_unpacked(kind, &dir, clips, scratch_root, true) {
            Ok(mut o) => {
                o.scratch = Some(dir);
                Ok(o)
            }
            Err(e) => {
                unpack::remove(&dir);
                Err(match e {
                    // Name the archive, not the scratch directory.
                    ImportError::Source(SourceError::NotFound { expected, found, .. }) => {
                        SourceError::NotFound { path: path.display().to_string(), expected, found }.into()
                    }
                    other => other,
                })
            }
        };
    }
    // A database file (an upload is one) is confined to its directory; a directory named on the
    // command line may have its clips beside it.
    open_unpacked(kind, path, clips, scratch_root, path.is_file())
}

fn expected(kind: PeerKind) -> &'static str {
    match kind {
        PeerKind::BirdnetPi => "birds.db (BirdNET-Pi's database, at the top or in scripts/)",
        PeerKind::BirdnetGo => "birdnet.db (BirdNET-Go's database)",
    }
}

fn open_unpacked(
    kind: PeerKind,
    path: &Path,
    clips: Option<&Path>,
    scratch_root: &Path,
    confined: bool,
) -> Result<Opened, ImportError> {
    match kind {
        PeerKind::BirdnetGo => {
            let source = birdnet_go::open(path, scratch_root)?;
            Ok(Opened { source, database: path.to_path_buf(), clips: clips.map(Path::to_path_buf), scratch: None })
        }
        PeerKind::BirdnetPi if path.is_dir() => {
            let Some(db) = pi_database(path) else {
                return Err(SourceError::NotFound {
                    path: path.display().to_string(),
                    expected: expected(kind).into(),
                    found: listing(path),
                }
                .into());
            };
            Ok(open_pi(path, &db, clips, confined)?)
        }
        PeerKind::BirdnetPi => {
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            Ok(open_pi(dir, path, clips, confined)?)
        }
    }
}

/// Reopens the source of a job (a resumed or queued job, in this process or a later one).
pub fn reopen(
    kind: PeerKind,
    database: &Path,
    clips: Option<&Path>,
    scratch_root: &Path,
) -> Result<Box<dyn PeerSource>, SourceError> {
    match kind {
        PeerKind::BirdnetGo => birdnet_go::open(database, scratch_root),
        PeerKind::BirdnetPi => {
            let dir = database.parent().unwrap_or(Path::new("."));
            let conf = pi_conf(dir, database, None);
            Ok(Box::new(birdnet_pi::open(database, clips, conf.as_deref())?))
        }
    }
}
