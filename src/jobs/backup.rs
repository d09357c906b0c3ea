//! The daily backup (`backup.daily_at`): every [`EVERY`] it checks, on the hub's clock, whether
//! the day's backup is due, writes it into `backup.dir` as `birdhub-backup-YYYYMMDD-HHMMSS.tar.zst`
//! and deletes the oldest such files beyond `backup.keep`. Off when `daily_at` is empty.

use std::{path::PathBuf, time::Duration};

use chrono::Local;
use tokio_util::sync::CancellationToken;

use crate::{
    state::AppState,
    usecases::backup::{self, BackupError, Manifest, schedule},
};

/// Backups are due at a minute; a pass starts at most this long after it.
pub const EVERY: Duration = Duration::from_secs(30);

/// One pass at a time in a process, so a pass a test makes and the job's own never both write
/// the same day's backup.
static PASS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// After a failed backup (a full disk, a missing USB stick) the next attempt waits this long,
/// so a failing backup does not write and delete a big temp file every pass.
pub const RETRY_AFTER: Duration = Duration::from_secs(15 * 60);

/// The job: checks every [`EVERY`] and makes the day's backup when it is due. Idle when
/// `backup.daily_at` is empty.
pub async fn run(state: AppState, shutdown: CancellationToken) -> anyhow::Result<()> {
    if schedule::parse_daily_at(&state.settings.backup.daily_at).is_none() {
        shutdown.cancelled().await;
        return Ok(());
    }
    sweep_temp_files(&state.settings.backup.dir_in(&state.settings.data_dir));
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut failed_at: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            _ = tick.tick() => {}
        }
        if failed_at.is_some_and(|t| t.elapsed() < RETRY_AFTER) {
            continue;
        }
        match pass(&state).await {
            Ok(Some((path, m))) => {
                failed_at = None;
                tracing::info!(path = %path.display(), files = m.files.len(), bytes = m.total_bytes(), "daily backup made")
            }
            Ok(None) => {}
            Err(e) => {
                failed_at = Some(tokio::time::Instant::now());
                tracing::error!(error = %e, "the daily backup failed; it is tried again in 15 minutes")
            }
        }
    }
}

/// Removes what a backup interrupted by a crash or power cut left in `dir`: its temp archive
/// and database snapshot (`.birdhub-backup-*.tmp-*`, `.birdhub-backup-*.db-*`).
fn sweep_temp_files(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(".birdhub-backup-")
            && (name.contains(".tar.zst.tmp-") || name.contains(".tar.zst.db-"))
            && std::fs::remove_file(entry.path()).is_ok()
        {
            tracing::warn!(file = %name, "removed a backup left half-written by an earlier crash");
        }
    }
}

/// Makes the daily backup when it is due at the hub clock's now, then prunes old ones. `None`
/// when nothing was due (or daily backups are off).
pub async fn pass(state: &AppState) -> Result<Option<(PathBuf, Manifest)>, BackupError> {
    let settings = &state.settings.backup;
    let Some(at) = schedule::parse_daily_at(&settings.daily_at) else { return Ok(None) };
    let _one = PASS.lock().await;
    let now = state.clock.now();
    let local = now.with_timezone(&Local).naive_local();
    let dir = settings.dir_in(&state.settings.data_dir);
    let io = |what: &str, dir: &std::path::Path| {
        let what = format!("{what} {}", dir.display());
        move |source| BackupError::Io { what, source }
    };
    let made = schedule::list(&dir).map_err(io("listing", &dir))?;
    if !schedule::is_due(local, at, &made) {
        return Ok(None);
    }
    let path = dir.join(schedule::file_name(local));
    let manifest = backup::backup(&state.store, &state.settings.data_dir, &path, now).await?;
    for old in schedule::prune(&dir, settings.keep).map_err(io("pruning", &dir))? {
        tracing::info!(path = %old.display(), "old daily backup deleted");
    }
    Ok(Some((path, manifest)))
}
