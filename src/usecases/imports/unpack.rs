//! Unpacking a tar backup of an old station (BirdNET-Pi's backup, or a BirdNET-Go data directory
//! uploaded as tar) into a scratch directory, safely: entries with absolute paths or `..` refuse
//! the archive, links and special files are skipped (never followed), the data streams from the
//! archive to the files, and the free space is checked before anything is written.

use std::{
    fs,
    io::{self, Read},
    path::{Component, Path, PathBuf},
};

use super::{ImportError, SourceError};

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
    for c in raw.components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err(format!("entry {} climbs out with ..", raw.display())),
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!("entry {} has an absolute path", raw.display()));
            }
        }
    }
    Ok(out)
}

fn unreadable(path: &Path, message: impl Into<String>) -> ImportError {
    ImportError::Source(SourceError::Unreadable { path: path.display().to_string(), message: message.into() })
}

/// Unpacks `archive` into a fresh directory under `scratch_root` and returns it. On any error the
/// directory is removed again.
pub fn unpack(archive: &Path, scratch_root: &Path) -> Result<PathBuf, ImportError> {
    // First pass: the size of what will be written, and the entries' safety.
    let mut needed: u64 = 0;
    {
        let mut tar = tar::Archive::new(io::BufReader::new(fs::File::open(archive).map_err(SourceError::Io)?));
        for entry in tar.entries().map_err(|e| unreadable(archive, e.to_string()))? {
            let entry = entry.map_err(|e| unreadable(archive, format!("a damaged tar: {e}")))?;
            let path = entry.path().map_err(|e| unreadable(archive, e.to_string()))?;
            safe_path(&path).map_err(|m| unreadable(archive, m))?;
            if entry.header().entry_type().is_file() {
                needed = needed.saturating_add(entry.size());
            }
        }
    }
    fs::create_dir_all(scratch_root).map_err(SourceError::Io)?;
    let free = rustix::fs::statvfs(scratch_root)
        .map(|s| s.f_bavail.saturating_mul(s.f_frsize))
        .map_err(|e| SourceError::Io(io::Error::from(e)))?;
    // Leave some room for the hub's own writes.
    let reserve = 64 * 1024 * 1024;
    if needed.saturating_add(reserve) > free {
        return Err(ImportError::NoSpace { needed, free });
    }
    let dest = scratch_root.join(format!("unpack-{}", uuid::Uuid::new_v4()));
    fs::create_dir_all(&dest).map_err(SourceError::Io)?;
    match extract(archive, &dest) {
        Ok(()) => Ok(dest),
        Err(e) => {
            let _ = fs::remove_dir_all(&dest);
            Err(e)
        }
    }
}

fn extract(archive: &Path, dest: &Path) -> Result<(), ImportError> {
    let mut tar = tar::Archive::new(io::BufReader::new(fs::File::open(archive).map_err(SourceError::Io)?));
    for entry in tar.entries().map_err(|e| unreadable(archive, e.to_string()))? {
        let mut entry = entry.map_err(|e| unreadable(archive, format!("a damaged tar: {e}")))?;
        let rel = safe_path(&entry.path().map_err(|e| unreadable(archive, e.to_string()))?)
            .map_err(|m| unreadable(archive, m))?;
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
            io::copy(&mut entry, &mut out)
                .map_err(|e| unreadable(archive, format!("unpacking {}: {e}", rel.display())))?;
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
