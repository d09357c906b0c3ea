//! Pictures made from audio for people to look at.
//!
//! - [`spectrogram`]: a chunk's STFT rendered as a PNG with a perceptual colour map.

pub mod spectrogram;
