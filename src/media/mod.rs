//! Pictures made from audio for people to look at.
//!
//! - [`spectrogram`]: a chunk's STFT (10.7 ms frames, 75% overlap) rendered as a PNG over a chosen
//!   frequency band with a dark-floored colour map, plus the pixel-to-time/frequency [`spectrogram::Mapping`].

pub mod spectrogram;
