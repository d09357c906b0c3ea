//! From decibels to pixels: the fixed dB range, the dark-to-bright colour map, the PNG.

use super::{DYNAMIC_RANGE_DB, HEIGHT, SpectrogramError};

/// A chunk whose loudest point is below this is silence (or dither) and is drawn all dark.
const SILENCE_DBFS: f32 = -100.0;

/// How far above the chunk's typical level (its median: in a field recording most cells are
/// background) black ends. Noise in one STFT cell wanders a few dB around its mean; with this
/// margin about two thirds of it is black and the rest a dim speckle.
const NOISE_MARGIN_DB: f32 = 2.0;

/// The brightest colour is reached at this quantile of the picture's levels, not at its single
/// loudest cell, so one click or hum line cannot dim every note.
const TOP_QUANTILE: f64 = 0.999;

/// The darkest colour starts at least this far below the top, so a chunk of pure noise is not
/// stretched into a bright picture.
const MIN_RANGE_DB: f32 = 30.0;

/// Maps dB to 0..=255. The top is the [`TOP_QUANTILE`] level; black is the higher of
/// "[`DYNAMIC_RANGE_DB`] below the top" and "a little above the noise floor" (but never closer
/// than [`MIN_RANGE_DB`] to the top), so the background of a noisy recording is dark and the
/// birds keep the whole colour map.
pub(super) fn to_levels(decibels: &[f32]) -> Vec<u8> {
    let max = decibels.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max < SILENCE_DBFS {
        return vec![0; decibels.len()];
    }
    let (median, top) = quantiles(decibels);
    let top = top.min(max);
    let floor = (median + NOISE_MARGIN_DB).clamp(top - DYNAMIC_RANGE_DB, top - MIN_RANGE_DB);
    let range = top - floor;
    decibels.iter().map(|db| (((db - floor) / range).clamp(0.0, 1.0) * 255.0).round() as u8).collect()
}

/// The median and the [`TOP_QUANTILE`] of the finite levels.
fn quantiles(decibels: &[f32]) -> (f32, f32) {
    let mut sorted: Vec<f32> = decibels.iter().copied().filter(|d| d.is_finite()).collect();
    if sorted.is_empty() {
        return (f32::NEG_INFINITY, f32::NEG_INFINITY);
    }
    let last = sorted.len() - 1;
    let high = (((last as f64) * TOP_QUANTILE).round() as usize).min(last);
    let top = *sorted.select_nth_unstable_by(high, f32::total_cmp).1;
    // Everything before `high` is now at most `top`, and the median lies among them.
    let median = *sorted[..=high].select_nth_unstable_by((last / 2).min(high), f32::total_cmp).1;
    (median, top)
}

/// Control points of the colour map as (position, RGB), dark to bright: black, deep indigo,
/// plum, crimson, orange, pale yellow. Black sits just above the noise floor ([`to_levels`]), so
/// the map can rise early and quiet notes are already visible. Luminance rises strictly from
/// point to point, and so along the linear interpolation between them, so louder always reads as
/// brighter (also in greyscale or for colour-blind viewers).
const CONTROL_POINTS: [(f32, [f32; 3]); 7] = [
    (0.00, [0.0, 0.0, 4.0]),
    (0.12, [20.0, 10.0, 48.0]),
    (0.30, [84.0, 18.0, 116.0]),
    (0.50, [176.0, 40.0, 100.0]),
    (0.70, [234.0, 96.0, 50.0]),
    (0.87, [252.0, 178.0, 56.0]),
    (1.00, [252.0, 250.0, 196.0]),
];

/// The colour for `t` in 0..=1 (clamped).
pub(super) fn colour(t: f32) -> [u8; 3] {
    let t = t.clamp(0.0, 1.0);
    let upper = CONTROL_POINTS.iter().position(|&(at, _)| at >= t).unwrap_or(CONTROL_POINTS.len() - 1).max(1);
    let ((a_at, a), (b_at, b)) = (CONTROL_POINTS[upper - 1], CONTROL_POINTS[upper]);
    let fraction = ((t - a_at) / (b_at - a_at)).clamp(0.0, 1.0);
    [0, 1, 2].map(|c| (a[c] + (b[c] - a[c]) * fraction).round() as u8)
}

/// Paints the levels (column-major, row 0 at the top) row by row, as PNG expects.
pub(super) fn encode(levels: &[u8], width: usize) -> Result<Vec<u8>, SpectrogramError> {
    let palette: Vec<[u8; 3]> = (0..=255u8).map(|level| colour(f32::from(level) / 255.0)).collect();
    let height = HEIGHT as usize;
    let mut pixels = Vec::with_capacity(width * height * 3);
    for row in 0..height {
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
