//! Where audio comes from, and how it is cut into chunks.

use std::{path::PathBuf, str::FromStr};

use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::chunk::CapturedChunk;

/// `--source`: `dir:PATH`, `alsa:DEVICE` (e.g. `alsa:default`, `alsa:plughw:1,0`) or `rtsp:URL`
/// (the part after `rtsp:` may itself start with `rtsp://`).
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Dir(PathBuf),
    Alsa(String),
    Rtsp(String),
}

impl FromStr for Source {
    type Err = String;
    fn from_str(_s: &str) -> Result<Self, String> {
        todo!("capture helper")
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
    _options: CaptureOptions,
    _profile: watch::Receiver<CaptureProfile>,
    _tx: mpsc::Sender<CapturedChunk>,
    _status: watch::Sender<CaptureStatus>,
    _shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    todo!("capture helper")
}
