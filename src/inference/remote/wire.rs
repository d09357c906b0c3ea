//! The messages between the hub and its remote workers, and their bounds. Jobs and results are
//! binary (a 4-byte magic, a little-endian `u32` header length, a small JSON header, then the
//! samples or scores); joins, answers and give-backs are JSON. Both sides treat what they read as
//! hostile: the header is at most [`MAX_HEADER`] bytes, a job at most [`MAX_WINDOWS`] windows, and
//! the body must be exactly as long as the header says before anything is allocated for it.

use serde::{Deserialize, Serialize};

use crate::inference::audio::WINDOW;

const JOB_MAGIC: &[u8; 4] = b"BHJ1";
const RESULT_MAGIC: &[u8; 4] = b"BHR1";
/// The largest JSON header either side reads.
pub const MAX_HEADER: usize = 4096;
/// The most windows one job message carries (a batch of 8 chunks with their second looks).
pub const MAX_WINDOWS: usize = 64;
/// The most classes a result may have (BirdNET 2.4 has 6,522).
pub const MAX_CLASSES: usize = 20_000;

/// Why a message was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct WireError(pub String);

fn bad(msg: impl Into<String>) -> WireError {
    WireError(msg.into())
}

/// How a job's samples travel: 16-bit when that loses nothing (audio that came as 16-bit PCM at
/// 48 kHz, the usual case), else 32-bit floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SampleFormat {
    I16,
    F32,
}

impl SampleFormat {
    fn bytes(self) -> usize {
        match self {
            SampleFormat::I16 => 2,
            SampleFormat::F32 => 4,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct JobHeader {
    token: String,
    windows: usize,
    format: SampleFormat,
}

/// A job as a worker reads it: the lease token to answer with, and its 3 s windows at 48 kHz.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub token: String,
    pub windows: Vec<Vec<f32>>,
}

/// Encodes a job; every window must be exactly [`WINDOW`] samples.
pub fn encode_job(token: &str, windows: &[&[f32]]) -> Result<Vec<u8>, WireError> {
    if windows.is_empty() || windows.len() > MAX_WINDOWS {
        return Err(bad(format!("a job holds 1 to {MAX_WINDOWS} windows, not {}", windows.len())));
    }
    if windows.iter().any(|w| w.len() != WINDOW) {
        return Err(bad(format!("every window must have {WINDOW} samples")));
    }
    // Packed as 16-bit in one pass that also checks each sample is exact (a separate check
    // first read every sample twice: a quarter of a coordinator's offer work); floats only when
    // one is not, which is rare.
    let mut out = with_header(token, windows.len(), SampleFormat::I16)?;
    let at = out.len();
    out.resize(at + windows.len() * WINDOW * 2, 0);
    let exact = out[at..].chunks_exact_mut(WINDOW * 2).zip(windows).fold(true, |exact, (b, w)| pack_i16(w, b) & exact);
    if exact {
        return Ok(out);
    }
    let mut out = with_header(token, windows.len(), SampleFormat::F32)?;
    for w in windows {
        let at = out.len();
        out.resize(at + w.len() * 4, 0);
        out[at..].chunks_exact_mut(4).zip(w.iter()).for_each(|(b, s)| b.copy_from_slice(&s.to_le_bytes()));
    }
    Ok(out)
}

/// A job message's magic and header, with room for its samples.
fn with_header(token: &str, windows: usize, format: SampleFormat) -> Result<Vec<u8>, WireError> {
    let header =
        serde_json::to_vec(&JobHeader { token: token.into(), windows, format }).map_err(|e| bad(e.to_string()))?;
    let mut out = Vec::with_capacity(8 + header.len() + windows * WINDOW * format.bytes());
    start(&mut out, JOB_MAGIC, &header);
    Ok(out)
}

/// Writes `w` as 16-bit PCM into `out` and says whether that was exact: every sample a value
/// `k / 32768` that a 16-bit WAV gives (as the WAV reader makes it). Branch-free with no
/// float-to-int conversion, so it vectorises: adding 1.5 x 2^23 rounds `k` to an integer that
/// the float's low mantissa bits hold (for |k| < 2^22; the range check refuses anything wider),
/// and the sum minus that constant equals `k` only when `k` was an integer. NaN fails every
/// comparison. (A saturating `as i32` stayed scalar: 3x slower, a quarter of the offer work.)
fn pack_i16(w: &[f32], out: &mut [u8]) -> bool {
    const ROUNDER: f32 = 12_582_912.0;
    let mut inexact = 0u32;
    for (b, s) in out.chunks_exact_mut(2).zip(w) {
        let k = s * 32768.0;
        let y = k + ROUNDER;
        let exact = (y - ROUNDER == k) & (-32768.0..=32767.0).contains(&k);
        inexact |= u32::from(!exact);
        let value = y.to_bits().wrapping_sub(ROUNDER.to_bits()) as u16;
        b.copy_from_slice(&value.to_le_bytes());
    }
    inexact == 0
}

pub fn decode_job(bytes: &[u8]) -> Result<Job, WireError> {
    let (header, body) = split(bytes, JOB_MAGIC)?;
    let h: JobHeader = serde_json::from_slice(header).map_err(|e| bad(format!("job header: {e}")))?;
    check_token(&h.token)?;
    if h.windows == 0 || h.windows > MAX_WINDOWS {
        return Err(bad(format!("a job holds 1 to {MAX_WINDOWS} windows, not {}", h.windows)));
    }
    let per = WINDOW * h.format.bytes();
    if body.len() != h.windows * per {
        return Err(bad(format!(
            "the job's body is {} bytes, {} windows need {}",
            body.len(),
            h.windows,
            h.windows * per
        )));
    }
    let windows = body
        .chunks_exact(per)
        .map(|w| match h.format {
            SampleFormat::I16 => {
                w.chunks_exact(2).map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0).collect()
            }
            SampleFormat::F32 => w.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(),
        })
        .collect::<Vec<Vec<f32>>>();
    if windows.iter().flatten().any(|s| !s.is_finite()) {
        return Err(bad("the job's samples are not finite numbers"));
    }
    Ok(Job { token: h.token, windows })
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ResultHeader {
    token: String,
    windows: usize,
    classes: usize,
    /// What the worker spent on the job (front end and network), in milliseconds.
    ms: f64,
    /// Set when the worker could not classify the job: the hub retries it elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// A worker's answer to one job.
#[derive(Debug, Clone, PartialEq)]
pub struct JobResult {
    pub token: String,
    /// One score vector (logits) per window, in the job's order.
    pub logits: Vec<Vec<f32>>,
    pub ms: f64,
    pub error: Option<String>,
}

pub fn encode_result(token: &str, logits: &[Vec<f32>], ms: f64) -> Vec<u8> {
    let classes = logits.first().map_or(0, Vec::len);
    let header = ResultHeader { token: token.into(), windows: logits.len(), classes, ms, error: None };
    let header = serde_json::to_vec(&header).unwrap_or_default();
    let mut out = Vec::with_capacity(8 + header.len() + logits.len() * classes * 4);
    start(&mut out, RESULT_MAGIC, &header);
    for l in logits {
        l.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    }
    out
}

/// A worker's answer that it could not do the job (its model failed), with why.
pub fn encode_failure(token: &str, error: &str) -> Vec<u8> {
    let error: String = error.chars().take(500).collect();
    let header = ResultHeader { token: token.into(), windows: 0, classes: 0, ms: 0.0, error: Some(error) };
    let header = serde_json::to_vec(&header).unwrap_or_default();
    let mut out = Vec::with_capacity(8 + header.len());
    start(&mut out, RESULT_MAGIC, &header);
    out
}

/// Reads a result; `classes` is the hub's label count, which every score vector must have.
pub fn decode_result(bytes: &[u8], classes: usize) -> Result<JobResult, WireError> {
    let (header, body) = split(bytes, RESULT_MAGIC)?;
    let h: ResultHeader = serde_json::from_slice(header).map_err(|e| bad(format!("result header: {e}")))?;
    check_token(&h.token)?;
    if let Some(error) = h.error {
        let error: String = error.chars().take(500).collect();
        return Ok(JobResult { token: h.token, logits: Vec::new(), ms: 0.0, error: Some(error) });
    }
    if h.windows == 0 || h.windows > MAX_WINDOWS || h.classes != classes || classes > MAX_CLASSES {
        return Err(bad(format!("a result of {} windows x {} classes (the hub has {classes})", h.windows, h.classes)));
    }
    if body.len() != h.windows * classes * 4 {
        return Err(bad(format!("the result's body is {} bytes, expected {}", body.len(), h.windows * classes * 4)));
    }
    let logits: Vec<Vec<f32>> = body
        .chunks_exact(classes * 4)
        .map(|w| w.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
        .collect();
    if logits.iter().flatten().any(|v| !v.is_finite()) {
        return Err(bad("the result's scores are not finite numbers"));
    }
    let ms = if h.ms.is_finite() { h.ms.clamp(0.0, 3.6e6) } else { 0.0 };
    Ok(JobResult { token: h.token, logits, ms, error: None })
}

fn start(out: &mut Vec<u8>, magic: &[u8; 4], header: &[u8]) {
    out.extend_from_slice(magic);
    out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    out.extend_from_slice(header);
}

fn split<'a>(bytes: &'a [u8], magic: &[u8; 4]) -> Result<(&'a [u8], &'a [u8]), WireError> {
    if bytes.len() < 8 || &bytes[..4] != magic {
        return Err(bad("not a birdhub work message"));
    }
    let len = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
    if len > MAX_HEADER || bytes.len() < 8 + len {
        return Err(bad(format!("a header of {len} bytes (at most {MAX_HEADER}, within the message)")));
    }
    Ok((&bytes[8..8 + len], &bytes[8 + len..]))
}

/// Lease tokens are 32 lowercase hex characters.
fn check_token(token: &str) -> Result<(), WireError> {
    if token.len() == 32 && token.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        Ok(())
    } else {
        Err(bad("a lease token is 32 hex characters"))
    }
}

/// What a worker says when it joins: who it is and what it runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    /// The machine's name (its hostname unless given).
    pub machine: String,
    /// The model's id (`birdnet-v2.4`).
    pub model: String,
    /// SHA-256 of the English labels file: the label set, in order.
    pub labels: String,
    /// `fp32`, `fp16` or `int8`: the copy of the network it loaded.
    pub precision: String,
    pub threads: usize,
    pub batch: usize,
    /// The worker's birdhub version.
    pub version: String,
}

impl Hello {
    /// The longest text field the hub keeps.
    pub const MAX_FIELD: usize = 128;

    /// Reads a join, refusing anything oversized.
    pub fn parse(bytes: &[u8]) -> Result<Hello, WireError> {
        if bytes.len() > MAX_HEADER {
            return Err(bad(format!("a join is at most {MAX_HEADER} bytes")));
        }
        let h: Hello = serde_json::from_slice(bytes).map_err(|e| bad(format!("join: {e}")))?;
        let long =
            [&h.machine, &h.model, &h.labels, &h.precision, &h.version].iter().any(|f| f.len() > Self::MAX_FIELD);
        if long || h.threads > 4096 || h.batch == 0 || h.batch > MAX_WINDOWS {
            return Err(bad("a join with out-of-range fields"));
        }
        Ok(h)
    }
}

/// The hub's answer to a join.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    pub accepted: bool,
    /// Why it was refused (names both sides' model or labels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The shared subscription to join for jobs.
    #[serde(default)]
    pub jobs: String,
    /// Refused for now only (the hub has no model yet): join again later.
    #[serde(default)]
    pub retry: bool,
}

/// A worker's sign of life on its `status` topic. `ready` says its subscription to the jobs is
/// in place (the broker acknowledged it): the hub offers nothing to a worker before that, since
/// an offer the broker routes to a group its member has not joined yet reaches nobody.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Chunk jobs answered since it started.
    #[serde(default)]
    pub jobs: u64,
    #[serde(default)]
    pub ready: bool,
}

/// A job the worker gives back unprocessed (it is stopping).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Release {
    pub token: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(f: impl Fn(usize) -> f32) -> Vec<f32> {
        (0..WINDOW).map(f).collect()
    }

    #[test]
    fn sixteen_bit_audio_travels_in_half_the_bytes_and_comes_back_exactly() {
        let pcm = window(|i| ((i % 200) as f32 - 100.0) / 32768.0);
        let token = "0123456789abcdef0123456789abcdef";
        let bytes = encode_job(token, &[&pcm]).expect("encode");
        assert!(bytes.len() < WINDOW * 2 + 200, "{} bytes", bytes.len());
        assert_eq!(decode_job(&bytes).expect("decode"), Job { token: token.into(), windows: vec![pcm.clone()] });
        let resampled = window(|i| (i as f32 * 0.001).sin() * 0.3);
        let bytes = encode_job(token, &[&resampled]).expect("encode");
        assert!(bytes.len() > WINDOW * 4);
        assert_eq!(decode_job(&bytes).expect("decode").windows[0], resampled, "floats travel as they are");
        // One sample that no 16-bit value gives (half a step, or full scale +1.0) keeps the floats.
        for odd in [0.5 / 32768.0, 1.0, -1.0 - 1.0 / 32768.0, -200.0, 1e9] {
            let mut w = pcm.clone();
            w[WINDOW / 2] = odd;
            // In the last window of three: the two 16-bit ones before it travel as floats too.
            let bytes = encode_job(token, &[&pcm, &pcm, &w]).expect("encode");
            assert!(bytes.len() > 3 * WINDOW * 4, "{odd} is no 16-bit sample");
            assert_eq!(decode_job(&bytes).expect("decode").windows, vec![pcm.clone(), pcm.clone(), w]);
        }
        let mut nan = pcm.clone();
        nan[7] = f32::NAN;
        let bytes = encode_job(token, &[&nan]).expect("encode");
        assert!(bytes.len() > WINDOW * 4, "NaN is no 16-bit sample (and is not sent as silence)");
        let mut edges = pcm.clone();
        (edges[0], edges[1]) = (-1.0, 32767.0 / 32768.0);
        assert!(encode_job(token, &[&edges]).expect("encode").len() < WINDOW * 2 + 200, "the 16-bit extremes");
    }

    #[test]
    fn hostile_jobs_and_results_are_refused_before_anything_is_allocated_for_them() {
        let token = "0123456789abcdef0123456789abcdef";
        let good = encode_job(token, &[&vec![0.0; WINDOW]]).expect("encode");
        let mut huge_header = good.clone();
        huge_header[4..8].copy_from_slice(&(u32::MAX).to_le_bytes());
        let mut many = Vec::new();
        start(
            &mut many,
            JOB_MAGIC,
            br#"{"token":"0123456789abcdef0123456789abcdef","windows":1000000,"format":"f32"}"#,
        );
        let mut short = good.clone();
        short.truncate(good.len() - 2);
        let mut bad_token = Vec::new();
        start(&mut bad_token, JOB_MAGIC, br#"{"token":"../../x","windows":1,"format":"i16"}"#);
        bad_token.extend(vec![0; WINDOW * 2]);
        for (what, bytes) in [
            ("empty", Vec::new()),
            ("other magic", b"BHR1\0\0\0\0".to_vec()),
            ("header past the end", huge_header),
            ("a million windows", many),
            ("truncated body", short),
            ("a token with a path in it", bad_token),
        ] {
            assert!(decode_job(&bytes).is_err(), "{what} was read");
        }
        let ok = encode_result(token, &[vec![0.5; 10]], 3.0);
        assert_eq!(decode_result(&ok, 10).expect("read").logits, vec![vec![0.5; 10]]);
        assert!(decode_result(&ok, 11).is_err(), "a result of another label set is refused");
        let nan = encode_result(token, &[vec![f32::NAN; 10]], 3.0);
        assert!(decode_result(&nan, 10).is_err(), "NaN scores are refused");
        let failed = decode_result(&encode_failure(token, "model broke"), 10).expect("read");
        assert_eq!(failed.error.as_deref(), Some("model broke"));
        assert!(Hello::parse(&vec![b' '; MAX_HEADER + 1]).is_err());
    }
}
