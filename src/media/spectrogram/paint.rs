//! From decibels to pixels: the fixed dB range, the dark-to-bright colour map, the PNG.

use super::{DYNAMIC_RANGE_DB, HEIGHT, SpectrogramError};

/// A chunk whose loudest point is below this is silence (or dither) and is drawn all dark.
const SILENCE_DBFS: f32 = -100.0;

/// Maps dB to 0..=255 over the fixed range below the chunk's maximum.
pub(super) fn to_levels(decibels: &[f32]) -> Vec<u8> {
    let max = decibels.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max < SILENCE_DBFS {
        return vec![0; decibels.len()];
    }
    let floor = max - DYNAMIC_RANGE_DB;
    decibels.iter().map(|db| (((db - floor) / DYNAMIC_RANGE_DB).clamp(0.0, 1.0) * 255.0).round() as u8).collect()
}

/// Control points of the colour map as (position, RGB), dark to bright: black, deep indigo,
/// plum, crimson, orange, pale yellow. The lower third stays near black so the noise floor of a
/// field recording reads as background; luminance rises strictly from point to point, and so
/// along the linear interpolation between them, so louder always reads as brighter (also in
/// greyscale or for colour-blind viewers).
const CONTROL_POINTS: [(f32, [f32; 3]); 7] = [
    (0.00, [0.0, 0.0, 4.0]),
    (0.30, [14.0, 8.0, 40.0]),
    (0.48, [62.0, 14.0, 98.0]),
    (0.64, [150.0, 34.0, 104.0]),
    (0.78, [222.0, 78.0, 62.0]),
    (0.90, [250.0, 160.0, 50.0]),
    (1.00, [252.0, 246.0, 188.0]),
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
