//! The short-time Fourier transform behind the picture: power in dB for every pixel.

use super::{HEIGHT, Layout, Mapping, SpectrogramError};
use realfft::RealFftPlanner;

/// Keeps `log10` finite for exact zeros; -120 dB is far below anything drawn.
const POWER_FLOOR: f32 = 1e-12;

/// What one row reads from a spectrum.
enum RowSource {
    /// The loudest of these bins (inclusive, at least two), whose centres fall inside the row's
    /// band: a row wider than a bin must not miss a narrow tone between two row centres.
    Loudest(usize, usize),
    /// Linear interpolation at this fractional bin (the row's centre): rows up to about a bin wide.
    Between(f32),
}

/// Power in dB for every (column, row), column-major, row 0 at the top (`mapping.max_hz`).
pub(super) fn decibel_columns(
    samples: &[f32],
    sample_rate: u32,
    layout: &Layout,
    mapping: &Mapping,
) -> Result<Vec<f32>, SpectrogramError> {
    let n = layout.fft_size;
    let fft = RealFftPlanner::<f32>::new().plan_fft_forward(n);
    let window: Vec<f32> = (0..layout.window)
        .map(|i| 0.5 - 0.5 * (2.0 * std::f32::consts::PI * i as f32 / layout.window as f32).cos())
        .collect();
    // Scaling by 2/sum(w) puts a full-scale sine at 0 dBFS whatever the window length.
    let amplitude_scale = 2.0 / window.iter().sum::<f32>();
    let power_scale = amplitude_scale * amplitude_scale;

    let (mut frame, mut spectrum, mut scratch) = (fft.make_input_vec(), fft.make_output_vec(), fft.make_scratch_vec());
    let mut power = vec![0.0f32; spectrum.len()];
    let mut bins_db = vec![0.0f32; spectrum.len()];
    let rows = row_sources(f64::from(sample_rate) / n as f64, spectrum.len(), mapping);

    // A column wider than one frame step (long input) takes the loudest of its frames, so a
    // short call between two column centres still shows up.
    let per_column = layout.hop.div_ceil(layout.frame_hop).max(1);
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
        out.extend(rows.iter().map(|source| read_row(&bins_db, source)));
    }
    Ok(out)
}

/// How each row, top first, reads the spectrum, given the bin spacing.
fn row_sources(bin_hz: f64, bins: usize, mapping: &Mapping) -> Vec<RowSource> {
    let last = bins.saturating_sub(1);
    (0..mapping.height)
        .map(|row| {
            let top = mapping.max_hz - f64::from(row) * mapping.hz_per_pixel;
            let bottom = top - mapping.hz_per_pixel;
            // Bins with centre in (bottom, top].
            let first = ((bottom / bin_hz).floor() + 1.0).max(0.0) as usize;
            let final_bin = ((top / bin_hz).floor().max(0.0) as usize).min(last);
            // A row holding one bin or none reads at its centre, so a row no wider than a bin
            // is not biased towards the bin at one of its edges.
            if first < final_bin {
                RowSource::Loudest(first, final_bin)
            } else {
                RowSource::Between(((top + bottom) / 2.0 / bin_hz) as f32)
            }
        })
        .collect()
}

fn read_row(bins_db: &[f32], source: &RowSource) -> f32 {
    match *source {
        RowSource::Loudest(first, last) => {
            bins_db.get(first..=last).map_or(f32::NEG_INFINITY, |s| s.iter().copied().fold(f32::NEG_INFINITY, f32::max))
        }
        RowSource::Between(position) => interpolate(bins_db, position),
    }
}

/// Copies the windowed samples centred on `centre` into the start of `frame` (the rest is zero
/// padding), with zeros past either end of the input.
fn fill_frame(frame: &mut [f32], samples: &[f32], centre: usize, window: &[f32]) {
    frame.fill(0.0);
    let start = centre as isize - (window.len() / 2) as isize;
    for (i, (slot, w)) in frame.iter_mut().zip(window).enumerate() {
        let sample = usize::try_from(start + i as isize).ok().and_then(|j| samples.get(j)).copied().unwrap_or(0.0);
        *slot = if sample.is_finite() { sample * w } else { 0.0 };
    }
}

/// The level at a fractional bin `position`, from a parabola through the nearest bin and its two
/// neighbours. Unlike a straight line between two bins, a parabola puts a tone's brightest row at
/// its true frequency rather than at the nearest bin, which matters when rows are narrower than
/// bins (a zoomed-in band).
fn interpolate(bins: &[f32], position: f32) -> f32 {
    let Some(last) = bins.len().checked_sub(1) else {
        return POWER_FLOOR.log10() * 10.0;
    };
    let nearest = (position.round().max(0.0) as usize).min(last);
    let x = (position - nearest as f32).clamp(-0.5, 0.5);
    let centre = bins[nearest];
    let below = bins[nearest.saturating_sub(1)];
    let above = bins[(nearest + 1).min(last)];
    let slope = (above - below) / 2.0;
    let curve = (above + below - 2.0 * centre) / 2.0;
    centre + slope * x + curve * x * x
}
