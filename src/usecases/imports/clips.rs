//! Imported clips: read from the old station, probed (duration and rate come from the file, never
//! assumed), copied into the object store under `imports/{team}/{satellite}/{UTC day}/{chunk}.{ext}`.
//! Only a file that starts like audio and is no larger than a clip can be
//! ([`MAX_CLIP_BYTES`]) is copied, streamed from disk; anything else is not audio and stays
//! behind (the row comes without audio). A clip that starts like audio but cannot be decoded is
//! kept (it still plays as bytes) and marked.

use std::{
    io::Read as _,
    path::{Path, PathBuf},
};

use sha2::{Digest, Sha256};

use crate::{
    ids::{ChunkId, SatelliteId, TenantId},
    inference::audio::decode::AudioStream,
    objects::{ObjectError, ObjectStore},
    time::Timestamp,
};

/// Longest clip decoded to measure it; longer files are kept as undecodable.
const MAX_SECONDS: f64 = 600.0;
/// The largest file taken as a clip (a clip is seconds of audio; a 10-minute 48 kHz stereo WAV
/// is 110 MB, a station's 15 s clips are well under 3 MB).
pub const MAX_CLIP_BYTES: u64 = 32 * 1024 * 1024;

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

/// Decodes the file from disk block by block, keeping only the count of frames: memory stays a
/// block whatever the file's size. `None` when it does not decode or is longer than
/// [`MAX_SECONDS`].
pub fn measure(path: &Path) -> Option<Measured> {
    let mut stream = AudioStream::open_file(path).ok()?;
    let rate = stream.sample_rate();
    let max_frames = (MAX_SECONDS * f64::from(rate)) as u64;
    if stream.frames_hint().is_some_and(|f| f > max_frames) {
        return None;
    }
    let mut frames: u64 = 0;
    while let Some(block) = stream.next_block().ok()? {
        frames += block.len() as u64;
        if frames > max_frames {
            return None;
        }
    }
    (frames > 0).then(|| Measured {
        duration_ms: (frames as f64 * 1000.0 / f64::from(rate)).round() as i64,
        sample_rate: i64::from(rate),
    })
}

/// Whether `head` (a file's first bytes) starts like an audio container a station writes:
/// MP3 (an ID3 tag or an MPEG audio frame sync, which AAC's ADTS shares), RIFF/WAVE (and
/// RF64), FLAC, Ogg (Vorbis, Opus), MP4/M4A (BirdNET-Go's AAC) or AIFF (a sox format).
pub fn looks_like_audio(head: &[u8]) -> bool {
    let at = |i: usize, magic: &[u8]| head.get(i..i + magic.len()) == Some(magic);
    at(0, b"ID3")
        || (head.len() >= 2 && head[0] == 0xFF && head[1] & 0xE0 == 0xE0)
        || ((at(0, b"RIFF") || at(0, b"RF64")) && at(8, b"WAVE"))
        || at(0, b"fLaC")
        || at(0, b"OggS")
        || at(4, b"ftyp")
        || (at(0, b"FORM") && (at(8, b"AIFF") || at(8, b"AIFC")))
}

/// Why a file a row names is not copied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAClip {
    #[error("not audio (not copied)")]
    NotAudio,
    #[error("{0} bytes, larger than a clip can be ({MAX_CLIP_BYTES} bytes): not copied")]
    TooLarge(u64),
}

/// A clip checked and measured, ready to be copied from `path`.
#[derive(Debug, Clone)]
pub struct Clip {
    pub path: PathBuf,
    pub ext: String,
    pub measured: Option<Measured>,
}

/// Checks the file at `path` (a regular file of at most [`MAX_CLIP_BYTES`] that starts like
/// audio) and measures it from disk. Nothing is held in memory but its first bytes.
pub fn read(path: &Path) -> std::io::Result<Result<Clip, NotAClip>> {
    let mut file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Ok(Err(NotAClip::NotAudio));
    }
    if meta.len() > MAX_CLIP_BYTES {
        return Ok(Err(NotAClip::TooLarge(meta.len())));
    }
    let mut head = Vec::with_capacity(16);
    (&mut file).take(16).read_to_end(&mut head)?;
    if !looks_like_audio(&head) {
        return Ok(Err(NotAClip::NotAudio));
    }
    drop(file);
    let ext = extension(path);
    let measured = measure(path);
    Ok(Ok(Clip { path: path.to_path_buf(), ext, measured }))
}

/// Copies the clip's file under `key` in pieces (atomically, so a rerun overwrites it whole);
/// a file that grew past [`MAX_CLIP_BYTES`] since it was checked is not copied.
pub fn store(objects: &ObjectStore, key: &str, clip: &Clip) -> Result<u64, ObjectError> {
    let file = std::fs::File::open(&clip.path)?;
    let staged = objects.stage_copy(file, MAX_CLIP_BYTES)?.ok_or_else(|| {
        ObjectError::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, "the clip grew while it was copied"))
    })?;
    staged.commit(key)
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
        let dir = tempfile::tempdir().expect("dir");
        let text = dir.path().join("a.mp3");
        std::fs::write(&text, b"this is not audio at all, only text".repeat(100)).expect("w");
        assert_eq!(read(&text).expect("read").err(), Some(NotAClip::NotAudio));
        let wav = dir.path().join("b.wav");
        std::fs::write(&wav, crate::inference::audio::encode_wav_i16(&vec![0.1; 48_000], 48_000)).expect("w");
        let clip = read(&wav).expect("read").expect("a clip");
        assert_eq!(clip.measured, Some(Measured { duration_ms: 1000, sample_rate: 48_000 }));
        // Audio magic, then garbage: kept, undecodable.
        let bad = dir.path().join("c.flac");
        std::fs::write(&bad, [b"fLaC".as_slice(), &[7u8; 500]].concat()).expect("w");
        assert_eq!(read(&bad).expect("read").expect("kept").measured, None);
        let big = dir.path().join("d.wav");
        std::fs::File::create(&big).expect("c").set_len(MAX_CLIP_BYTES + 1).expect("len");
        assert_eq!(read(&big).expect("read").err(), Some(NotAClip::TooLarge(MAX_CLIP_BYTES + 1)));
        assert_eq!(extension(Path::new("a/B-87-x.MP3")), "mp3");
    }

    #[test]
    fn audio_containers_are_recognised_by_their_first_bytes() {
        for yes in [&b"ID3\x04"[..], &[0xFF, 0xFB, 0x90], b"RIFF\0\0\0\0WAVE", b"fLaC", b"OggS", b"\0\0\0\x20ftypM4A "]
        {
            assert!(looks_like_audio(yes), "{yes:?}");
        }
        for no in [&b"[secrets]"[..], b"root:x:0:0", b"SQLite format 3\0", b"", b"\xFF"] {
            assert!(!looks_like_audio(no), "{no:?}");
        }
    }
}
