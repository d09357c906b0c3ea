//! Many objects written at once with shared syncs, for ingest's group commit. Each object is as
//! durable on return as one from [`ObjectStore::put`] (its data and its directory entry synced),
//! but the steps run phase by phase over the whole batch: every temp file is written and renamed
//! into place, then each file is fsynced and each directory that received one is fsynced once,
//! however many objects it got.
//!
//! The renames come before the syncs so that a file's sync commits the file system's journal
//! with the rename in it, and the directory's sync finds nothing left to commit: one journal
//! commit per batch instead of two (issue 39). Until the syncs return, a power cut may leave a
//! key with a short file; ingest writes only keys of chunks it does not hold (no row names them)
//! and commits a row only after this returns, and a retry of the chunk replaces the file.

use std::{
    collections::BTreeMap,
    fs::File,
    io::{self, Write},
    path::PathBuf,
};

use uuid::Uuid;

use super::{ObjectError, ObjectStore, Staged, TMP_DIR, validate_key};

impl ObjectStore {
    /// Durably stores each `(key, bytes)`, replacing any previous object under the key (blocking).
    /// One result per item, in order: a failure is that item's alone, and leaves no temp file.
    pub fn put_many_blocking(&self, items: &[(&str, &[u8])]) -> Vec<Result<u64, ObjectError>> {
        let placed: Vec<Result<(File, PathBuf, u64), ObjectError>> = items
            .iter()
            .map(|(key, bytes)| {
                let (file, staged) = self.write_temp(key, bytes)?;
                let (dir, len) = staged.place(key)?;
                Ok((file, dir, len))
            })
            .collect();
        let synced: Vec<Result<(PathBuf, u64), ObjectError>> = placed
            .into_iter()
            .zip(items)
            .map(|(p, (key, _))| {
                let (file, dir, len) = p?;
                if let Err(e) = file.sync_all() {
                    let _ = self.remove_blocking(key); // not durable: not kept either
                    return Err(e.into());
                }
                Ok((dir, len))
            })
            .collect();
        let mut dirs: BTreeMap<PathBuf, Option<io::ErrorKind>> =
            synced.iter().flatten().map(|(dir, _)| (dir.clone(), None)).collect();
        for (dir, failed) in &mut dirs {
            if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
                *failed = Some(e.kind());
            }
        }
        synced
            .into_iter()
            .map(|p| {
                p.and_then(|(dir, len)| match dirs.get(&dir).copied().flatten() {
                    None => Ok(len),
                    Some(kind) => Err(ObjectError::Io(kind.into())),
                })
            })
            .collect()
    }

    /// A temp file holding `bytes`, not yet synced.
    fn write_temp(&self, key: &str, bytes: &[u8]) -> Result<(File, Staged), ObjectError> {
        validate_key(key)?;
        let tmp = self.root.join(TMP_DIR).join(Uuid::new_v4().to_string());
        let mut file = File::create_new(&tmp)?;
        let staged = Staged { tmp: Some(tmp), root: self.root.clone(), len: bytes.len() as u64 };
        file.write_all(bytes)?;
        Ok((file, staged))
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn a_batch_stores_each_object_and_fails_only_the_bad_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = ObjectStore::open(dir.path()).expect("open");
        let items: Vec<(&str, &[u8])> = vec![
            ("audio/t/s1/2026-05-15/a.wav", b"one"),
            ("../escape.wav", b"bad key"),
            ("audio/t/s2/2026-05-15/b.wav", b"two"),
            ("audio/t/s1/2026-05-15/c.wav", b"three"),
        ];
        let results = store.put_many_blocking(&items);
        assert_eq!(results.len(), 4);
        assert!(matches!(results[1], Err(ObjectError::InvalidKey(_))));
        for (i, (key, bytes)) in items.iter().enumerate().filter(|(i, _)| *i != 1) {
            assert_eq!(results[i].as_ref().ok(), Some(&(bytes.len() as u64)), "{key}");
            assert_eq!(fs::read(store.path_of(key).expect("path")).expect("stored"), *bytes);
        }
        let left = fs::read_dir(super::super::tmp_dir(dir.path())).expect("tmp").count();
        assert_eq!(left, 0, "no temp file remains");
    }
}
