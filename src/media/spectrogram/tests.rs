//! Unit tests of the spectrogram: the pixel mapping against pure tones, silence, odd inputs,
//! frequency ranges and the colour map.

use super::paint::colour;
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

/// Luminance of every pixel, row-major, top row first.
fn lumas(rgb: &[u8]) -> Vec<f64> {
    rgb.chunks(3).map(|p| luminance([p[0], p[1], p[2]])).collect()
}

/// A sine of `hz` between `from` and `to` seconds inside `seconds` of silence.
fn tone(hz: f64, seconds: f64, from: f64, to: f64, rate: u32, amplitude: f32) -> Vec<f32> {
    // The phase is computed in f64: f32 loses too much precision over a few seconds and its
    // phase noise would smear the tone across the spectrum.
    let step = 2.0 * std::f64::consts::PI * hz / f64::from(rate);
    (0..(seconds * f64::from(rate)) as usize)
        .map(|i| {
            let t = i as f64 / f64::from(rate);
            if (from..to).contains(&t) { amplitude * (step * i as f64).sin() as f32 } else { 0.0 }
        })
        .collect()
}

fn sine(hz: f64, seconds: f64, rate: u32, amplitude: f32) -> Vec<f32> {
    tone(hz, seconds, 0.0, seconds, rate, amplitude)
}

/// The brightest row (by mean luminance) and the first and last columns of that row brighter
/// than half its peak: where a steady tone sits.
fn tone_position(info: &png::OutputInfo, luma: &[f64]) -> (usize, (usize, usize)) {
    let width = info.width as usize;
    let rows: Vec<&[f64]> = luma.chunks(width).collect();
    let mean = |row: &[f64]| row.iter().sum::<f64>() / row.len() as f64;
    let brightest = (0..rows.len()).max_by(|&a, &b| mean(rows[a]).total_cmp(&mean(rows[b]))).unwrap_or(0);
    let row = rows[brightest];
    let peak = row.iter().copied().fold(0.0, f64::max);
    let lit: Vec<usize> = (0..width).filter(|&c| row[c] > peak / 2.0).collect();
    (brightest, (lit.first().copied().unwrap_or(0), lit.last().copied().unwrap_or(0)))
}

#[test]
fn a_4khz_tone_from_1_to_2_s_lands_where_the_mapping_says() -> TestResult {
    let rate = 48_000;
    let samples = tone(4_000.0, 3.0, 1.0, 2.0, rate, 0.5);
    let started = std::time::Instant::now();
    let (png_bytes, map) = render(&samples, rate, FrequencyRange::default_for(rate))?;
    println!("rendered 3 s at 48 kHz ({}x{}) in {:?}", map.width, map.height, started.elapsed());
    let (info, rgb) = decode(&png_bytes)?;
    assert_eq!((info.width, info.height), (map.width, map.height));
    assert_eq!(info.color_type, png::ColorType::Rgb);
    assert_eq!(map, mapping(samples.len(), rate, FrequencyRange::default_for(rate))?);
    assert_eq!((map.min_hz, map.max_hz, map.duration_seconds), (0.0, 12_000.0, 3.0));
    // 512-sample window, 75% overlap: one column per 128 samples.
    assert!((map.seconds_per_pixel - 128.0 / 48_000.0).abs() < 1e-12);
    assert_eq!(map.width, 1_125);

    let (row, (first_column, last_column)) = tone_position(&info, &lumas(&rgb));
    let tone_row = map.row_of(4_000.0).floor();
    let (start, end) = (map.column_of(1.0), map.column_of(2.0));
    assert!((row as f64 - tone_row).abs() <= 1.0, "brightest row {row}, mapping says {tone_row}");
    assert!((first_column as f64 - start).abs() <= 2.0, "tone starts at column {first_column}, mapping says {start}");
    assert!((last_column as f64 - end).abs() <= 2.0, "tone ends at column {last_column}, mapping says {end}");
    Ok(())
}

#[test]
fn a_chosen_range_moves_the_tone_and_the_mapping_with_it() -> TestResult {
    let rate = 32_000;
    let samples = tone(7_000.0, 2.0, 0.5, 1.5, rate, 0.5);
    let range = FrequencyRange::choose(Some(6_000.0), Some(10_000.0), rate)?;
    let (png_bytes, map) = render(&samples, rate, range)?;
    let (info, rgb) = decode(&png_bytes)?;
    assert_eq!((map.min_hz, map.max_hz, map.hz_per_pixel), (6_000.0, 10_000.0, 4_000.0 / 256.0));
    // ~10.7 ms whatever the rate: 341 samples at 32 kHz, stepping by 85.
    assert!((map.seconds_per_pixel - 85.0 / 32_000.0).abs() < 1e-12);
    let (row, (first_column, last_column)) = tone_position(&info, &lumas(&rgb));
    let tone_row = map.row_of(7_000.0).floor();
    assert!((row as f64 - tone_row).abs() <= 1.0, "brightest row {row}, mapping says {tone_row}");
    assert!((first_column as f64 - map.column_of(0.5)).abs() <= 2.0);
    assert!((last_column as f64 - map.column_of(1.5)).abs() <= 2.0);
    Ok(())
}

#[test]
fn frequency_ranges_are_validated() {
    let ok = |min, max| FrequencyRange::choose(min, max, 48_000).map(|r| (r.min_hz, r.max_hz)).ok();
    assert_eq!(ok(None, None), Some((0.0, 12_000.0)));
    assert_eq!(ok(Some(2_000.0), None), Some((2_000.0, 12_000.0)));
    assert_eq!(ok(None, Some(24_000.0)), Some((0.0, 24_000.0)));
    for (min, max) in [(-1.0, 5_000.0), (5_000.0, 5_000.0), (6_000.0, 5_000.0), (0.0, 24_001.0), (f64::NAN, 1.0)] {
        assert_eq!(ok(Some(min), Some(max)), None, "{min}..{max}");
    }
    assert_eq!(FrequencyRange::default_for(16_000).max_hz, 8_000.0);
    let wide = FrequencyRange { min_hz: 0.0, max_hz: 12_000.0 };
    assert!(matches!(mapping(100, 16_000, wide), Err(SpectrogramError::InvalidRange { .. })));
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
        (vec![0.1; 1_000], 1_000),
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
    assert_eq!(dimensions(144_000, 48_000), Dimensions { width: 1_125, height: 256 });
    assert_eq!(dimensions(96_000, 32_000).width, 1_130);
    assert_eq!(dimensions(1, 8_000).width, 1);
    assert_eq!(dimensions(60 * 192_000, 192_000).width, 4_096);
    assert_eq!(dimensions(60 * 48_000, 48_000).width, 4_091);
    assert_eq!(dimensions(0, 48_000).width, 0);
    assert_eq!(dimensions(10, 0).width, 0);
}

#[test]
fn empty_input_and_zero_rate_are_errors() {
    assert!(matches!(render_png(&[], 48_000), Err(SpectrogramError::Empty)));
    assert!(matches!(render_png(&[0.1, 0.2], 0), Err(SpectrogramError::ZeroSampleRate)));
}

#[test]
fn colour_map_brightens_monotonically_from_a_dark_floor() {
    let steps: Vec<f64> = (0..256).map(|i| luminance(colour(i as f32 / 255.0))).collect();
    for pair in steps.windows(2) {
        assert!(pair[1] >= pair[0], "luminance fell from {} to {}", pair[0], pair[1]);
    }
    assert!(steps[0] < 2.0 && steps[255] > 230.0, "the map should span dark to bright");
    assert!(steps[255 / 10] < 15.0, "the lowest 10% (just above the noise floor) stays near black");
}
