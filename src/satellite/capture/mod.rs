//! Where audio comes from, and how it is cut into chunks.
//!
//! # Sources (`--source`)
//! - `dir:PATH`: the audio files of a directory (WAV, FLAC, MP3, Ogg Vorbis; sorted by name,
//!   subdirectories ignored), decoded in pure Rust (symphonia; WAV by hound) and resampled to
//!   48 kHz (rubato). See [`dir`] for the details; in short:
//!   - pacing: `realtime` sends each chunk when its audio would have finished recording
//!     (`recordedAt` = about now); `fast` sends as fast as the consumer takes chunks, with
//!     `recordedAt` on a synthetic clock that starts when capture starts and advances by the
//!     audio's length (distinct, ordered times).
//!   - progress: `STATE_DIR/dir-progress.json` lists the files already chunked (name, size,
//!     mtime), so a restart does not send them again; a changed file is read again.
//!   - `loop_dir`: after the last file the directory is read again from the start, every file.
//!     Without it capture reports [`CaptureStatus::Finished`] and keeps looking for new files
//!     every 2 s (a recordings folder). Unreadable files are logged, marked done and skipped.
//!   - a file's last piece is sent padded with silence when it holds at least 1 s of new audio,
//!     dropped when shorter.
//! - `alsa:DEVICE` (`alsa:default`, `alsa:plughw:1,0`): `arecord -D DEVICE -f S16_LE -c 1
//!   -r 48000 -t raw -q`. arecord rather than a Rust audio crate: it needs no native build
//!   dependency, works with every ALSA device and name, and the plug layer converts rate,
//!   format and channels for free (use a `plughw:` or `default` device for a card that cannot
//!   do 48 kHz mono itself).
//! - `rtsp:URL` (`rtsp:rtsp://cam/stream`, `rtsp://cam/stream`, `rtsps://...`, or any URL ffmpeg
//!   reads: `rtsp:http://host/live.mp3`, `rtsp:file:/tmp/x.wav`): `ffmpeg -nostdin -loglevel
//!   error [-rtsp_transport tcp] -i URL -vn -ac 1 -ar 48000 -f s16le -`.
//!
//! # Live sources ([`live`])
//! The child process is killed with capture. When it exits or fails to start, capture reports
//! [`CaptureStatus::Error`] with its last stderr line and starts it again after a backoff of 1 s,
//! doubling to at most 60 s, reset once a run delivered 60 s of audio. A read watchdog restarts
//! a process that sent no bytes for 15 s (a stalled stream). Chunks of a run are timed from the
//! moment its first bytes arrived.
//!
//! # Chunks ([`chunker`])
//! `chunk_ms` long, each starting `chunk_ms - overlap_ms` after the previous one, gain applied
//! and clipped to 16 bits; the profile is read from its watch channel at every cut, so changes
//! apply from the next chunk. Chunks go to the channel with `send().await`: a slow consumer
//! slows a `dir:` source down; a live source cannot pause, so its process blocks on a full pipe
//! (arecord then reports an overrun and skips audio).
//!
//! # Debian dependencies
//! `alsa-utils` (arecord) for `alsa:` and `ffmpeg` for `rtsp:`; `dir:` needs neither.

pub mod chunker;
pub mod dir;
pub mod live;
pub mod progress;

use std::{path::PathBuf, str::FromStr, time::Duration};

use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::chunk::CapturedChunk;

/// `--source`: `dir:PATH`, `alsa:DEVICE` (e.g. `alsa:default`, `alsa:plughw:1,0`) or `rtsp:URL`
/// (the part after `rtsp:` may itself start with `rtsp://`, or be any URL ffmpeg reads; a bare
/// `rtsp://` or `rtsps://` URL is accepted too).
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A directory of audio files.
    Dir(PathBuf),
    /// An ALSA device name.
    Alsa(String),
    /// A URL for ffmpeg.
    Rtsp(String),
}

/// The forms of `--source`, for error messages.
const SOURCE_FORMS: &str =
    "dir:PATH, alsa:DEVICE (e.g. alsa:default, alsa:plughw:1,0) or rtsp:URL (e.g. rtsp://camera/stream)";

impl FromStr for Source {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let empty = |what: &str| format!("`{s}`: the {what} is missing; use {SOURCE_FORMS}");
        let (kind, rest) = s.split_once(':').ok_or_else(|| format!("`{s}` is not a source; use {SOURCE_FORMS}"))?;
        match kind.to_ascii_lowercase().as_str() {
            "dir" if rest.is_empty() => Err(empty("directory")),
            "dir" => Ok(Self::Dir(PathBuf::from(rest))),
            "alsa" if rest.is_empty() => Err(empty("device")),
            "alsa" => Ok(Self::Alsa(rest.to_owned())),
            "rtsp" | "rtsps" if rest.is_empty() || rest == "//" => Err(empty("URL")),
            // `rtsp://cam/x` and `rtsps://cam/x` are whole URLs; `rtsp:ANY-URL` wraps one.
            "rtsp" | "rtsps" if rest.starts_with("//") => Ok(Self::Rtsp(s.to_owned())),
            "rtsp" => Ok(Self::Rtsp(rest.to_owned())),
            _ => Err(format!("`{s}` is not a source; use {SOURCE_FORMS}")),
        }
    }
}

/// How a directory source is read: `realtime` emits chunks at the pace they would have been
/// recorded (recordedAt = now), `fast` as quickly as the consumer takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pace {
    #[default]
    Realtime,
    Fast,
}

/// The part of the recording profile capture follows (SPEC 2.5); changes apply from the next chunk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CaptureProfile {
    pub chunk_ms: u32,
    pub overlap_ms: u32,
    pub gain: f64,
}

impl Default for CaptureProfile {
    fn default() -> Self {
        Self { chunk_ms: 3000, overlap_ms: 0, gain: 1.0 }
    }
}

/// What capture reports about itself (drives the heartbeat `state`).
#[derive(Debug, Clone, PartialEq)]
pub enum CaptureStatus {
    Running,
    /// The source failed; capture is retrying with backoff.
    Error(String),
    /// A directory source with `loop_dir = false` has sent every file.
    Finished,
}

/// Options of [`spawn`].
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    pub source: Source,
    pub pace: Pace,
    /// Read the directory again from the start after the last file (benchmarks, demos).
    pub loop_dir: bool,
    /// Where capture keeps its own small state (which files of a directory were read).
    pub state_dir: PathBuf,
}

/// Starts capture on its own task(s): chunks go to `tx` (which applies backpressure), status
/// changes to `status`. Returns when `shutdown` is cancelled.
pub fn spawn(
    options: CaptureOptions,
    profile: watch::Receiver<CaptureProfile>,
    tx: mpsc::Sender<CapturedChunk>,
    status: watch::Sender<CaptureStatus>,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    spawn_with(options, live::Timing::default(), Outlet { profile, tx, status, shutdown })
}

/// [`spawn`] with the live sources' timing given (tests shorten the watchdog).
fn spawn_with(options: CaptureOptions, timing: live::Timing, out: Outlet) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        match options.source {
            Source::Dir(dir) => dir::run(dir, options.pace, options.loop_dir, options.state_dir, out).await,
            Source::Alsa(device) => live::run(live::arecord(&device), timing, out).await,
            Source::Rtsp(url) => live::run(live::ffmpeg(&url), timing, out).await,
        }
    })
}

/// Where a source's chunks and status go, and when it stops.
#[derive(Debug, Clone)]
struct Outlet {
    profile: watch::Receiver<CaptureProfile>,
    tx: mpsc::Sender<CapturedChunk>,
    status: watch::Sender<CaptureStatus>,
    shutdown: CancellationToken,
}

impl Outlet {
    /// Reports a status (only a change notifies the watchers).
    fn set_status(&self, new: CaptureStatus) {
        self.status.send_if_modified(|current| {
            let changed = *current != new;
            *current = new;
            changed
        });
    }

    /// Sends a chunk, waiting while the channel is full; false on shutdown or when the consumer
    /// is gone.
    async fn send(&self, chunk: CapturedChunk) -> bool {
        matches!(self.until_cancelled(self.tx.send(chunk)).await, Some(Ok(())))
    }

    /// Sleeps; false when shutdown came first.
    async fn sleep(&self, how_long: Duration) -> bool {
        self.until_cancelled(tokio::time::sleep(how_long)).await.is_some()
    }

    /// `fut`'s output, or None on shutdown.
    async fn until_cancelled<T>(&self, fut: impl Future<Output = T>) -> Option<T> {
        tokio::select! {
            biased;
            _ = self.shutdown.cancelled() => None,
            value = fut => Some(value),
        }
    }
}

#[cfg(test)]
mod tests;
