//! Audio retention: keeps the disk from filling (`[retention]` in the config).
//!
//! A sweep ([`sweep`]) first finishes deletions a crash interrupted, then:
//! 1. deletes the audio of plain chunks (no detection a person verified, no rare one, none
//!    annotated; see [`store::audio_retention`]) older than `keep_audio_days`, oldest first;
//! 2. while free space is under `min_free_disk_mb`, deletes plain audio of any age, oldest first,
//!    then the audio kept longest (verified, rare, annotated), oldest first.
//!
//! Audio of a detection with a live share link ([`store::share_links`]) is never deleted; a
//! revoked, expired or ended link keeps nothing. Rows stay; their audio is
//! marked expired, which the API and dashboard show as "audio expired".
//!
//! Each chunk is marked in the database before its file is deleted, so a crash never leaves a
//! row pointing at a missing file; the next sweep deletes files of marked rows first.
//!
//! Ingest asks [`DiskGuard::room_for_chunk`] before writing: under the minimum it runs a sweep
//! at once (one at a time), and when the disk is still too full the chunk is refused with
//! `disk_full`, so the satellite keeps it and sends it again later.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use tokio::sync::{Mutex, Notify};

use crate::{
    clock::Clock,
    objects::ObjectStore,
    store::{
        self, Store,
        audio_retention::{Candidate, Tier},
    },
    time::Timestamp,
};

/// Chunks handled per database round.
const BATCH: i64 = 200;
/// After a sweep that found nothing to delete, ingest does not sweep again for this long.
const QUIET: Duration = Duration::from_secs(60);

/// The configured policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub keep_audio_days: u32,
    pub min_free_bytes: u64,
}

/// What a sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Swept {
    /// Marked rows from an interrupted sweep whose files were deleted now.
    pub finished: u64,
    pub expired_by_age: u64,
    pub deleted_for_space: u64,
    pub bytes: u64,
    /// Free space stayed under the minimum with nothing left to delete.
    pub still_short: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum RetentionError {
    #[error("storage: {0}")]
    Store(#[from] store::Error),
    #[error("cannot read the free space of {path}: {source}")]
    Disk { path: String, source: std::io::Error },
}

/// Free bytes for unprivileged writers on the file system holding `path`.
pub fn free_bytes(path: &Path) -> Result<u64, RetentionError> {
    let s = rustix::fs::statvfs(path)
        .map_err(|e| RetentionError::Disk { path: path.display().to_string(), source: e.into() })?;
    Ok(s.f_bavail.saturating_mul(s.f_frsize))
}

/// Runs one sweep over the whole hub; `data_dir` is where free space is measured.
pub async fn sweep(
    store: &Store,
    objects: &ObjectStore,
    clock: &Clock,
    policy: Policy,
    data_dir: &Path,
) -> Result<Swept, RetentionError> {
    let mut out = Swept { finished: finish(store, objects).await?, ..Swept::default() };
    let now = clock.stamp();
    let cutoff = Timestamp(now.at() - chrono::Duration::days(i64::from(policy.keep_audio_days)));
    loop {
        let batch = store.call(move |c| store::audio_retention::candidates(c, Tier::Plain, cutoff, now, BATCH)).await?;
        if batch.is_empty() {
            break;
        }
        out.expired_by_age += batch.len() as u64;
        out.bytes += expire(store, objects, batch, now).await?;
    }
    // Under pressure: the oldest first, plain before kept, a batch at a time until there is room.
    let far = Timestamp(now.at() + chrono::Duration::days(1));
    for tier in [Tier::Plain, Tier::Kept] {
        loop {
            let short = policy.min_free_bytes.saturating_sub(free_bytes(data_dir)?);
            if short == 0 {
                break;
            }
            let mut batch = store.call(move |c| store::audio_retention::candidates(c, tier, far, now, BATCH)).await?;
            if batch.is_empty() {
                break;
            }
            // Only as many as the shortfall needs, oldest first.
            let mut sum = 0u64;
            let enough = batch.iter().position(|c| {
                sum += u64::try_from(c.size_bytes).unwrap_or(0);
                sum >= short
            });
            if let Some(i) = enough {
                batch.truncate(i + 1);
            }
            out.deleted_for_space += batch.len() as u64;
            out.bytes += expire(store, objects, batch, now).await?;
        }
    }
    out.still_short = free_bytes(data_dir)? < policy.min_free_bytes;
    Ok(out)
}

/// Marks, deletes and confirms one batch; returns the bytes freed.
async fn expire(
    store: &Store,
    objects: &ObjectStore,
    batch: Vec<Candidate>,
    now: Timestamp,
) -> Result<u64, RetentionError> {
    let ids: Vec<_> = batch.iter().map(|c| c.id).collect();
    store.call(move |c| store::audio_retention::mark_expiring(c, &ids, now)).await?;
    Ok(delete_files(store, objects, batch).await?.0)
}

/// Deletes the batch's files and confirms those that are gone: (bytes freed, chunks confirmed).
async fn delete_files(
    store: &Store,
    objects: &ObjectStore,
    batch: Vec<Candidate>,
) -> Result<(u64, usize), RetentionError> {
    let mut bytes = 0u64;
    let mut gone = Vec::with_capacity(batch.len());
    for c in &batch {
        // Already gone is fine (a retry after a crash); a failure leaves the row marked for the
        // next sweep.
        match objects.delete(&c.storage_key).await {
            Ok(existed) => {
                if existed {
                    bytes += u64::try_from(c.size_bytes).unwrap_or(0);
                }
                gone.push(c.id);
            }
            Err(e) => tracing::warn!(key = %c.storage_key, error = %e, "could not delete expired audio"),
        }
    }
    let confirmed = gone.len();
    store.call(move |c| store::audio_retention::mark_deleted(c, &gone)).await?;
    Ok((bytes, confirmed))
}

/// Deletes the files of rows an interrupted sweep marked.
async fn finish(store: &Store, objects: &ObjectStore) -> Result<u64, RetentionError> {
    let mut done = 0;
    loop {
        let batch = store.call(|c| store::audio_retention::expiring(c, BATCH)).await?;
        if batch.is_empty() {
            return Ok(done);
        }
        let (_, confirmed) = delete_files(store, objects, batch).await?;
        if confirmed == 0 {
            // The files cannot be deleted now (logged); the next sweep tries again.
            return Ok(done);
        }
        done += confirmed as u64;
    }
}

/// Shared by ingest and the retention job: wakes the job, and sweeps at once for ingest.
#[derive(Clone)]
pub struct DiskGuard {
    pub policy: Policy,
    data_dir: Arc<PathBuf>,
    /// Held while a sweep runs; holds the instant of the last sweep that could not make room.
    running: Arc<Mutex<Option<std::time::Instant>>>,
    wake: Arc<Notify>,
    /// Until when the last reading of the free space answers for ingest ([`AMPLE`]).
    ample_until: Arc<std::sync::Mutex<Option<std::time::Instant>>>,
}

/// Free space this far above the minimum lets one reading stand for [`AMPLE_FOR`]: ingest
/// cannot write half a gigabyte in a second (about 300 MB/s of chunks on the bench machine,
/// a tenth of that to an SD card), so no chunk gets past the minimum unseen, and the chunks of
/// the real rate cost no `statvfs` each (issue 39).
const AMPLE: u64 = 512 * 1_048_576;
const AMPLE_FOR: Duration = Duration::from_secs(1);

/// Why ingest refused a chunk (every chunk of a batch is told the same).
#[derive(Debug, Clone, thiserror::Error)]
pub enum DiskFull {
    #[error(
        "disk_full: the hub has {free_mb} MB free, under its {min_mb} MB minimum, and nothing more may be deleted; keep the chunk and send it later"
    )]
    Full { free_mb: u64, min_mb: u64 },
    #[error("disk_full: {0}")]
    Unknown(String),
}

impl DiskGuard {
    pub fn new(policy: Policy, data_dir: &Path) -> Self {
        Self {
            policy,
            data_dir: Arc::new(data_dir.to_path_buf()),
            running: Arc::default(),
            wake: Arc::default(),
            ample_until: Arc::default(),
        }
    }

    /// Whether a recent reading found the free space far above the minimum ([`AMPLE`]): then a
    /// chunk may be written without reading it again.
    pub fn surely_room(&self) -> bool {
        let until = *self.ample_until.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        until.is_some_and(|t| std::time::Instant::now() < t)
    }

    /// The free space now, noting whether it is ample for the next [`AMPLE_FOR`].
    fn read_free(&self) -> Result<u64, DiskFull> {
        let free = free_bytes(&self.data_dir).map_err(|e| DiskFull::Unknown(e.to_string()))?;
        let ample = free >= self.policy.min_free_bytes.saturating_add(AMPLE);
        *self.ample_until.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            ample.then(|| std::time::Instant::now() + AMPLE_FOR);
        Ok(free)
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Resolves when ingest asked for a sweep.
    pub async fn woken(&self) {
        self.wake.notified().await;
    }

    /// Runs a sweep unless one is running (then waits for it).
    pub async fn sweep(&self, store: &Store, objects: &ObjectStore, clock: &Clock) -> Result<Swept, RetentionError> {
        let mut last_short = self.running.lock().await;
        let swept = sweep(store, objects, clock, self.policy, &self.data_dir).await?;
        *last_short = swept.still_short.then(std::time::Instant::now);
        Ok(swept)
    }

    /// Whether a chunk may be written now: under the minimum, a sweep runs first (at most once a
    /// minute when the previous one could not make room).
    pub async fn room_for_chunk(&self, store: &Store, objects: &ObjectStore, clock: &Clock) -> Result<(), DiskFull> {
        if self.surely_room() || self.read_free()? >= self.policy.min_free_bytes {
            return Ok(());
        }
        self.wake.notify_one();
        let recently_short = self.running.lock().await.is_some_and(|t| t.elapsed() < QUIET);
        if !recently_short && let Err(e) = self.sweep(store, objects, clock).await {
            tracing::error!(error = %e, "retention sweep for ingest failed");
        }
        let now_free = self.read_free()?;
        if now_free >= self.policy.min_free_bytes {
            return Ok(());
        }
        Err(DiskFull::Full { free_mb: now_free / 1_048_576, min_mb: self.policy.min_free_bytes / 1_048_576 })
    }
}
