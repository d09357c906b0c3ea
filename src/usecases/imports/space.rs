//! One disk budget for every import of this hub: an upload being written, a backup being
//! unpacked and a WAL database being copied each reserve the bytes (and files) they are still to
//! write, and every free-space check subtracts what the others reserved. Without it two imports
//! (of two teams) each pass their own check and together fill the disk. The budget is kept per
//! `<data>/imports` directory (one hub; tests run several hubs in one process).

use std::{
    collections::HashMap,
    io,
    path::{Path, PathBuf},
    sync::{Mutex, OnceLock},
};

/// Bytes and files promised to running imports and not yet written.
#[derive(Debug, Default, Clone, Copy)]
struct Ledger {
    bytes: u64,
    files: u64,
}

fn ledgers() -> &'static Mutex<HashMap<PathBuf, Ledger>> {
    static LEDGERS: OnceLock<Mutex<HashMap<PathBuf, Ledger>>> = OnceLock::new();
    LEDGERS.get_or_init(Mutex::default)
}

/// The budget `dir` draws on: the `imports` directory above it (`imports/uploads/<id>`,
/// `imports/scratch`), else `dir` itself.
fn budget(dir: &Path) -> PathBuf {
    dir.ancestors().find(|a| a.file_name().is_some_and(|n| n == "imports")).unwrap_or(dir).to_path_buf()
}

/// What the disk under a directory has left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Free {
    pub bytes: u64,
    pub files: u64,
}

/// The free bytes and files (inodes) an unprivileged writer may use under `dir`.
pub fn free(dir: &Path) -> io::Result<Free> {
    let s = rustix::fs::statvfs(dir).map_err(io::Error::from)?;
    Ok(Free { bytes: s.f_bavail.saturating_mul(s.f_frsize), files: s.f_favail })
}

/// Why a reservation was refused: what was asked and what is left beside the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Short {
    pub needed: u64,
    /// Free bytes minus what other imports reserved.
    pub free: u64,
    /// Whether it is the files (inodes), not the bytes, that are short.
    pub files: bool,
}

/// Files (inodes) kept free for the hub itself whatever an import asks.
const KEEP_FILES: u64 = 10_000;

/// A share of the budget, given back when dropped (or as it is written, [`Reservation::written`]).
#[derive(Debug)]
pub struct Reservation {
    budget: PathBuf,
    bytes: u64,
    files: u64,
}

impl Reservation {
    /// Reserves `bytes` and `files` under `dir`, keeping `keep_free` bytes free beside what every
    /// other reservation holds.
    pub fn take(dir: &Path, bytes: u64, files: u64, keep_free: u64) -> io::Result<Result<Self, Short>> {
        let now = free(dir)?;
        let key = budget(dir);
        let mut all = ledgers().lock().unwrap_or_else(|p| p.into_inner());
        let l = all.entry(key.clone()).or_default();
        let free_bytes = now.bytes.saturating_sub(l.bytes);
        if bytes.saturating_add(keep_free) > free_bytes {
            return Ok(Err(Short { needed: bytes, free: free_bytes, files: false }));
        }
        let free_files = now.files.saturating_sub(l.files);
        if files.saturating_add(KEEP_FILES) > free_files {
            return Ok(Err(Short { needed: files, free: free_files, files: true }));
        }
        l.bytes += bytes;
        l.files += files;
        Ok(Ok(Self { budget: key, bytes, files }))
    }

    /// An empty reservation (nothing promised yet).
    pub fn none() -> Self {
        Self { budget: PathBuf::new(), bytes: 0, files: 0 }
    }

    /// Gives back `bytes` and `files` of the budget.
    fn give_back(&mut self, bytes: u64, files: u64) {
        let (b, f) = (bytes.min(self.bytes), files.min(self.files));
        if b == 0 && f == 0 {
            return;
        }
        let mut all = ledgers().lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = all.get_mut(&self.budget) {
            l.bytes = l.bytes.saturating_sub(b);
            l.files = l.files.saturating_sub(f);
            if l.bytes == 0 && l.files == 0 {
                all.remove(&self.budget);
            }
        }
        self.bytes -= b;
        self.files -= f;
    }

    /// `bytes` and `files` were written: they are on the disk now, no longer promised.
    pub fn written(&mut self, bytes: u64, files: u64) {
        self.give_back(bytes, files);
    }

    /// Checks again while writing: the disk under `dir` still has room for what this reservation
    /// has left to write beside every other one (someone else may have filled it meanwhile).
    pub fn still_fits(&self, dir: &Path, keep_free: u64) -> io::Result<Result<(), Short>> {
        let now = free(dir)?;
        let l = ledgers().lock().unwrap_or_else(|p| p.into_inner()).get(&budget(dir)).copied().unwrap_or_default();
        let others = Ledger { bytes: l.bytes.saturating_sub(self.bytes), files: l.files.saturating_sub(self.files) };
        let free_bytes = now.bytes.saturating_sub(others.bytes);
        if self.bytes.saturating_add(keep_free) > free_bytes {
            return Ok(Err(Short { needed: self.bytes, free: free_bytes, files: false }));
        }
        let free_files = now.files.saturating_sub(others.files);
        if self.files.saturating_add(KEEP_FILES) > free_files {
            return Ok(Err(Short { needed: self.files, free: free_files, files: true }));
        }
        Ok(Ok(()))
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.give_back(self.bytes, self.files);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_reservation_sees_the_first() {
        let dir = tempfile::tempdir().expect("dir");
        let free = free(dir.path()).expect("statvfs").bytes;
        let half = free / 2 + free / 10;
        let first = Reservation::take(dir.path(), half, 1, 0).expect("statvfs").expect("fits alone");
        let second = Reservation::take(dir.path(), half, 1, 0).expect("statvfs");
        assert!(second.is_err(), "two reservations of 60 % each do not fit together");
        drop(first);
        let mut third = Reservation::take(dir.path(), half, 1, 0).expect("statvfs").expect("fits once freed");
        third.written(half, 1);
        assert!(third.still_fits(dir.path(), 0).expect("statvfs").is_ok());
    }
}
