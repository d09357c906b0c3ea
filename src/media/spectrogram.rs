//! Spectrogram pictures of audio chunks, for people to look at on the dashboard.
//!
//! A chunk becomes a short-time Fourier transform (Hann window, FFT of up to 1024 points), shown
//! in decibels over a fixed 80 dB range below the chunk's loudest point, from 0 Hz at the bottom
//! to 12 kHz (or Nyquist, if lower) at the top, painted with a dark-to-bright colour map and
//! encoded as an 8-bit RGB PNG. Pure: the only output is the returned bytes.

use realfft::RealFftPlanner;

/// The media type of what [`render_png`] returns.
pub const CONTENT_TYPE: &str = "image/png";

/// Image height in pixels, whatever the sample rate: one row per frequency step.
pub const HEIGHT: u32 = 256;

/// 1024 points resolve ~47 Hz at 48 kHz while keeping ~21 ms time resolution, a fair split for
/// bird song, which moves fast in both directions.
const MAX_FFT: usize = 1024;
/// Below this the spectrum has too few bins to be worth drawing; shorter input is zero-padded.
const MIN_FFT: usize = 16;
/// 200 columns per second gives the ~600 px a 3 s chunk should fill.
const COLUMNS_PER_SECOND: u32 = 200;
/// Long recordings get a coarser time step instead of an ever wider image.
const MAX_WIDTH: usize = 1200;
/// Birds sing below this; higher bins would only squeeze the interesting part of the image.
const TOP_FREQUENCY_HZ: f32 = 12_000.0;
/// A fixed range, rather than stretching min..max, keeps quiet chunks from looking loud.
const DYNAMIC_RANGE_DB: f32 = 80.0;
/// A chunk whose loudest point is below this is silence (or dither) and is drawn all dark.
const SILENCE_DBFS: f32 = -100.0;
/// Keeps `log10` finite for exact zeros; -120 dB is far below anything drawn.
const POWER_FLOOR: f32 = 1e-12;

/// Why a chunk could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum SpectrogramError {
    #[error("no samples to draw")]
    Empty,
    #[error("sample rate must be positive")]
    ZeroSampleRate,
    #[error("FFT failed: {0}")]
    Fft(#[from] realfft::FftError),
    #[error("PNG encoding failed: {0}")]
    Encode(#[from] png::EncodingError),
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

/// Draws mono `samples` (nominally in -1..1) at `sample_rate` as a PNG spectrogram.
///
/// Non-finite samples are drawn as silence rather than poisoning the whole picture.
pub fn render_png(samples: &[f32], sample_rate: u32) -> Result<Vec<u8>, SpectrogramError> {
    if sample_rate == 0 {
        return Err(SpectrogramError::ZeroSampleRate);
    }
    if samples.is_empty() {
        return Err(SpectrogramError::Empty);
    }
    let layout = Layout::new(samples.len(), sample_rate);
    let decibels = spectrum_rows(samples, sample_rate, &layout)?;
    let levels = to_levels(&decibels);
    encode(&levels, layout.width)
}

/// How the STFT is laid out for one input; shared so [`dimensions`] cannot drift from the image.
struct Layout {
    fft_size: usize,
    /// Samples per image column.
    hop: usize,
    width: usize,
}

impl Layout {
    fn new(len: usize, sample_rate: u32) -> Self {
        let fft_size = if len >= MAX_FFT { MAX_FFT } else { (1usize << len.checked_ilog2().unwrap_or(0)).max(MIN_FFT) };
        let per_second = (sample_rate / COLUMNS_PER_SECOND).max(1) as usize;
        let hop = per_second.max(len.div_ceil(MAX_WIDTH));
        Layout { fft_size, hop, width: len.div_ceil(hop) }
    }
}

/// Highest frequency drawn, at the top row.
fn top_frequency(sample_rate: u32) -> f32 {
    (sample_rate as f32 / 2.0).min(TOP_FREQUENCY_HZ)
}

/// Power in dB for every (column, row), column-major with row 0 at 0 Hz.
fn spectrum_rows(samples: &[f32], sample_rate: u32, layout: &Layout) -> Result<Vec<f32>, SpectrogramError> {
    let n = layout.fft_size;
    let fft = RealFftPlanner::<f32>::new().plan_fft_forward(n);
    let window: Vec<f32> =
        (0..n).map(|i| 0.5 - 0.5 * (2.0 * std::f32::consts::PI * i as f32 / n as f32).cos()).collect();
    // Scaling by 2/sum(w) puts a full-scale sine at 0 dBFS, so the silence threshold means
    // the same thing for every FFT size.
    let amplitude_scale = 2.0 / window.iter().sum::<f32>();
    let power_scale = amplitude_scale * amplitude_scale;

    let (mut frame, mut spectrum, mut scratch) = (fft.make_input_vec(), fft.make_output_vec(), fft.make_scratch_vec());
    let mut power = vec![0.0f32; spectrum.len()];
    let mut bins_db = vec![0.0f32; spectrum.len()];

    // When a column spans more than half a window (long input), several windows share it and
    // the loudest wins, so a short call between two column centres still shows up.
    let per_column = layout.hop.div_ceil(n / 2).max(1);
    let bin_hz = sample_rate as f32 / n as f32;
    let top = top_frequency(sample_rate);
    let row_bins: Vec<f32> = (0..HEIGHT).map(|row| top * row as f32 / (HEIGHT - 1) as f32 / bin_hz).collect();

    let mut out = Vec::with_capacity(layout.width * HEIGHT as usize);
    for column in 0..layout.width {
        power.fill(0.0);
        for part in 0..per_column {
            let centre = column * layout.hop + (2 * part + 1) * layout.hop / (2 * per_column);
            fill_frame(&mut frame, samples, centre, &window);
            fft.process_with_scratch(&mut frame, &mut spectrum, &mut scratch)?;
            for (p, c) in power.iter_mut().zip(&spectrum) {
                *p = p.max(c.norm_sqr() * power_scale);
            }
        }
        for (db, p) in bins_db.iter_mut().zip(&power) {
            *db = 10.0 * (p + POWER_FLOOR).log10();
        }
        out.extend(row_bins.iter().map(|&position| interpolate(&bins_db, position)));
    }
    Ok(out)
}

/// Copies the windowed samples centred on `centre` into `frame`, with zeros past either end.
fn fill_frame(frame: &mut [f32], samples: &[f32], centre: usize, window: &[f32]) {
    let start = centre as isize - (frame.len() / 2) as isize;
    for (i, (slot, w)) in frame.iter_mut().zip(window).enumerate() {
        let sample = usize::try_from(start + i as isize).ok().and_then(|j| samples.get(j)).copied().unwrap_or(0.0);
        *slot = if sample.is_finite() { sample * w } else { 0.0 };
    }
}

/// Linear interpolation between the two bins around a fractional bin `position`.
fn interpolate(bins: &[f32], position: f32) -> f32 {
    let last = bins.len().saturating_sub(1);
    let low = (position.floor().max(0.0) as usize).min(last);
    let high = (low + 1).min(last);
    let fraction = (position - low as f32).clamp(0.0, 1.0);
    match (bins.get(low), bins.get(high)) {
        (Some(a), Some(b)) => a + (b - a) * fraction,
        _ => POWER_FLOOR.log10() * 10.0,
    }
}

/// Maps dB to 0..=255 over the fixed range below the chunk's maximum.
fn to_levels(decibels: &[f32]) -> Vec<u8> {
    let max = decibels.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max < SILENCE_DBFS {
        return vec![0; decibels.len()];
    }
    let floor = max - DYNAMIC_RANGE_DB;
    decibels.iter().map(|db| (((db - floor) / DYNAMIC_RANGE_DB).clamp(0.0, 1.0) * 255.0).round() as u8).collect()
}

/// Anchors of the colour map, dark to bright: near-black, violet, magenta-red, orange, cream.
/// Chosen so their luminance strictly rises; interpolating linearly between them keeps that,
/// so louder always reads as brighter, also in greyscale print or for colour-blind viewers.
const ANCHORS: [[f32; 3]; 9] = [
    [3.0, 2.0, 10.0],
    [30.0, 10.0, 62.0],
    [78.0, 16.0, 110.0],
    [128.0, 32.0, 120.0],
    [178.0, 52.0, 112.0],
    [224.0, 82.0, 88.0],
    [246.0, 132.0, 80.0],
    [252.0, 190.0, 120.0],
    [255.0, 248.0, 196.0],
];

/// The colour for `t` in 0..=1 (clamped).
fn colour(t: f32) -> [u8; 3] {
    let segments = (ANCHORS.len() - 1) as f32;
    let position = t.clamp(0.0, 1.0) * segments;
    let low = (position.floor() as usize).min(ANCHORS.len() - 2);
    let fraction = position - low as f32;
    let (a, b) = (ANCHORS[low], ANCHORS[low + 1]);
    [0, 1, 2].map(|c| (a[c] + (b[c] - a[c]) * fraction).round() as u8)
}

/// Paints the levels (column-major, row 0 = 0 Hz) top row first, as PNG expects.
fn encode(levels: &[u8], width: usize) -> Result<Vec<u8>, SpectrogramError> {
    let palette: Vec<[u8; 3]> = (0..=255u8).map(|level| colour(f32::from(level) / 255.0)).collect();
    let height = HEIGHT as usize;
    let mut pixels = Vec::with_capacity(width * height * 3);
    for row in (0..height).rev() {
        for column in 0..width {
            let level = levels.get(column * height + row).copied().unwrap_or(0);
            pixels.extend_from_slice(&palette[usize::from(level)]);
        }
    }
    let mut png_bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut png_bytes, u32::try_from(width).unwrap_or(u32::MAX), HEIGHT);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(&pixels)?;
    writer.finish()?;
    Ok(png_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    type TestResult = Result<(), Box<dyn Error>>;

    /// Decodes a PNG into its info and RGB bytes.
    fn decode(bytes: &[u8]) -> Result<(png::OutputInfo, Vec<u8>), Box<dyn Error>> {
        let mut reader = png::Decoder::new(std::io::Cursor::new(bytes)).read_info()?;
        let mut buffer = vec![0; reader.output_buffer_size().ok_or("image too large")?];
        let info = reader.next_frame(&mut buffer)?;
        buffer.truncate(info.buffer_size());
        Ok((info, buffer))
    }

    fn luminance([r, g, b]: [u8; 3]) -> f64 {
        0.2126 * f64::from(r) + 0.7152 * f64::from(g) + 0.0722 * f64::from(b)
    }

    /// Mean luminance of each image row, top row first.
    fn row_luminance(info: &png::OutputInfo, rgb: &[u8]) -> Vec<f64> {
        rgb.chunks(info.line_size)
            .map(|line| {
                let total: f64 = line.chunks(3).map(|p| luminance([p[0], p[1], p[2]])).sum();
                total / f64::from(info.width)
            })
            .collect()
    }

    fn sine(hz: f32, seconds: f32, rate: u32, amplitude: f32) -> Vec<f32> {
        // The phase is computed in f64: f32 loses too much precision over a few seconds and
        // its phase noise would smear the tone across the spectrum.
        let len = (seconds * rate as f32) as usize;
        let step = 2.0 * std::f64::consts::PI * f64::from(hz) / f64::from(rate);
        (0..len).map(|i| amplitude * (step * i as f64).sin() as f32).collect()
    }

    #[test]
    fn a_4khz_tone_lights_up_the_4khz_row() -> TestResult {
        let samples = sine(4_000.0, 3.0, 48_000, 0.5);
        let (info, rgb) = decode(&render_png(&samples, 48_000)?)?;
        let expected = dimensions(samples.len(), 48_000);
        assert_eq!((info.width, info.height), (expected.width, expected.height));
        assert_eq!((info.width, info.height), (600, 256));
        assert_eq!(info.color_type, png::ColorType::Rgb);

        let rows = row_luminance(&info, &rgb);
        let brightest = (0..rows.len()).max_by(|&a, &b| rows[a].total_cmp(&rows[b])).ok_or("no rows")?;
        // 4 kHz of a 12 kHz top, counted up from the bottom row.
        let tone_row = (HEIGHT - 1) as f64 - (4_000.0 / 12_000.0) * (HEIGHT - 1) as f64;
        assert!((brightest as f64 - tone_row).abs() <= 2.0, "brightest row {brightest}, expected ~{tone_row}");
        for (row, value) in rows.iter().enumerate() {
            if (row as f64 - tone_row).abs() > 20.0 {
                assert!(*value < 0.05 * rows[brightest], "row {row} is {value}, peak {}", rows[brightest]);
            }
        }
        Ok(())
    }

    #[test]
    fn silence_is_uniformly_dark() -> TestResult {
        for samples in [vec![0.0f32; 48_000], vec![1e-7; 48_000]] {
            let (_, rgb) = decode(&render_png(&samples, 48_000)?)?;
            let darkest = colour(0.0);
            assert!(rgb.chunks(3).all(|p| p == darkest), "silence must stay dark, not amplified noise");
        }
        Ok(())
    }

    #[test]
    fn odd_lengths_and_rates_give_valid_pngs() -> TestResult {
        let cases = [
            (vec![0.3f32], 48_000),
            (sine(2_000.0, 3.0, 44_100, 0.5), 44_100),
            (sine(1_000.0, 0.01, 8_000, 0.5), 8_000),
            (sine(20_000.0, 0.5, 192_000, 0.5), 192_000),
            (vec![f32::NAN, f32::INFINITY, 0.5, -0.5], 16_000),
        ];
        for (samples, rate) in cases {
            let (info, rgb) = decode(&render_png(&samples, rate)?)?;
            let expected = dimensions(samples.len(), rate);
            assert_eq!((info.width, info.height), (expected.width, expected.height), "{} @ {rate}", samples.len());
            assert!(info.width >= 1);
            assert_eq!(rgb.len(), (info.width * info.height * 3) as usize);
        }
        Ok(())
    }

    #[test]
    fn widths_stay_between_one_and_the_cap() {
        assert_eq!(dimensions(144_000, 48_000), Dimensions { width: 600, height: 256 });
        assert_eq!(dimensions(1, 8_000).width, 1);
        assert_eq!(dimensions(60 * 192_000, 192_000).width, 1_200);
        assert_eq!(dimensions(60 * 8_000, 8_000).width, 1_200);
        assert_eq!(dimensions(0, 48_000).width, 0);
        assert_eq!(dimensions(10, 0).width, 0);
    }

    #[test]
    fn empty_input_and_zero_rate_are_errors() {
        assert!(matches!(render_png(&[], 48_000), Err(SpectrogramError::Empty)));
        assert!(matches!(render_png(&[0.1, 0.2], 0), Err(SpectrogramError::ZeroSampleRate)));
    }

    #[test]
    fn colour_map_brightens_monotonically() {
        let steps: Vec<f64> = (0..256).map(|i| luminance(colour(i as f32 / 255.0))).collect();
        for pair in steps.windows(2) {
            assert!(pair[1] >= pair[0], "luminance fell from {} to {}", pair[0], pair[1]);
        }
        assert!(steps[0] < 5.0 && steps[255] > 230.0, "the map should span dark to bright");
    }
}
