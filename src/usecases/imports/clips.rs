//! Imported clips: read from the old station, probed (duration and rate come from the file, never
//! assumed), copied into the object store under `imports/{team}/{satellite}/{UTC day}/{chunk}.{ext}`.
//! A clip that cannot be decoded is kept (it still plays as bytes) and marked.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::{
    ids::{ChunkId, SatelliteId, TenantId},
    inference::audio::decode::decode_bytes,
    objects::{ObjectError, ObjectStore},
    time::Timestamp,
};

/// Longest clip decoded to measure it; longer files are kept as undecodable.
const MAX_SECONDS: f64 = 600.0;

/// A chunk id that is the same on every run for the same text: a rerun after an interruption
/// writes the same object key again instead of leaving an orphan.
pub fn chunk_id(satellite: SatelliteId, what: &str) -> ChunkId {
    let mut h = Sha256::new();
    h.update(satellite.0.as_bytes());
    h.update(what.as_bytes());
    let digest = h.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    ChunkId(uuid::Builder::from_custom_bytes(bytes).into_uuid())
}

/// The file's extension as the object key keeps it (lower case, letters and digits only).
pub fn extension(path: &Path) -> String {
    let ext: String = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .flat_map(|c| c.to_lowercase())
        .take(8)
        .collect();
    if ext.is_empty() { "bin".into() } else { ext }
}

pub fn object_key(tenant: TenantId, satellite: SatelliteId, at: Timestamp, chunk: ChunkId, ext: &str) -> String {
    format!("imports/{tenant}/{satellite}/{}/{chunk}.{ext}", at.at().format("%Y-%m-%d"))
}

/// The key of the chunk of a row without audio (never written: the chunk says it has none).
pub fn no_audio_key(tenant: TenantId, satellite: SatelliteId, chunk: ChunkId) -> String {
    format!("imports/{tenant}/{satellite}/no-audio/{chunk}")
}

/// What a clip file holds: `None` when it cannot be decoded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub duration_ms: i64,
    pub sample_rate: i64,
}

pub fn measure(bytes: &[u8], ext: &str) -> Option<Measured> {
    let audio = decode_bytes(bytes.to_vec(), Some(ext), MAX_SECONDS).ok()?;
    if audio.samples.is_empty() {
        return None;
    }
    Some(Measured {
        duration_ms: (audio.duration_secs() * 1000.0).round() as i64,
        sample_rate: i64::from(audio.sample_rate),
    })
}

/// A clip read and measured, ready to be written.
#[derive(Debug, Clone)]
pub struct Clip {
    pub bytes: Vec<u8>,
    pub ext: String,
    pub measured: Option<Measured>,
}

pub fn read(path: &Path) -> std::io::Result<Clip> {
    let bytes = std::fs::read(path)?;
    let ext = extension(path);
    let measured = measure(&bytes, &ext);
    Ok(Clip { bytes, ext, measured })
}

/// Writes the clip under `key` (atomically, so a rerun overwrites it whole).
pub fn store(objects: &ObjectStore, key: &str, clip: &Clip) -> Result<u64, ObjectError> {
    objects.stage(&clip.bytes)?.commit(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_ids_are_stable_per_satellite_and_text() {
        let s = SatelliteId::new();
        assert_eq!(chunk_id(s, "a"), chunk_id(s, "a"));
        assert_ne!(chunk_id(s, "a"), chunk_id(s, "b"));
        assert_ne!(chunk_id(s, "a"), chunk_id(SatelliteId::new(), "a"));
    }

    #[test]
    fn garbage_is_not_audio() {
        assert_eq!(measure(b"this is not audio at all, only text".repeat(100).as_slice(), "mp3"), None);
        let wav = crate::inference::audio::encode_wav_i16(&vec![0.1; 48_000], 48_000);
        assert_eq!(measure(&wav, "wav"), Some(Measured { duration_ms: 1000, sample_rate: 48_000 }));
        assert_eq!(extension(Path::new("a/B-87-x.MP3")), "mp3");
    }
}
