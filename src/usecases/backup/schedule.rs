//! The daily backups' rules: their file names (`birdhub-backup-YYYYMMDD-HHMMSS.tar.zst`, local
//! time), when one is due, and which old ones go. Only files named like that are ever deleted.

use std::{
    fs, io,
    path::{Path, PathBuf},
};

use chrono::{Duration, NaiveDateTime, NaiveTime};

const PREFIX: &str = "birdhub-backup-";
const SUFFIX: &str = ".tar.zst";
const STAMP: &str = "%Y%m%d-%H%M%S";

/// The file name of a backup made at the local time `at`.
pub fn file_name(at: NaiveDateTime) -> String {
    format!("{PREFIX}{}{SUFFIX}", at.format(STAMP))
}

/// The local time in a backup's file name; `None` for any other file.
pub fn parse_name(name: &str) -> Option<NaiveDateTime> {
    let stamp = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    if stamp.len() != 15 {
        return None;
    }
    NaiveDateTime::parse_from_str(stamp, STAMP).ok()
}

/// `HH:MM` of `backup.daily_at`; `None` when empty or malformed.
pub fn parse_daily_at(s: &str) -> Option<NaiveTime> {
    let s = s.trim();
    let (h, m) = s.split_once(':')?;
    if h.len() != 2 || m.len() != 2 {
        return None;
    }
    NaiveTime::from_hms_opt(h.parse().ok()?, m.parse().ok()?, 0)
}

/// The daily backups in `dir`, oldest first (an absent dir has none).
pub fn list(dir: &Path) -> io::Result<Vec<(NaiveDateTime, PathBuf)>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry?;
        if let Some(at) = entry.file_name().to_str().and_then(parse_name)
            && entry.file_type()?.is_file()
        {
            found.push((at, entry.path()));
        }
    }
    found.sort();
    Ok(found)
}

/// The most recent time of day `at` at or before `now` (both local).
pub fn last_slot(now: NaiveDateTime, at: NaiveTime) -> NaiveDateTime {
    let today = now.date().and_time(at);
    if today <= now { today } else { today - Duration::days(1) }
}

/// Whether a backup is due at `now`: none was made since the last slot. One missed while the
/// hub was down is made at the next pass.
pub fn is_due(now: NaiveDateTime, at: NaiveTime, made: &[(NaiveDateTime, PathBuf)]) -> bool {
    let slot = last_slot(now, at);
    !made.iter().any(|(t, _)| *t >= slot)
}

/// Deletes the oldest daily backups in `dir` beyond the newest `keep`; returns what it deleted.
pub fn prune(dir: &Path, keep: usize) -> io::Result<Vec<PathBuf>> {
    let made = list(dir)?;
    let surplus = made.len().saturating_sub(keep);
    let mut deleted = Vec::new();
    for (_, path) in made.into_iter().take(surplus) {
        fs::remove_file(&path)?;
        deleted.push(path);
    }
    Ok(deleted)
}
