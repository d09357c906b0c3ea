//! Capture end to end: real files decoded from a directory, real `ffmpeg` and `arecord`
//! processes, a tiny HTTP server that ffmpeg reads from.

use std::{
    path::Path,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration as StdDuration, SystemTime},
};

use chrono::{DateTime, Utc};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
    sync::{mpsc, watch},
    time::timeout,
};
use tokio_util::sync::CancellationToken;

use super::{live::Timing, *};

/// `seconds` of a 440 Hz tone at half scale as a WAV at `rate`, mtime in the past (settled).
fn tone_wav(path: &Path, seconds: f64, rate: u32) {
    let spec =
        hound::WavSpec { channels: 1, sample_rate: rate, bits_per_sample: 16, sample_format: hound::SampleFormat::Int };
    let mut w = hound::WavWriter::create(path, spec).expect("wav");
    for i in 0..(seconds * f64::from(rate)) as usize {
        let s = (i as f64 * 440.0 * std::f64::consts::TAU / f64::from(rate)).sin() * 16_000.0;
        w.write_sample(s as i16).expect("sample");
    }
    w.finalize().expect("finalize");
    age(path);
}

/// Sets the file's mtime a minute back, so the source sees it as complete.
fn age(path: &Path) {
    let file = std::fs::File::options().append(true).open(path).expect("open");
    file.set_modified(SystemTime::now() - StdDuration::from_secs(60)).expect("mtime");
}

fn ffmpeg_convert(from: &Path, to: &Path) {
    let status = std::process::Command::new("ffmpeg")
        .args(["-nostdin", "-loglevel", "error", "-y", "-i"])
        .arg(from)
        .arg(to)
        .status()
        .expect("ffmpeg");
    assert!(status.success());
    age(to);
}

struct Capture {
    chunks: mpsc::Receiver<CapturedChunk>,
    status: watch::Receiver<CaptureStatus>,
    seen: Arc<Mutex<Vec<CaptureStatus>>>,
    profile: watch::Sender<CaptureProfile>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

fn start(source: Source, pace: Pace, loop_dir: bool, state: &Path, timing: Timing, queue: usize) -> Capture {
    let (profile, profile_rx) = watch::channel(CaptureProfile::default());
    let (tx, chunks) = mpsc::channel(queue);
    let (status_tx, status) = watch::channel(CaptureStatus::Running);
    let shutdown = CancellationToken::new();
    let options = CaptureOptions { source, pace, loop_dir, state_dir: state.to_owned() };
    let out = Outlet { profile: profile_rx, tx, status: status_tx, shutdown: shutdown.clone() };
    let task = spawn_with(options, timing, out);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut watcher = status.clone();
    let log = seen.clone();
    tokio::spawn(async move {
        while watcher.changed().await.is_ok() {
            let now = watcher.borrow_and_update().clone();
            log.lock().expect("lock").push(now);
        }
    });
    Capture { chunks, status, seen, profile, shutdown, task }
}

impl Capture {
    async fn next(&mut self) -> CapturedChunk {
        timeout(StdDuration::from_secs(60), self.chunks.recv()).await.expect("a chunk in time").expect("open")
    }

    async fn until(&mut self, what: &str, pred: impl Fn(&CaptureStatus) -> bool) -> CaptureStatus {
        let found =
            timeout(StdDuration::from_secs(60), self.status.wait_for(|s| pred(s))).await.map(|r| r.map(|s| s.clone()));
        let seen = self.seen();
        found.unwrap_or_else(|_| panic!("status {what} in time; saw {seen:?}")).expect("open")
    }

    fn seen(&self) -> Vec<CaptureStatus> {
        self.seen.lock().expect("lock").clone()
    }

    async fn stop(self) {
        self.shutdown.cancel();
        timeout(StdDuration::from_secs(10), self.task).await.expect("capture stops on shutdown").expect("no panic");
    }
}

fn is_error(s: &CaptureStatus) -> bool {
    matches!(s, CaptureStatus::Error(_))
}

fn attempt(s: &CaptureStatus) -> u32 {
    match s {
        CaptureStatus::Error(m) => {
            m.rsplit("attempt ").next().and_then(|n| n.trim_end_matches(')').parse().ok()).unwrap_or(0)
        }
        _ => 0,
    }
}

#[test]
fn sources_parse_in_every_documented_form_and_others_are_refused() {
    let ok = [
        ("dir:/srv/recordings", Source::Dir("/srv/recordings".into())),
        ("alsa:default", Source::Alsa("default".into())),
        ("alsa:plughw:1,0", Source::Alsa("plughw:1,0".into())),
        ("rtsp:rtsp://cam.local:554/stream1", Source::Rtsp("rtsp://cam.local:554/stream1".into())),
        ("rtsp://cam.local/stream1", Source::Rtsp("rtsp://cam.local/stream1".into())),
        ("rtsps://cam.local/s", Source::Rtsp("rtsps://cam.local/s".into())),
        ("rtsp:rtsps://cam.local/s", Source::Rtsp("rtsps://cam.local/s".into())),
        ("rtsp:http://host:8000/live.mp3", Source::Rtsp("http://host:8000/live.mp3".into())),
    ];
    for (text, source) in ok {
        assert_eq!(text.parse::<Source>(), Ok(source), "{text}");
    }
    for bad in ["", "default", "dir:", "alsa:", "rtsp:", "mic:0", "http://host/x.mp3", "/srv/recordings"] {
        let err = bad.parse::<Source>().expect_err(bad);
        assert!(err.contains("dir:PATH") && err.contains("alsa:DEVICE") && err.contains("rtsp:URL"), "{bad}: {err}");
    }
}

#[test]
fn backoff_doubles_to_a_minute_and_resets_after_a_minute_of_audio() {
    let mut b = live::Backoff::new(Timing::default());
    let waits: Vec<u64> = (0..9).map(|_| b.after_run(StdDuration::from_secs(5)).as_secs()).collect();
    assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
    assert_eq!(b.after_run(StdDuration::from_secs(60)).as_secs(), 1);
    assert_eq!(b.after_run(StdDuration::ZERO).as_secs(), 2);
}

#[tokio::test]
async fn a_directory_is_chunked_in_name_order_once_and_new_files_are_picked_up() {
    let root = tempfile::tempdir().expect("tempdir");
    let (dir, state) = (root.path().join("rec"), root.path().join("state"));
    std::fs::create_dir_all(dir.join("sub")).expect("dirs");
    tone_wav(&dir.join("a.wav"), 10.0, 44_100);
    tone_wav(&root.path().join("b.wav"), 5.0, 32_000);
    ffmpeg_convert(&root.path().join("b.wav"), &dir.join("b.flac"));
    tone_wav(&root.path().join("c.wav"), 3.5, 48_000);
    ffmpeg_convert(&root.path().join("c.wav"), &dir.join("c.mp3"));
    std::fs::write(dir.join("broken.ogg"), b"OggS not really").expect("write");
    age(&dir.join("broken.ogg"));
    std::fs::write(dir.join("notes.txt"), b"not audio").expect("write");
    tone_wav(&dir.join("sub").join("z.wav"), 3.0, 48_000);

    let began: DateTime<Utc> = Utc::now();
    let mut cap = start(Source::Dir(dir.clone()), Pace::Fast, false, &state, Timing::default(), 2);
    // a: 3 full chunks + a 1 s tail; b: 1 + a 2 s tail; broken: none; c: 1 (0.5 s tail dropped).
    let mut chunks = Vec::new();
    for _ in 0..7 {
        chunks.push(cap.next().await);
    }
    cap.until("Finished", |s| *s == CaptureStatus::Finished).await;
    assert!(cap.chunks.try_recv().is_err(), "nothing more: subdirectories and other files ignored");
    assert!(chunks.iter().all(|c| c.samples.len() == 144_000));
    assert!(chunks[0].recorded_at >= began);
    assert!(chunks.windows(2).all(|w| w[1].recorded_at > w[0].recorded_at), "distinct, ordered times");
    assert_eq!((chunks[3].recorded_at - chunks[0].recorded_at).num_milliseconds(), 9000);
    assert_eq!((chunks[4].recorded_at - chunks[0].recorded_at).num_milliseconds(), 10_000, "b follows a");
    assert!(chunks[3].samples[48_000..].iter().all(|s| *s == 0), "a's tail padded with silence");
    let loud = |c: &CapturedChunk| c.samples[..48_000].iter().map(|s| s.unsigned_abs()).max().unwrap_or(0);
    assert!(chunks.iter().all(|c| (15_000..=17_500).contains(&loud(c))), "the tone, resampled");
    let progress = std::fs::read_to_string(state.join(progress::FILE_NAME)).expect("progress file");
    for name in ["a.wav", "b.flac", "c.mp3", "broken.ogg"] {
        assert!(progress.contains(name), "{name} is done: {progress}");
    }
    cap.stop().await;

    // A restart sends nothing again; a file dropped in later is read.
    let mut cap = start(Source::Dir(dir.clone()), Pace::Fast, false, &state, Timing::default(), 2);
    cap.until("Finished", |s| *s == CaptureStatus::Finished).await;
    assert!(cap.chunks.try_recv().is_err(), "done files are not sent again");
    tone_wav(&dir.join("d.wav"), 6.0, 16_000);
    let d1 = cap.next().await;
    let d2 = cap.next().await;
    assert!(d2.recorded_at > d1.recorded_at);
    cap.until("Finished again", |s| *s == CaptureStatus::Finished).await;
    assert!(cap.chunks.try_recv().is_err());
    cap.stop().await;
}

#[tokio::test]
async fn loop_dir_reads_the_directory_again_with_later_times() {
    let root = tempfile::tempdir().expect("tempdir");
    tone_wav(&root.path().join("one.wav"), 6.0, 48_000);
    let mut cap =
        start(Source::Dir(root.path().to_owned()), Pace::Fast, true, &root.path().join("s"), Timing::default(), 1);
    let mut chunks = Vec::new();
    for _ in 0..6 {
        chunks.push(cap.next().await);
    }
    assert!(chunks.windows(2).all(|w| w[1].recorded_at > w[0].recorded_at));
    assert_eq!(chunks[0].samples, chunks[2].samples, "the same file again");
    assert!(!cap.seen().contains(&CaptureStatus::Finished));
    cap.stop().await;
}

#[tokio::test]
async fn realtime_pacing_sends_a_chunk_once_its_audio_is_over_and_follows_the_profile() {
    let root = tempfile::tempdir().expect("tempdir");
    tone_wav(&root.path().join("short.wav"), 3.0, 48_000);
    let mut cap =
        start(Source::Dir(root.path().to_owned()), Pace::Realtime, false, &root.path().join("s"), Timing::default(), 4);
    cap.profile.send(CaptureProfile { chunk_ms: 1000, overlap_ms: 500, gain: 0.5 }).expect("profile");
    let began = Utc::now();
    for n in 0..5 {
        let chunk = cap.next().await;
        let ends = chunk.recorded_at + chrono::Duration::seconds(1);
        assert!(Utc::now() >= ends, "chunk {n} came after its audio ended");
        assert!(chunk.recorded_at >= began - chrono::Duration::seconds(1), "recordedAt is about now");
        assert_eq!(chunk.samples.len(), 48_000);
        let peak = chunk.samples.iter().map(|s| s.unsigned_abs()).max().unwrap_or(0);
        assert!((7_500..=8_500).contains(&peak), "gain 0.5: {peak}");
    }
    cap.until("Finished", |s| *s == CaptureStatus::Finished).await;
    cap.stop().await;
}

/// Serves `body` as an HTTP response to every connection, then closes it (or, with `stall`,
/// sends only the first half and keeps the connection open). Returns the URL and a counter.
async fn serve(body: Vec<u8>, stall: bool) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/live.wav", listener.local_addr().expect("addr"));
    let count = Arc::new(AtomicUsize::new(0));
    let counter = count.clone();
    let body = Arc::new(body);
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            let body = body.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let head =
                    format!("HTTP/1.0 200 OK\r\nContent-Type: audio/wav\r\nContent-Length: {}\r\n\r\n", body.len());
                let part = if stall { &body[..body.len() / 2] } else { &body[..] };
                let _ = conn.write_all(head.as_bytes()).await;
                let _ = conn.write_all(part).await;
                if stall {
                    tokio::time::sleep(StdDuration::from_secs(120)).await;
                }
            });
        }
    });
    (url, count)
}

fn wav_bytes(seconds: f64) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("x.wav");
    tone_wav(&path, seconds, 32_000);
    std::fs::read(path).expect("read")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_ends_is_reconnected_and_chunks_keep_coming() {
    let (url, connections) = serve(wav_bytes(7.0), false).await;
    let state = tempfile::tempdir().expect("tempdir");
    let source: Source = format!("rtsp:{url}").parse().expect("source");
    let mut cap = start(source, Pace::Realtime, false, state.path(), Timing::default(), 1);
    // 7 s per connection: two 3 s chunks each.
    let mut chunks = Vec::new();
    while chunks.len() < 5 {
        chunks.push(cap.next().await);
        tokio::time::sleep(StdDuration::from_millis(300)).await;
    }
    assert!(connections.load(Ordering::SeqCst) >= 3, "reconnected");
    assert!(chunks.iter().all(|c| c.samples.len() == 144_000));
    let peak = chunks[0].samples.iter().map(|s| s.unsigned_abs()).max().unwrap_or(0);
    assert!((15_000..=17_500).contains(&peak), "the served tone: {peak}");
    let seen = cap.seen();
    let first_error = seen.iter().position(is_error).expect("an Error when the stream ended");
    assert!(seen[first_error..].contains(&CaptureStatus::Running), "Running again: {seen:?}");
    if let CaptureStatus::Error(m) = &seen[first_error] {
        assert!(m.starts_with("ffmpeg: ") && m.contains("retrying in 1 s (attempt 1)"), "{m}");
    }
    cap.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_stream_is_cut_by_the_watchdog_and_reconnected() {
    let (url, connections) = serve(wav_bytes(8.0), true).await;
    let state = tempfile::tempdir().expect("tempdir");
    let timing = Timing { watchdog: StdDuration::from_secs(2), ..Timing::default() };
    let mut cap = start(Source::Rtsp(url), Pace::Realtime, false, state.path(), timing, 4);
    let first = cap.next().await;
    assert_eq!(first.samples.len(), 144_000);
    let stalled = cap.until("Error", is_error).await;
    assert!(format!("{stalled:?}").contains("no audio for 2 s"), "{stalled:?}");
    cap.until("Running again", |s| *s == CaptureStatus::Running).await;
    assert!(connections.load(Ordering::SeqCst) >= 2);
    cap.stop().await;
}

#[tokio::test]
async fn an_unreachable_url_is_an_error_retried_with_backoff() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/live.wav", free.local_addr().expect("addr"));
    drop(free);
    let state = tempfile::tempdir().expect("tempdir");
    let began = std::time::Instant::now();
    let mut cap = start(Source::Rtsp(url), Pace::Realtime, false, state.path(), Timing::default(), 1);
    let first = cap.until("Error", is_error).await;
    assert!(format!("{first:?}").to_lowercase().contains("refused"), "ffmpeg's own message: {first:?}");
    let third = cap.until("a third attempt", |s| attempt(s) >= 3).await;
    // Waits of 1 s and 2 s came before the third failure: no tight loop.
    assert!(began.elapsed() >= StdDuration::from_secs(3), "{third:?}");
    assert!(format!("{third:?}").contains("retrying in 4 s"), "{third:?}");
    cap.stop().await;
}

#[tokio::test]
async fn a_missing_alsa_device_reports_arecords_error_and_retries() {
    let state = tempfile::tempdir().expect("tempdir");
    let mut cap = start(
        "alsa:birdhub_no_such_device".parse().expect("source"),
        Pace::Realtime,
        false,
        state.path(),
        Timing::default(),
        1,
    );
    let first = cap.until("Error", is_error).await;
    let text = format!("{first:?}");
    assert!(text.contains("arecord: main:") && text.contains("audio open error"), "arecord's own line: {text}");
    cap.until("a second attempt", |s| attempt(s) >= 2).await;
    cap.stop().await;
}

#[tokio::test]
async fn a_missing_directory_is_an_error_until_it_appears() {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("later");
    let mut cap = start(Source::Dir(dir.clone()), Pace::Fast, false, &root.path().join("s"), Timing::default(), 1);
    let error = cap.until("Error", is_error).await;
    assert!(format!("{error:?}").contains("cannot read the directory"), "{error:?}");
    std::fs::create_dir(&dir).expect("mkdir");
    tone_wav(&dir.join("x.wav"), 3.0, 48_000);
    assert_eq!(cap.next().await.samples.len(), 144_000);
    cap.until("Finished", |s| *s == CaptureStatus::Finished).await;
    cap.stop().await;
}
