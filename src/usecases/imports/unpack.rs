//! Unpacking a tar backup of an old station (BirdNET-Pi's backup, or a BirdNET-Go data directory
//! uploaded as tar) into a scratch directory, safely: entries with absolute paths or `..` refuse
//! the archive, links and special files are skipped (never followed), the data streams from the
//! archive to the files. A first pass bounds the archive (entries, depth, path length) and
//! reserves what it will write from the hub's import budget ([`super::space`]): every file's
//! size rounded up to 4 KiB, and 4 KiB and one inode for every directory and entry (a 1 KiB entry
//! 300 directories deep costs 1.2 MB of directories). The space and inodes are checked again
//! while extracting.

use std::{
    collections::HashSet,
    fs,
    hash::{BuildHasher, RandomState},
    io::{self, Read},
    path::{Component, Path, PathBuf},
};

use super::{ImportError, SourceError, space};

/// Entries (files, directories, links, anything) an archive may hold.
pub const MAX_ENTRIES: u64 = 200_000;
/// Path components an entry may have (`BirdSongs/Extracted/By_Date/2024-05-01/Name/x.mp3` is 6).
pub const MAX_DEPTH: usize = 16;
/// Bytes an entry's path may have.
pub const MAX_PATH_BYTES: usize = 1024;
/// What a file or directory costs on disk at least (one block).
const BLOCK: u64 = 4096;
/// Free space left for the hub's own writes beside an unpacked backup.
const KEEP_FREE: u64 = 64 * 1024 * 1024;
/// How often (bytes or entries written) the disk is looked at again while extracting.
const CHECK_BYTES: u64 = 16 * 1024 * 1024;
const CHECK_ENTRIES: u64 = 2_000;

/// Whether `path` is a tar archive (the `ustar` magic of its first header).
pub fn is_tar(path: &Path) -> bool {
    let Ok(mut f) = fs::File::open(path) else { return false };
    let mut header = [0u8; 512];
    if f.read_exact(&mut header).is_err() {
        return false;
    }
    &header[257..262] == b"ustar"
}

/// The relative path an entry may be written to, or why not.
fn safe_path(raw: &Path) -> Result<PathBuf, String> {
    let mut out = PathBuf::new();
    let mut depth = 0;
    for c in raw.components() {
        match c {
            Component::Normal(part) => {
                out.push(part);
                depth += 1;
            }
            Component::CurDir => {}
            Component::ParentDir => return Err(format!("entry {} climbs out with ..", raw.display())),
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!("entry {} has an absolute path", raw.display()));
            }
        }
    }
    if depth > MAX_DEPTH {
        return Err(format!("an entry is {depth} directories deep; a station's backup has at most {MAX_DEPTH}"));
    }
    if out.as_os_str().len() > MAX_PATH_BYTES {
        return Err(format!("an entry's path is longer than {MAX_PATH_BYTES} bytes"));
    }
    Ok(out)
}

fn unreadable(path: &Path, message: impl Into<String>) -> ImportError {
    ImportError::Source(SourceError::Unreadable { path: path.display().to_string(), message: message.into() })
}

/// What unpacking an archive costs: bytes on disk and files (inodes), counted before anything
/// is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    pub bytes: u64,
    pub files: u64,
}

/// Reads the archive's headers once: refuses an unsafe, too deep or too crowded one, and says
/// what it will cost. Directories are counted once each, whether the archive lists them or only
/// implies them (a file's parents), by a hash of their path (memory stays a few MB).
fn cost(archive: &Path) -> Result<Cost, ImportError> {
    let mut tar = tar::Archive::new(io::BufReader::new(fs::File::open(archive).map_err(SourceError::Io)?));
    let hasher = RandomState::new();
    let mut dirs: HashSet<u64> = HashSet::new();
    let (mut entries, mut bytes) = (0u64, 0u64);
    for entry in tar.entries().map_err(|e| unreadable(archive, e.to_string()))? {
        let entry = entry.map_err(|e| unreadable(archive, format!("a damaged tar: {e}")))?;
        entries += 1;
        if entries > MAX_ENTRIES {
            return Err(ImportError::Archive(format!(
                "the archive holds more than {MAX_ENTRIES} entries; a station's backup has fewer"
            )));
        }
        let path = entry.path().map_err(|e| unreadable(archive, e.to_string()))?;
        let rel = safe_path(&path).map_err(ImportError::Archive)?;
        let kind = entry.header().entry_type();
        if kind.is_file() {
            bytes = bytes.saturating_add(entry.size().div_ceil(BLOCK).max(1).saturating_mul(BLOCK));
        }
        let mut dir = if kind.is_dir() { Some(rel.as_path()) } else { rel.parent() };
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            if !dirs.insert(hasher.hash_one(d)) {
                break;
            }
            if dirs.len() as u64 > MAX_ENTRIES {
                return Err(ImportError::Archive(format!(
                    "the archive makes more than {MAX_ENTRIES} directories; a station's backup has fewer"
                )));
            }
            dir = d.parent();
        }
    }
    let dirs = dirs.len() as u64;
    // Every entry costs a block at least (links and devices are skipped, but counting them keeps
    // a header-only archive from being free).
    let bytes = bytes.saturating_add(dirs.saturating_add(entries).saturating_mul(BLOCK));
    Ok(Cost { bytes, files: dirs.saturating_add(entries) })
}

fn short(s: space::Short) -> ImportError {
    if s.files {
        ImportError::NoFiles { needed: s.needed, free: s.free }
    } else {
        ImportError::NoSpace { needed: s.needed, free: s.free }
    }
}

/// Unpacks `archive` into a fresh directory under `scratch_root` and returns it. On any error the
/// directory is removed again.
pub fn unpack(archive: &Path, scratch_root: &Path) -> Result<PathBuf, ImportError> {
    let need = cost(archive)?;
    fs::create_dir_all(scratch_root).map_err(SourceError::Io)?;
    let mut reserved = space::Reservation::take(scratch_root, need.bytes, need.files, KEEP_FREE)
        .map_err(SourceError::Io)?
        .map_err(short)?;
    let dest = scratch_root.join(scratch_name("unpack"));
    fs::create_dir_all(&dest).map_err(SourceError::Io)?;
    match extract(archive, &dest, &mut reserved) {
        Ok(()) => Ok(dest),
        Err(e) => {
            let _ = fs::remove_dir_all(&dest);
            Err(e)
        }
    }
}

/// `<what>-<pid>-<uuid>`: the process that made a scratch directory is in its name, so the hub's
/// start-up clean-up ([`owner`]) leaves alone what a running `birdhub import` is using.
pub fn scratch_name(what: &str) -> String {
    format!("{what}-{}-{}", std::process::id(), uuid::Uuid::new_v4())
}

/// The process that made scratch directory `name` ([`scratch_name`]), if it says.
pub fn owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("unpack-").or_else(|| name.strip_prefix("birdnet-go-"))?;
    let (pid, id) = rest.split_once('-')?;
    uuid::Uuid::parse_str(id).ok()?;
    pid.parse().ok()
}

fn extract(archive: &Path, dest: &Path, reserved: &mut space::Reservation) -> Result<(), ImportError> {
    let mut tar = tar::Archive::new(io::BufReader::new(fs::File::open(archive).map_err(SourceError::Io)?));
    let (mut since_bytes, mut since_entries) = (0u64, 0u64);
    for entry in tar.entries().map_err(|e| unreadable(archive, e.to_string()))? {
        let mut entry = entry.map_err(|e| unreadable(archive, format!("a damaged tar: {e}")))?;
        let rel =
            safe_path(&entry.path().map_err(|e| unreadable(archive, e.to_string()))?).map_err(ImportError::Archive)?;
        since_entries += 1;
        if since_entries >= CHECK_ENTRIES || since_bytes >= CHECK_BYTES {
            // What was written is on the disk now: the check sees the disk as it is.
            reserved.written(since_bytes, since_entries);
            (since_bytes, since_entries) = (0, 0);
            reserved.still_fits(dest, KEEP_FREE).map_err(SourceError::Io)?.map_err(short)?;
        }
        if rel.as_os_str().is_empty() {
            continue;
        }
        let target = dest.join(&rel);
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            fs::create_dir_all(&target).map_err(SourceError::Io)?;
        } else if kind.is_file() {
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent).map_err(SourceError::Io)?;
            }
            // Only directories this function made lie between `dest` and the file: no link of
            // the archive was ever created, so nothing can lead outside.
            let mut out = fs::File::create(&target).map_err(SourceError::Io)?;
            let n = io::copy(&mut entry, &mut out)
                .map_err(|e| unreadable(archive, format!("unpacking {}: {e}", rel.display())))?;
            since_bytes += n;
        }
        // Symbolic and hard links, devices and fifos are skipped.
    }
    Ok(())
}

/// Removes a scratch directory this module made (only one under `scratch_root` named so).
pub fn remove(dir: &Path) {
    let named = dir.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("unpack-"));
    if named && let Err(e) = fs::remove_dir_all(dir) {
        tracing::warn!(dir = %dir.display(), error = %e, "could not remove an import's scratch directory");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_entry_paths_are_refused() {
        assert!(safe_path(Path::new("/etc/passwd")).is_err());
        assert!(safe_path(Path::new("By_Date/../../x")).is_err());
        assert_eq!(safe_path(Path::new("./By_Date/a.mp3")), Ok(PathBuf::from("By_Date/a.mp3")));
        let deep: PathBuf = (0..=MAX_DEPTH).map(|i| format!("d{i}")).collect();
        assert!(safe_path(&deep).is_err(), "too deep");
        assert!(safe_path(Path::new(&"x".repeat(MAX_PATH_BYTES + 1))).is_err(), "too long");
    }

    #[test]
    fn directories_cost_a_block_each_even_when_only_implied() {
        let dir = tempfile::tempdir().expect("dir");
        let archive = dir.path().join("deep.tar");
        {
            let mut b = tar::Builder::new(fs::File::create(&archive).expect("create"));
            let mut h = tar::Header::new_gnu();
            h.set_size(1);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, "a/b/c/d/x", &b"1"[..]).expect("file");
            let mut h = tar::Header::new_gnu();
            h.set_size(1);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, "a/b/y", &b"2"[..]).expect("file");
            b.finish().expect("finish");
        }
        // Two files of a block each, four directories (a, a/b, a/b/c, a/b/c/d), two entries.
        assert_eq!(cost(&archive).expect("cost"), Cost { bytes: (2 + 4 + 2) * BLOCK, files: 6 });
    }

    #[test]
    fn scratch_names_carry_their_process() {
        let name = scratch_name("unpack");
        assert_eq!(owner(&name), Some(std::process::id()));
        assert_eq!(owner("unpack-0b7e"), None);
        assert_eq!(owner(&format!("birdnet-go-12-{}", uuid::Uuid::new_v4())), Some(12));
    }

    #[test]
    fn a_tar_unpacks_its_files_and_skips_links() {
        let dir = tempfile::tempdir().expect("dir");
        let archive = dir.path().join("backup.tar");
        {
            let mut b = tar::Builder::new(fs::File::create(&archive).expect("create"));
            let mut h = tar::Header::new_gnu();
            h.set_size(3);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, "By_Date/x.mp3", &b"abc"[..]).expect("file");
            let mut l = tar::Header::new_gnu();
            l.set_entry_type(tar::EntryType::Symlink);
            l.set_size(0);
            l.set_cksum();
            b.append_link(&mut l, "escape", "/etc").expect("link");
            b.finish().expect("finish");
        }
        assert!(is_tar(&archive));
        let out = unpack(&archive, &dir.path().join("scratch")).expect("unpack");
        assert_eq!(fs::read(out.join("By_Date/x.mp3")).expect("read"), b"abc");
        assert!(fs::symlink_metadata(out.join("escape")).is_err(), "links are not made");
        remove(&out);
        assert!(!out.exists());
    }
}
