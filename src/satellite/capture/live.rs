//! Live sources: a child process (`arecord` for `alsa:`, `ffmpeg` for `rtsp:`) that writes raw
//! 48 kHz mono 16-bit little-endian PCM to its stdout, read and chunked as it arrives.
//!
//! When the process exits, fails to start or goes quiet (the read watchdog: no bytes for 15 s
//! kills it), capture reports [`CaptureStatus::Error`] with the process's last stderr line and
//! starts it again after a backoff: 1 s, doubling up to 60 s, back to 1 s once a run delivered
//! 60 s of audio. A new run is a new stream: its chunks are timed from its first bytes (and then
//! by sample count: over a very long run the device's clock may drift from the system's).

use std::{
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use chrono::Utc;
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, BufReader},
    process::{Child, Command},
};

use super::{
    CaptureStatus, Outlet,
    chunker::{Chunker, duration_of, from_i16},
};

/// The timing of a live source (see the module doc for the defaults).
#[derive(Debug, Clone, Copy)]
pub(super) struct Timing {
    /// No bytes for this long: the process is killed and started again.
    pub watchdog: Duration,
    pub backoff_min: Duration,
    pub backoff_max: Duration,
    /// Audio a run must deliver for the backoff to start over at `backoff_min`.
    pub healthy_after: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            watchdog: Duration::from_secs(15),
            backoff_min: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
            healthy_after: Duration::from_secs(60),
        }
    }
}

/// The exponential backoff between runs.
#[derive(Debug)]
pub(super) struct Backoff {
    timing: Timing,
    next: Duration,
}

impl Backoff {
    pub fn new(timing: Timing) -> Self {
        Self { timing, next: timing.backoff_min }
    }

    /// The wait after a run that delivered `audio` of sound.
    pub fn after_run(&mut self, audio: Duration) -> Duration {
        if audio >= self.timing.healthy_after {
            self.next = self.timing.backoff_min;
        }
        let wait = self.next;
        self.next = (self.next * 2).min(self.timing.backoff_max);
        wait
    }
}

/// What to run: the program, its arguments and a name for messages.
#[derive(Debug, Clone)]
pub(super) struct Program {
    pub name: &'static str,
    pub args: Vec<String>,
    /// Said when the program cannot be started at all.
    pub install_hint: &'static str,
}

/// `arecord` reading an ALSA device as 48 kHz mono S16_LE (the plug layer converts).
pub(super) fn arecord(device: &str) -> Program {
    let args = ["-D", device, "-f", "S16_LE", "-c", "1", "-r", "48000", "-t", "raw", "-q"];
    Program { name: "arecord", args: args.map(str::to_owned).to_vec(), install_hint: "install alsa-utils" }
}

/// `ffmpeg` reading any URL it knows as 48 kHz mono s16le; RTSP over TCP.
pub(super) fn ffmpeg(url: &str) -> Program {
    let mut args: Vec<String> = ["-nostdin", "-loglevel", "error"].map(str::to_owned).to_vec();
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("rtsp://") || lower.starts_with("rtsps://") {
        args.extend(["-rtsp_transport", "tcp"].map(str::to_owned));
    }
    args.extend(["-i", url, "-vn", "-ac", "1", "-ar", "48000", "-f", "s16le", "-"].map(str::to_owned));
    Program { name: "ffmpeg", args, install_hint: "install ffmpeg" }
}

/// Runs the source until shutdown.
pub(super) async fn run(program: Program, timing: Timing, out: Outlet) {
    let mut backoff = Backoff::new(timing);
    let mut failures = 0u32;
    while !out.shutdown.is_cancelled() {
        let (audio, why) = match once(&program, timing, &out).await {
            Some(ended) => ended,
            None => return,
        };
        if audio >= timing.healthy_after {
            failures = 0;
        }
        failures += 1;
        let wait = backoff.after_run(audio);
        let message = format!("{}: {why}; retrying in {} s (attempt {failures})", program.name, wait.as_secs_f64());
        tracing::warn!("capture: {message}");
        out.set_status(CaptureStatus::Error(message));
        if !out.sleep(wait).await {
            return;
        }
    }
}

/// One run of the program: the audio it delivered and why it ended, or None on shutdown.
async fn once(program: &Program, timing: Timing, out: &Outlet) -> Option<(Duration, String)> {
    let mut child = match Command::new(program.name)
        .args(&program.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            return Some((Duration::ZERO, format!("cannot start {} ({e}; {})", program.name, program.install_hint)));
        }
    };
    let last_line = Arc::new(Mutex::new(String::new()));
    let stderr_task = child.stderr.take().map(|stderr| {
        let last_line = last_line.clone();
        let name = program.name;
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let line = line.trim().to_owned();
                if !line.is_empty() {
                    tracing::debug!("{name}: {line}");
                    if let Ok(mut last) = last_line.lock() {
                        *last = line;
                    }
                }
            }
        })
    });
    let Some(mut stdout) = child.stdout.take() else {
        return Some((Duration::ZERO, "no stdout".into()));
    };

    let mut chunker: Option<Chunker> = None;
    let mut buf = vec![0u8; 9600];
    let mut carry: Option<u8> = None;
    let mut samples = Vec::with_capacity(4800);
    let ended = loop {
        let read = tokio::select! {
            biased;
            _ = out.shutdown.cancelled() => {
                stop(&mut child).await;
                return None;
            }
            read = tokio::time::timeout(timing.watchdog, stdout.read(&mut buf)) => read,
        };
        let n = match read {
            Err(_) => {
                stop(&mut child).await;
                break format!("no audio for {} s, restarting", timing.watchdog.as_secs());
            }
            Ok(Err(e)) => break format!("reading its output failed: {e}"),
            Ok(Ok(0)) => break String::new(),
            Ok(Ok(n)) => n,
        };
        let chunker = chunker.get_or_insert_with(|| {
            out.set_status(CaptureStatus::Running);
            Chunker::new(out.profile.clone(), Utc::now())
        });
        samples.clear();
        let mut bytes = &buf[..n];
        if let Some(low) = carry.take() {
            samples.push(from_i16(i16::from_le_bytes([low, bytes[0]])));
            bytes = &bytes[1..];
        }
        let pairs = bytes.chunks_exact(2);
        carry = pairs.remainder().first().copied();
        samples.extend(pairs.map(|p| from_i16(i16::from_le_bytes([p[0], p[1]]))));
        for chunk in chunker.push(&samples) {
            if !out.send(chunk).await {
                stop(&mut child).await;
                return None;
            }
        }
    };
    let audio = chunker.as_ref().map_or(Duration::ZERO, |c| duration_of(c.pushed()).to_std().unwrap_or_default());
    let status = match tokio::time::timeout(Duration::from_secs(5), child.wait()).await {
        Ok(Ok(status)) => status.to_string(),
        _ => {
            stop(&mut child).await;
            "did not exit".into()
        }
    };
    if let Some(task) = stderr_task {
        let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
    }
    let last = last_line.lock().map(|l| l.clone()).unwrap_or_default();
    // arecord starts its messages with its own name; the status message already does.
    let last = last.strip_prefix(&format!("{}: ", program.name)).map(str::to_owned).unwrap_or(last);
    let why = match (ended.is_empty(), last.is_empty()) {
        (false, _) => ended,
        (true, false) => format!("{last} ({status})"),
        (true, true) if audio > Duration::ZERO => format!("the stream ended ({status})"),
        (true, true) => format!("no audio ({status})"),
    };
    Some((audio, why))
}

/// Kills the child and reaps it.
async fn stop(child: &mut Child) {
    let _ = child.kill().await;
}
