//! Any supported audio file to mono f32 at its own sample rate: WAV through hound (as before),
//! FLAC, MP3 and Ogg Vorbis (and the WAV variants hound refuses) through symphonia, pure Rust.
//!
//! [`AudioStream`] decodes block by block, so a long file never has to fit in memory (the
//! satellite's `dir:` source reads hour-long recordings on a Pi); [`decode_bytes`] and
//! [`decode_file`] collect a whole (length-capped) file for `birdhub classify`. A decoder that
//! panics on a hostile file is caught and reported as [`AudioError::Undecodable`].

use std::{
    fs::File,
    io::Cursor,
    panic::{AssertUnwindSafe, catch_unwind},
    path::Path,
};

use symphonia::core::{
    codecs::audio::{AudioDecoder, AudioDecoderOptions},
    errors::Error as SymphoniaError,
    formats::{FormatOptions, FormatReader, TrackType, probe::Hint},
    io::{MediaSource, MediaSourceStream, ReadOnlySource},
    meta::MetadataOptions,
};

use super::{Audio, AudioError, decode_wav};

/// File name extensions (lower case) of the formats this module decodes.
pub const EXTENSIONS: &[&str] = &["wav", "flac", "mp3", "ogg", "oga"];

/// Consecutive undecodable packets after which a file is given up as corrupt.
const MAX_BAD_PACKETS: usize = 50;

/// Whether `path` has one of the [`EXTENSIONS`] (case-insensitive).
pub fn has_audio_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.iter().any(|known| known.eq_ignore_ascii_case(e)))
}

/// A file being decoded packet by packet into mono f32 blocks at [`AudioStream::sample_rate`].
pub struct AudioStream {
    reader: Box<dyn FormatReader>,
    decoder: Box<dyn AudioDecoder>,
    track: u32,
    rate: u32,
    frames: Option<u64>,
    interleaved: Vec<f32>,
}

impl std::fmt::Debug for AudioStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AudioStream").field("rate", &self.rate).field("frames", &self.frames).finish()
    }
}

impl AudioStream {
    /// Opens a file; its extension is a hint, the content decides.
    pub fn open_file(path: &Path) -> Result<Self, AudioError> {
        let file = File::open(path).map_err(|e| AudioError::Undecodable(e.to_string()))?;
        Self::open(Box::new(file), path.extension().and_then(|e| e.to_str()))
    }

    /// Opens the first `max_bytes` of an open file, read front to back: a longer file is never
    /// read past them, and where they end the audio ends. `extension` is an optional hint.
    pub fn open_prefix(file: File, extension: Option<&str>, max_bytes: u64) -> Result<Self, AudioError> {
        Self::open(Box::new(ReadOnlySource::new(std::io::Read::take(file, max_bytes))), extension)
    }

    /// Opens a file held in memory; `extension` is an optional hint.
    pub fn open_bytes(bytes: Vec<u8>, extension: Option<&str>) -> Result<Self, AudioError> {
        Self::open(Box::new(Cursor::new(bytes)), extension)
    }

    fn open(source: Box<dyn MediaSource>, extension: Option<&str>) -> Result<Self, AudioError> {
        guarded(move || {
            let mut hint = Hint::new();
            if let Some(ext) = extension {
                hint.with_extension(ext);
            }
            let stream = MediaSourceStream::new(source, Default::default());
            let reader = symphonia::default::get_probe()
                .probe(&hint, stream, FormatOptions::default(), MetadataOptions::default())
                .map_err(|e| AudioError::Undecodable(e.to_string()))?;
            let track = reader
                .default_track(TrackType::Audio)
                .ok_or_else(|| AudioError::Undecodable("no audio track".into()))?;
            let params = track
                .codec_params
                .as_ref()
                .and_then(|p| p.audio())
                .ok_or_else(|| AudioError::Undecodable("no audio codec parameters".into()))?;
            let rate = params.sample_rate.ok_or_else(|| AudioError::Undecodable("no sample rate".into()))?;
            if !(1_000..=384_000).contains(&rate) {
                return Err(AudioError::Unsupported(format!("sample rate {rate} Hz")));
            }
            let decoder = symphonia::default::get_codecs()
                .make_audio_decoder(params, &AudioDecoderOptions::default())
                .map_err(|e| AudioError::Unsupported(e.to_string()))?;
            let (id, frames) = (track.id, track.num_frames);
            Ok(Self { reader, decoder, track: id, rate, frames, interleaved: Vec::new() })
        })
    }

    /// The file's own sample rate.
    pub fn sample_rate(&self) -> u32 {
        self.rate
    }

    /// Length in frames when the container says (WAV, FLAC; often not MP3).
    pub fn frames_hint(&self) -> Option<u64> {
        self.frames
    }

    /// The next block of mono samples, `None` at the end of the file.
    pub fn next_block(&mut self) -> Result<Option<Vec<f32>>, AudioError> {
        guarded(|| self.next_block_unguarded())
    }

    fn next_block_unguarded(&mut self) -> Result<Option<Vec<f32>>, AudioError> {
        let mut bad_packets = 0;
        loop {
            let packet = match self.reader.next_packet() {
                Ok(Some(packet)) => packet,
                // End of file; a chained Ogg stream's next part is not followed.
                Ok(None) | Err(SymphoniaError::ResetRequired) => return Ok(None),
                Err(SymphoniaError::IoError(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
                Err(e) => return Err(AudioError::Undecodable(e.to_string())),
            };
            if packet.track_id != self.track {
                continue;
            }
            let decoded = match self.decoder.decode(&packet) {
                Ok(decoded) => decoded,
                Err(SymphoniaError::DecodeError(e)) => {
                    bad_packets += 1;
                    if bad_packets > MAX_BAD_PACKETS {
                        return Err(AudioError::Undecodable(format!("corrupt audio data: {e}")));
                    }
                    continue;
                }
                Err(e) => return Err(AudioError::Undecodable(e.to_string())),
            };
            let channels = decoded.spec().channels().count();
            if channels == 0 {
                return Err(AudioError::Undecodable("zero channels".into()));
            }
            decoded.copy_to_vec_interleaved(&mut self.interleaved);
            if self.interleaved.is_empty() {
                continue;
            }
            let mono: Vec<f32> =
                self.interleaved.chunks(channels).map(|frame| frame.iter().sum::<f32>() / frame.len() as f32).collect();
            if mono.iter().any(|s| !s.is_finite()) {
                return Err(AudioError::Undecodable("samples are not finite numbers".into()));
            }
            return Ok(Some(mono));
        }
    }
}

/// Runs decoder code, turning a panic inside symphonia into an error.
fn guarded<T>(f: impl FnOnce() -> Result<T, AudioError>) -> Result<T, AudioError> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(AudioError::Undecodable("the decoder failed on this file".into())))
}

/// Whether `bytes` start like a RIFF/WAVE file.
fn looks_like_wav(bytes: &[u8]) -> bool {
    bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WAVE"
}

/// Decodes a whole file held in memory. WAV files go through [`decode_wav`] (its formats and
/// messages), unless hound cannot read their sample format (e.g. 64-bit float, A-law) and
/// symphonia can; everything else through symphonia. `extension` is an optional hint.
pub fn decode_bytes(bytes: Vec<u8>, extension: Option<&str>, max_seconds: f64) -> Result<Audio, AudioError> {
    if looks_like_wav(&bytes) {
        return match decode_wav(&bytes, max_seconds) {
            Err(AudioError::Unsupported(why)) => collect(
                AudioStream::open_bytes(bytes, extension).map_err(|_| AudioError::Unsupported(why))?,
                max_seconds,
            ),
            other => other,
        };
    }
    collect(AudioStream::open_bytes(bytes, extension)?, max_seconds)
}

/// Decodes a whole file from disk (see [`decode_bytes`]).
pub fn decode_file(path: &Path, max_seconds: f64) -> Result<Audio, AudioError> {
    let bytes = std::fs::read(path).map_err(|e| AudioError::Undecodable(e.to_string()))?;
    decode_bytes(bytes, path.extension().and_then(|e| e.to_str()), max_seconds)
}

/// The first `max_seconds` of a stream, at most `max_samples` samples: the rest is never decoded
/// (a picture of the start of a long recording, where [`decode_bytes`] would refuse it).
pub fn decode_first(mut stream: AudioStream, max_seconds: f64, max_samples: usize) -> Result<Audio, AudioError> {
    let limit = ((max_seconds * f64::from(stream.sample_rate())) as usize).min(max_samples);
    let mut samples = Vec::new();
    while samples.len() < limit {
        let Some(block) = stream.next_block()? else { break };
        let room = limit - samples.len();
        samples.extend_from_slice(&block[..block.len().min(room)]);
    }
    if samples.is_empty() {
        return Err(AudioError::Empty);
    }
    Ok(Audio { samples, sample_rate: stream.sample_rate() })
}

fn collect(mut stream: AudioStream, max_seconds: f64) -> Result<Audio, AudioError> {
    let rate = f64::from(stream.sample_rate());
    let too_long = |frames: u64| {
        let seconds = frames as f64 / rate;
        (seconds > max_seconds).then_some(AudioError::TooLong { seconds, max: max_seconds })
    };
    if let Some(err) = stream.frames_hint().and_then(too_long) {
        return Err(err);
    }
    let mut samples = Vec::new();
    while let Some(block) = stream.next_block()? {
        samples.extend_from_slice(&block);
        if let Some(err) = too_long(samples.len() as u64) {
            return Err(err);
        }
    }
    if samples.is_empty() {
        return Err(AudioError::Empty);
    }
    Ok(Audio { samples, sample_rate: stream.sample_rate() })
}
