//! Cuts a continuous 48 kHz mono stream into chunks of the recording profile's length and
//! overlap, with its gain applied (clipped to 16 bits).
//!
//! The profile is read from its watch channel each time a chunk is cut, so a change applies
//! from the next chunk cut; the chunk being cut keeps one profile throughout. Chunk `n + 1`
//! starts `chunk_ms - overlap_ms` after chunk `n`. `recorded_at` is the stream's start time plus
//! the chunk's sample offset, so chunk times follow the audio, not the wall clock.

use chrono::{DateTime, Duration, Utc};
use tokio::sync::watch;

use super::CaptureProfile;
use crate::satellite::chunk::{CHUNK_RATE, CapturedChunk};

/// Shortest chunk the chunker cuts, whatever the profile says (100 ms).
const MIN_CHUNK: usize = CHUNK_RATE as usize / 10;
/// A file's last piece shorter than this (1 s) is dropped by [`Chunker::finish`].
pub const MIN_TAIL: usize = CHUNK_RATE as usize;

/// Samples in `ms` milliseconds at [`CHUNK_RATE`].
pub fn samples_in(ms: u32) -> usize {
    (u64::from(ms) * u64::from(CHUNK_RATE) / 1000) as usize
}

/// The duration of `samples` samples at [`CHUNK_RATE`] (microsecond precision).
pub fn duration_of(samples: u64) -> Duration {
    Duration::microseconds((samples.saturating_mul(1_000_000) / u64::from(CHUNK_RATE)) as i64)
}

/// (length, step) in samples for a profile: the length at least [`MIN_CHUNK`], the step at
/// least a tenth of the length (an overlap as long as the chunk would never advance).
fn geometry(profile: &CaptureProfile) -> (usize, usize) {
    let len = samples_in(profile.chunk_ms).max(MIN_CHUNK);
    let overlap = samples_in(profile.overlap_ms).min(len - len / 10);
    (len, len - overlap)
}

/// A sample in [-1, 1] with `gain` applied, as 16-bit PCM (clipped).
fn to_i16(sample: f32, gain: f64) -> i16 {
    (f64::from(sample) * gain * 32768.0).round().clamp(-32768.0, 32767.0) as i16
}

/// 16-bit PCM to a sample in [-1, 1) (exact: `to_i16(from_i16(x), 1.0) == x`).
pub fn from_i16(sample: i16) -> f32 {
    f32::from(sample) / 32768.0
}

/// See the module doc.
#[derive(Debug)]
pub struct Chunker {
    profile: watch::Receiver<CaptureProfile>,
    start: DateTime<Utc>,
    /// Samples from offset `buf_start` on.
    buf: Vec<f32>,
    buf_start: u64,
    /// Offset of the next chunk's first sample.
    next: u64,
    /// Samples pushed so far.
    total: u64,
    /// End offset of the last chunk cut.
    last_end: u64,
}

impl Chunker {
    /// A chunker for a stream whose first sample was recorded at `start`.
    pub fn new(profile: watch::Receiver<CaptureProfile>, start: DateTime<Utc>) -> Self {
        Self { profile, start, buf: Vec::new(), buf_start: 0, next: 0, total: 0, last_end: 0 }
    }

    /// Samples pushed so far.
    pub fn pushed(&self) -> u64 {
        self.total
    }

    /// When the first sample was recorded.
    pub fn start(&self) -> DateTime<Utc> {
        self.start
    }

    /// Feeds samples; returns the chunks they complete.
    pub fn push(&mut self, samples: &[f32]) -> Vec<CapturedChunk> {
        self.buf.extend_from_slice(samples);
        self.total += samples.len() as u64;
        let mut out = Vec::new();
        loop {
            let profile = *self.profile.borrow();
            let (len, step) = geometry(&profile);
            if self.next + len as u64 > self.total {
                break;
            }
            out.push(self.cut(len, profile.gain));
            self.next += step as u64;
        }
        self.trim();
        out
    }

    /// Ends a file: its last piece, padded with silence to the chunk length, when it holds at
    /// least [`MIN_TAIL`] samples and audio no chunk has carried yet; otherwise nothing.
    pub fn finish(&mut self) -> Option<CapturedChunk> {
        let profile = *self.profile.borrow();
        let (len, _) = geometry(&profile);
        let remaining = self.total.saturating_sub(self.next);
        if remaining < MIN_TAIL as u64 || self.total <= self.last_end {
            return None;
        }
        let chunk = self.cut(len, profile.gain);
        self.next = self.total;
        self.trim();
        Some(chunk)
    }

    /// The chunk of `len` samples at `self.next` (silence past the end of the stream).
    fn cut(&mut self, len: usize, gain: f64) -> CapturedChunk {
        let from = (self.next - self.buf_start) as usize;
        let to = (from + len).min(self.buf.len());
        let mut samples: Vec<i16> = self.buf[from..to].iter().map(|s| to_i16(*s, gain)).collect();
        samples.resize(len, 0);
        self.last_end = self.next + len as u64;
        CapturedChunk { recorded_at: self.start + duration_of(self.next), samples }
    }

    /// Drops the samples before the next chunk.
    fn trim(&mut self) {
        let drop = (self.next.min(self.total) - self.buf_start) as usize;
        if drop > 0 {
            self.buf.drain(..drop);
            self.buf_start += drop as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(n: usize) -> Vec<f32> {
        (0..n).map(|i| ((i % 20_000) as f32 - 10_000.0) / 32768.0).collect()
    }

    fn profile(chunk_ms: u32, overlap_ms: u32, gain: f64) -> CaptureProfile {
        CaptureProfile { chunk_ms, overlap_ms, gain }
    }

    fn start() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-05-01T05:00:00Z").expect("time").with_timezone(&Utc)
    }

    #[test]
    fn overlapping_chunks_repeat_the_overlap_and_carry_their_offset_time() {
        let (_tx, rx) = watch::channel(profile(3000, 1000, 1.0));
        let mut chunker = Chunker::new(rx, start());
        let input = ramp(48_000 * 10);
        // Pushed in uneven pieces, as a pipe delivers them.
        let chunks: Vec<CapturedChunk> = input.chunks(7_777).flat_map(|p| chunker.push(p)).collect();
        // Starts 0, 2, 4, 6 s (the next, at 8 s, would end at 11 s).
        assert_eq!(chunks.len(), 4);
        for (n, chunk) in chunks.iter().enumerate() {
            assert_eq!(chunk.samples.len(), 144_000);
            assert_eq!(chunk.recorded_at, start() + Duration::seconds(2 * n as i64));
            let expected: Vec<i16> = input[n * 96_000..n * 96_000 + 144_000].iter().map(|s| to_i16(*s, 1.0)).collect();
            assert_eq!(chunk.samples, expected, "chunk {n} is the input, unchanged at gain 1");
        }
        assert_eq!(chunks[0].samples[96_000..], chunks[1].samples[..48_000], "1 s overlap");
        // 10 s pushed, the last chunk ended at 9 s: 2 s left from 8 s, 1 s of it new.
        let tail = chunker.finish().expect("a tail of at least 1 s");
        assert_eq!(tail.recorded_at, start() + Duration::seconds(8));
        assert_eq!(tail.samples[96_000..], vec![0; 48_000][..], "padded with silence");
        assert!(chunker.finish().is_none());
    }

    #[test]
    fn gain_scales_and_clips_to_sixteen_bits() {
        let (_tx, rx) = watch::channel(profile(1000, 0, 4.0));
        let mut chunker = Chunker::new(rx, start());
        let input: Vec<f32> = [0.1, -0.1, 0.3, -0.3, 0.999, -1.0].iter().copied().cycle().take(48_000).collect();
        let chunk = chunker.push(&input).pop().expect("one chunk");
        assert_eq!(chunk.samples[..6], [13_107, -13_107, 32_767, -32_768, 32_767, -32_768]);
        // Exact round trip of 16-bit input at gain 1.
        for x in [i16::MIN, -1, 0, 1, 12_345, i16::MAX] {
            assert_eq!(to_i16(from_i16(x), 1.0), x);
        }
    }

    #[test]
    fn a_profile_change_applies_from_the_next_chunk() {
        let (tx, rx) = watch::channel(profile(1000, 0, 1.0));
        let mut chunker = Chunker::new(rx, start());
        let first = chunker.push(&vec![0.25; 60_000]);
        assert_eq!(first.len(), 1);
        assert!(first[0].samples.iter().all(|s| *s == 8192));
        // 12 000 samples of the next chunk are already buffered when the profile changes.
        tx.send(profile(2000, 500, 2.0)).expect("send");
        let next = chunker.push(&vec![0.25; 250_000]);
        // Cut at 1 s (length 2 s), then every 1.5 s: 1, 2.5, 4 s (5.5 s + 2 s > 6.46 s stops).
        let starts: Vec<_> = next.iter().map(|c| c.recorded_at - start()).collect();
        assert_eq!(starts, [Duration::seconds(1), Duration::milliseconds(2500), Duration::seconds(4)]);
        assert!(next.iter().all(|c| c.samples.len() == 96_000 && c.samples.iter().all(|s| *s == 16_384)));
    }

    #[test]
    fn short_tails_and_absurd_profiles_are_handled() {
        let (_tx, rx) = watch::channel(profile(3000, 0, 1.0));
        let mut chunker = Chunker::new(rx, start());
        assert!(chunker.push(&ramp(144_000 + 47_999)).len() == 1);
        assert!(chunker.finish().is_none(), "under 1 s left: dropped");

        let (_tx, rx) = watch::channel(profile(0, 5000, 1.0));
        let mut chunker = Chunker::new(rx, start());
        let chunks = chunker.push(&ramp(48_000));
        assert!(chunks.iter().all(|c| c.samples.len() == MIN_CHUNK));
        assert!(chunks.len() > 10 && chunks.len() <= 100, "{}", chunks.len());
    }
}
