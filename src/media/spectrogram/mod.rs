//! Spectrogram pictures of audio chunks, for people to look at (and draw boxes on) on the dashboard.
//!
//! A chunk becomes a short-time Fourier transform with a Hann window of ~10.7 ms (512 samples at
//! 48 kHz, scaled with the sample rate) stepping by a quarter window (75% overlap), so the notes
//! of a fast trill stay apart. Power is shown in decibels from just above the chunk's noise floor
//! (its median level; at most [`DYNAMIC_RANGE_DB`] below the top) to its 99.9th percentile,
//! painted with a dark-to-bright colour map so the noise floor is black, and encoded as an 8-bit
//! RGB PNG. Pure: the only outputs are the returned values.
//!
//! # Pixel mapping
//!
//! Every picture comes with a [`Mapping`], computable without rendering ([`mapping`]):
//!
//! - column `c` (0 = left) covers the time `[c, c + 1) * seconds_per_pixel` from the chunk start,
//!   and its STFT frame is centred on the middle of that span;
//! - row `r` (0 = top) covers the frequencies `(max_hz - (r + 1) * hz_per_pixel, max_hz - r *
//!   hz_per_pixel]`, with `hz_per_pixel = (max_hz - min_hz) / height`.
//!
//! So a box from `t0` to `t1` seconds and `f0` to `f1` Hz has `x = t0 / seconds_per_pixel`,
//! `width = (t1 - t0) / seconds_per_pixel`, `y = (max_hz - f1) / hz_per_pixel` and `height =
//! (f1 - f0) / hz_per_pixel`. The HTTP route sends the mapping as `X-Spectrogram-*` headers.

mod paint;
mod stft;
#[cfg(test)]
mod tests;

/// The media type of what [`render_png`] returns.
pub const CONTENT_TYPE: &str = "image/png";

/// Image height in pixels, whatever the sample rate or frequency range.
pub const HEIGHT: u32 = 256;

/// The default top of the picture: birds sing below this, and higher rows would only squeeze
/// the interesting part.
pub const DEFAULT_MAX_HZ: f64 = 12_000.0;

/// The widest range shown below the picture's top level; anything quieter is drawn as the darkest
/// colour. Black usually starts higher, just above the noise floor (see `paint::to_levels`).
pub const DYNAMIC_RANGE_DB: f32 = 70.0;

/// The analysis window's length in seconds: 512 samples at 48 kHz. Short enough to separate the
/// notes of a trill (tens of ms apart), long enough for ~94 Hz frequency resolution.
const WINDOW_SECONDS: f64 = 512.0 / 48_000.0;

/// Long recordings get a coarser time step instead of an ever wider image.
const MAX_WIDTH: usize = 4_096;

/// Why a chunk could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum SpectrogramError {
    #[error("no samples to draw")]
    Empty,
    #[error("sample rate must be positive")]
    ZeroSampleRate,
    #[error("the frequency range must satisfy 0 <= min ({min_hz}) < max ({max_hz}) <= Nyquist ({nyquist_hz})")]
    InvalidRange { min_hz: f64, max_hz: f64, nyquist_hz: f64 },
    #[error("FFT failed: {0}")]
    Fft(#[from] realfft::FftError),
    #[error("PNG encoding failed: {0}")]
    Encode(#[from] png::EncodingError),
}

/// The band of frequencies drawn, bottom row to top row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrequencyRange {
    pub min_hz: f64,
    pub max_hz: f64,
}

impl FrequencyRange {
    /// 0 Hz to 12 kHz, or to Nyquist when that is lower.
    pub fn default_for(sample_rate: u32) -> Self {
        FrequencyRange { min_hz: 0.0, max_hz: DEFAULT_MAX_HZ.min(f64::from(sample_rate) / 2.0) }
    }

    /// A chosen band; `None` for either end keeps that end of [`Self::default_for`]. Refused
    /// unless `0 <= min < max <= Nyquist` (and both are finite).
    pub fn choose(min_hz: Option<f64>, max_hz: Option<f64>, sample_rate: u32) -> Result<Self, SpectrogramError> {
        let default = Self::default_for(sample_rate);
        let (min_hz, max_hz) = (min_hz.unwrap_or(default.min_hz), max_hz.unwrap_or(default.max_hz));
        let nyquist_hz = f64::from(sample_rate) / 2.0;
        if min_hz.is_finite() && max_hz.is_finite() && 0.0 <= min_hz && min_hz < max_hz && max_hz <= nyquist_hz {
            Ok(FrequencyRange { min_hz, max_hz })
        } else {
            Err(SpectrogramError::InvalidRange { min_hz, max_hz, nyquist_hz })
        }
    }
}

/// Where things are in a picture: see the module docs for the exact pixel convention.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Mapping {
    pub width: u32,
    pub height: u32,
    /// Time spanned by one column.
    pub seconds_per_pixel: f64,
    /// Frequency spanned by one row.
    pub hz_per_pixel: f64,
    /// The frequency at the bottom edge of the bottom row.
    pub min_hz: f64,
    /// The frequency at the top edge of the top row.
    pub max_hz: f64,
    /// Length of the drawn audio; `width * seconds_per_pixel` may exceed it by under a column.
    pub duration_seconds: f64,
}

impl Mapping {
    /// The (fractional) column position of `seconds` from the chunk start; its column is the floor.
    pub fn column_of(&self, seconds: f64) -> f64 {
        seconds / self.seconds_per_pixel
    }

    /// The (fractional) row position of `hz`, counted down from the top edge; its row is the floor.
    pub fn row_of(&self, hz: f64) -> f64 {
        (self.max_hz - hz) / self.hz_per_pixel
    }
}

/// Pixel size of the image [`render_png`] makes for a given input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dimensions {
    pub width: u32,
    pub height: u32,
}

/// The image size for `len` samples at `sample_rate`; the width is 0 when there is nothing to
/// draw (no samples or a zero rate), exactly when [`render_png`] refuses the input.
pub fn dimensions(len: usize, sample_rate: u32) -> Dimensions {
    let width = if len == 0 || sample_rate == 0 { 0 } else { Layout::new(len, sample_rate).width };
    Dimensions { width: u32::try_from(width).unwrap_or(u32::MAX), height: HEIGHT }
}

/// The mapping of the picture [`render`] would make, without making it.
pub fn mapping(len: usize, sample_rate: u32, range: FrequencyRange) -> Result<Mapping, SpectrogramError> {
    check_input(len, sample_rate)?;
    let range = FrequencyRange::choose(Some(range.min_hz), Some(range.max_hz), sample_rate)?;
    let layout = Layout::new(len, sample_rate);
    let rate = f64::from(sample_rate);
    Ok(Mapping {
        width: u32::try_from(layout.width).unwrap_or(u32::MAX),
        height: HEIGHT,
        seconds_per_pixel: layout.hop as f64 / rate,
        hz_per_pixel: (range.max_hz - range.min_hz) / f64::from(HEIGHT),
        min_hz: range.min_hz,
        max_hz: range.max_hz,
        duration_seconds: len as f64 / rate,
    })
}

/// Draws mono `samples` (nominally in -1..1) at `sample_rate` over `range` as a PNG, with its
/// pixel mapping. Non-finite samples are drawn as silence rather than poisoning the picture.
pub fn render(
    samples: &[f32],
    sample_rate: u32,
    range: FrequencyRange,
) -> Result<(Vec<u8>, Mapping), SpectrogramError> {
    let mapping = mapping(samples.len(), sample_rate, range)?;
    let layout = Layout::new(samples.len(), sample_rate);
    let decibels = stft::decibel_columns(samples, sample_rate, &layout, &mapping)?;
    let png = paint::encode(&paint::to_levels(&decibels), layout.width)?;
    Ok((png, mapping))
}

/// Draws mono `samples` at `sample_rate` over the default range ([`FrequencyRange::default_for`]).
pub fn render_png(samples: &[f32], sample_rate: u32) -> Result<Vec<u8>, SpectrogramError> {
    render(samples, sample_rate, FrequencyRange::default_for(sample_rate)).map(|(png, _)| png)
}

fn check_input(len: usize, sample_rate: u32) -> Result<(), SpectrogramError> {
    if sample_rate == 0 {
        return Err(SpectrogramError::ZeroSampleRate);
    }
    if len == 0 {
        return Err(SpectrogramError::Empty);
    }
    Ok(())
}

/// How the STFT is laid out for one input; shared so [`mapping`] cannot drift from the image.
struct Layout {
    /// Hann window length in samples.
    window: usize,
    /// FFT length: the window zero-padded to twice the next power of two, for smooth rows.
    fft_size: usize,
    /// Step between analysis frames: a quarter window (75% overlap).
    frame_hop: usize,
    /// Samples per image column: `frame_hop`, or more for inputs past [`MAX_WIDTH`] columns.
    hop: usize,
    width: usize,
}

impl Layout {
    fn new(len: usize, sample_rate: u32) -> Self {
        let window = ((f64::from(sample_rate) * WINDOW_SECONDS).round() as usize).max(4);
        let fft_size = window.next_power_of_two() * 2;
        let frame_hop = (window / 4).max(1);
        let hop = frame_hop.max(len.div_ceil(MAX_WIDTH));
        Layout { window, fft_size, frame_hop, hop, width: len.div_ceil(hop).max(1) }
    }
}
