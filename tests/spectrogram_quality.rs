//! Objective sharpness of the spectrogram on a real recording: the Tennessee Warbler's trill in
//! the fixture's 3-6 s window (a 32 kHz file resampled to the hub's 48 kHz, as chunks arrive)
//! must show its downsweeps at 6-10 kHz as separate notes with dark gaps, on a dark noise floor.
//!
//! Set `SPECTRO_LOOK_DIR=/some/dir` to also write the rendered PNG there for a person to look at.

use birdhub::inference::audio::{Audio, decode_wav, to_model_rate};
use birdhub::media::spectrogram;
use std::error::Error;

type TestResult = Result<(), Box<dyn Error>>;

const FIXTURE: &str = "models/birdnet-v2.4/fixtures/birds_10s.wav";
const RATE: u32 = 48_000;

/// The fixture's 3-6 s window at 48 kHz.
fn trill_window() -> Result<Vec<f32>, Box<dyn Error>> {
    let audio = decode_wav(&std::fs::read(FIXTURE)?, 60.0)?;
    let rate = audio.sample_rate as usize;
    let window = audio.samples.get(3 * rate..6 * rate).ok_or("fixture shorter than 6 s")?.to_vec();
    Ok(to_model_rate(Audio { samples: window, sample_rate: audio.sample_rate })?)
}

/// Width, height and the Rec. 709 luma (0-255) of every pixel, top row first.
fn luma_image(png_bytes: &[u8]) -> Result<(usize, usize, Vec<f64>), Box<dyn Error>> {
    let mut reader = png::Decoder::new(std::io::Cursor::new(png_bytes)).read_info()?;
    let mut buffer = vec![0; reader.output_buffer_size().ok_or("image too large")?];
    let info = reader.next_frame(&mut buffer)?;
    assert_eq!(info.color_type, png::ColorType::Rgb);
    let luma = buffer[..info.buffer_size()]
        .chunks(3)
        .map(|p| 0.2126 * f64::from(p[0]) + 0.7152 * f64::from(p[1]) + 0.0722 * f64::from(p[2]))
        .collect();
    Ok((info.width as usize, info.height as usize, luma))
}

/// Counts separate bursts in `profile`: a burst starts when the value rises above `high` and only
/// ends once it falls below `low`, so a dip that is not a real gap does not split a note.
fn bursts(profile: &[f64], low: f64, high: f64) -> usize {
    let (mut count, mut inside) = (0, false);
    for &value in profile {
        if !inside && value > high {
            count += 1;
            inside = true;
        } else if inside && value < low {
            inside = false;
        }
    }
    count
}

#[test]
fn the_warbler_trill_shows_separate_notes_on_a_dark_floor() -> TestResult {
    let samples = trill_window()?;
    let mut times = Vec::new();
    let mut png_bytes = Vec::new();
    for _ in 0..5 {
        let started = std::time::Instant::now();
        png_bytes = spectrogram::render_png(&samples, RATE)?;
        times.push(started.elapsed());
    }
    times.sort();
    // Printed for people measuring (e.g. with `--release` on a Pi); never asserted.
    println!("render of 3 s at 48 kHz: median {:?}, best {:?}", times[2], times[0]);
    if let Some(dir) = std::env::var_os("SPECTRO_LOOK_DIR") {
        std::fs::create_dir_all(&dir)?;
        std::fs::write(std::path::Path::new(&dir).join("ours.png"), &png_bytes)?;
    }
    let (width, height, luma) = luma_image(&png_bytes)?;

    // The default picture spans 0 Hz (bottom row) to 12 kHz (top row).
    let row_of = |hz: f64| ((12_000.0 - hz) / 12_000.0 * height as f64) as usize;
    let (top, bottom) = (row_of(10_000.0), row_of(6_000.0));
    let profile: Vec<f64> = (0..width)
        .map(|column| (top..bottom).map(|row| luma[row * width + column]).sum::<f64>() / (bottom - top) as f64)
        .collect();
    let peak = profile.iter().copied().fold(0.0, f64::max);
    let mut sorted = profile.clone();
    sorted.sort_by(f64::total_cmp);
    let quiet = sorted[sorted.len() / 10];
    // A gap must fall back to within a quarter of the way from the quiet level to the peak.
    let low = quiet + 0.25 * (peak - quiet);
    let high = quiet + 0.5 * (peak - quiet);
    let notes = bursts(&profile, low, high);
    println!("6-10 kHz profile: peak {peak:.1}, quiet {quiet:.1}, {notes} notes");
    assert!(notes >= 10, "the trill's downsweeps must be separate notes, saw {notes}");
    // The notes stand out: bright bands over a near-black background in the same rows.
    assert!(quiet < 10.0, "the gaps between notes must be near black, 10th percentile luma {quiet:.1}");
    assert!(peak > 60.0, "the notes must be bright, peak band luma {peak:.1}");

    // Above the trill (10.5-12 kHz) there is only noise: most of it black, the rest a dim speckle.
    let mut above: Vec<f64> =
        (0..row_of(10_500.0)).flat_map(|row| luma[row * width..(row + 1) * width].to_vec()).collect();
    above.sort_by(f64::total_cmp);
    let (above_median, above_p90) = (above[above.len() / 2], above[above.len() * 9 / 10]);
    println!("10.5-12 kHz noise: median luma {above_median:.1}, 90th percentile {above_p90:.1}");
    assert!(above_median < 8.0, "the noise floor must be dark, median luma {above_median:.1}");
    assert!(above_p90 < 45.0, "noise speckle must stay dim, 90th percentile luma {above_p90:.1}");

    let mut all = luma.clone();
    all.sort_by(f64::total_cmp);
    let median = all[all.len() / 2];
    println!("median luma {median:.1}");
    assert!(median < 15.0, "the noise floor must be dark, median luma {median:.1}");
    Ok(())
}
