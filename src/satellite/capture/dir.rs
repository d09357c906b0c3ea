//! The `dir:PATH` source: the audio files of a directory (WAV, FLAC, MP3, Ogg Vorbis; sorted by
//! name; subdirectories ignored), decoded and resampled to 48 kHz on a blocking thread, block by
//! block, and chunked file by file.
//!
//! - A file's last piece is kept when it holds at least 1 s of new audio, padded with silence to
//!   the chunk length (like the hub's `classify` windows); a shorter one is dropped.
//! - `realtime`: each chunk is sent when its audio would have finished recording; a file starts
//!   now (or where the previous one ended, if later). `fast`: chunks go as fast as the channel
//!   takes them, timed on a synthetic clock that starts when capture starts and runs on by each
//!   file's length, so chunk times are distinct and ordered either way.
//! - Done files are recorded in `dir-progress.json` (see [`super::progress`]); a file stopped
//!   half-way (shutdown) is read again from its start next time. With `loop_dir` the directory
//!   is read again after the last file, every file this time.
//! - Without `loop_dir`, once every file is done capture reports [`CaptureStatus::Finished`] and
//!   looks for new files every 2 s (a recordings folder). A file modified in the last second is
//!   left for a later look, so one still being written is not read half-way.
//! - An unreadable file is logged, marked done and skipped.

use std::{
    path::{Path, PathBuf},
    time::{Duration, SystemTime},
};

use chrono::{DateTime, Utc};
use tokio::sync::mpsc;

use super::{
    CaptureStatus, Outlet, Pace,
    chunker::{Chunker, duration_of},
    progress::{FileStamp, Progress},
};
use crate::{
    inference::audio::{
        AudioError,
        decode::{AudioStream, has_audio_extension},
        resample::StreamResampler,
    },
    satellite::chunk::{CHUNK_RATE, CapturedChunk},
};

/// How often the directory is looked at again when there is nothing to read.
const POLL: Duration = Duration::from_secs(2);
/// A file modified more recently than this is left for the next look.
const SETTLE: Duration = Duration::from_secs(1);
/// Samples per block handed from the decoding thread (0.2 s).
const BLOCK: usize = CHUNK_RATE as usize / 5;

#[derive(Debug)]
struct Entry {
    name: String,
    path: PathBuf,
    stamp: FileStamp,
}

/// The directory's settled audio files, sorted by name.
fn list(dir: &Path) -> std::io::Result<Vec<Entry>> {
    let now = SystemTime::now();
    let mut files = Vec::new();
    for item in std::fs::read_dir(dir)? {
        let item = item?;
        let path = item.path();
        let Ok(meta) = item.metadata() else { continue };
        if !meta.is_file() || !has_audio_extension(&path) {
            continue;
        }
        let settled = meta.modified().ok().and_then(|m| now.duration_since(m).ok()).is_none_or(|age| age >= SETTLE);
        if !settled {
            continue;
        }
        let name = item.file_name().to_string_lossy().into_owned();
        files.push(Entry { name, path, stamp: FileStamp::of(&meta) });
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}

/// Runs the source until shutdown.
pub(super) async fn run(dir: PathBuf, pace: Pace, loop_dir: bool, state_dir: PathBuf, out: Outlet) {
    let mut progress = Progress::load(&state_dir);
    let mut cursor = Utc::now();
    let mut skip_done = true;
    while !out.shutdown.is_cancelled() {
        let files = match list(&dir) {
            Ok(files) => files,
            Err(e) => {
                out.set_status(CaptureStatus::Error(format!("cannot read the directory {}: {e}", dir.display())));
                if !out.sleep(POLL).await {
                    return;
                }
                continue;
            }
        };
        let names: Vec<String> = files.iter().map(|f| f.name.clone()).collect();
        let pending: Vec<&Entry> = files.iter().filter(|f| !skip_done || !progress.is_done(&f.name, f.stamp)).collect();
        if pending.is_empty() {
            if loop_dir && !files.is_empty() {
                skip_done = false;
                continue;
            }
            if !loop_dir {
                out.set_status(CaptureStatus::Finished);
            }
            if !out.sleep(POLL).await {
                return;
            }
            continue;
        }
        out.set_status(CaptureStatus::Running);
        let mut sent = 0;
        for entry in pending {
            match read_file(&entry.path, pace, &mut cursor, &out).await {
                Ok(n) => {
                    sent += n;
                    tracing::info!(file = %entry.path.display(), chunks = n, "capture read a file");
                }
                Err(FileEnd::Cancelled) => return,
                Err(FileEnd::Unreadable(e)) => {
                    tracing::warn!(file = %entry.path.display(), "capture skips an unreadable file: {e}");
                }
            }
            progress.mark_done(&entry.name, entry.stamp, &names);
        }
        if loop_dir {
            skip_done = false;
            // A directory of only unreadable or empty files must not spin.
            if sent == 0 && !out.sleep(POLL).await {
                return;
            }
        }
    }
}

enum FileEnd {
    Cancelled,
    Unreadable(AudioError),
}

/// Chunks one file; returns the number of chunks sent.
async fn read_file(path: &Path, pace: Pace, cursor: &mut DateTime<Utc>, out: &Outlet) -> Result<u64, FileEnd> {
    let (blocks_tx, mut blocks) = mpsc::channel(4);
    let owned = path.to_owned();
    tokio::task::spawn_blocking(move || decode_blocks(&owned, &blocks_tx));
    let start = (*cursor).max(Utc::now());
    let mut chunker = Chunker::new(out.profile.clone(), start);
    let mut sent = 0;
    let mut failure = None;
    loop {
        let Some(block) = out.until_cancelled(blocks.recv()).await else { return Err(FileEnd::Cancelled) };
        match block {
            None => break,
            Some(Ok(samples)) => {
                for chunk in chunker.push(&samples) {
                    emit(chunk, pace, out).await?;
                    sent += 1;
                }
            }
            Some(Err(e)) => {
                failure = Some(e);
                break;
            }
        }
    }
    if failure.is_none()
        && let Some(tail) = chunker.finish()
    {
        emit(tail, pace, out).await?;
        sent += 1;
    }
    *cursor = start + duration_of(chunker.pushed());
    match failure {
        Some(e) => Err(FileEnd::Unreadable(e)),
        None => Ok(sent),
    }
}

/// Sends a chunk: in `realtime`, once its audio would have finished recording.
async fn emit(chunk: CapturedChunk, pace: Pace, out: &Outlet) -> Result<(), FileEnd> {
    if pace == Pace::Realtime {
        let ends = chunk.recorded_at + duration_of(chunk.samples.len() as u64);
        let wait = (ends - Utc::now()).to_std().unwrap_or_default();
        if !out.sleep(wait).await {
            return Err(FileEnd::Cancelled);
        }
    }
    if out.send(chunk).await { Ok(()) } else { Err(FileEnd::Cancelled) }
}

/// On a blocking thread: decodes and resamples `path` to 48 kHz blocks; stops when the
/// receiver is gone. An error is the last message.
fn decode_blocks(path: &Path, tx: &mpsc::Sender<Result<Vec<f32>, AudioError>>) {
    let mut batch = Vec::with_capacity(BLOCK * 2);
    let result = (|| {
        let mut stream = AudioStream::open_file(path)?;
        let mut resampler = StreamResampler::new(stream.sample_rate(), CHUNK_RATE)?;
        while let Some(block) = stream.next_block()? {
            batch.extend(resampler.push(&block)?);
            if batch.len() >= BLOCK && tx.blocking_send(Ok(std::mem::take(&mut batch))).is_err() {
                return Ok(());
            }
        }
        batch.extend(resampler.finish()?);
        if !batch.is_empty() {
            let _ = tx.blocking_send(Ok(std::mem::take(&mut batch)));
        }
        Ok(())
    })();
    if let Err(e) = result {
        let _ = tx.blocking_send(Err(e));
    }
}
