//! Pictures made from audio for people to look at.
//!
//! - [`audio_source`]: the audio a picture is drawn from, read within bounds (the first minute,
//!   undecodable files remembered, one drawing per core at a time).
//! - [`spectrogram`]: a chunk's STFT (10.7 ms frames, 75% overlap) rendered as a PNG over a chosen
//!   frequency band with a dark-floored colour map, plus the pixel-to-time/frequency [`spectrogram::Mapping`].

pub mod audio_source;
pub mod spectrogram;
