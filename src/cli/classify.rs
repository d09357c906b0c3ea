//! `birdhub classify FILE`: the top species per 3 s window of a WAV, FLAC, MP3 or Ogg Vorbis
//! recording, as text or JSON.

use std::{path::PathBuf, process::ExitCode};

use anyhow::Context;
use chrono::NaiveDate;
use serde::Serialize;

use crate::{
    config::Settings,
    inference::{
        Classifier, ClassifierOptions, ModelDir, Prediction, RangeFilter,
        audio::{self, SAMPLE_RATE},
        predict, range,
    },
};

/// Longest recording `classify` reads.
const MAX_SECONDS: f64 = 3600.0;
/// Windows classified per model call.
const BATCH: usize = 8;

#[derive(Debug, clap::Args)]
pub struct ClassifyArgs {
    /// An audio file: WAV (8/16/24/32-bit PCM or 32-bit float), FLAC, MP3 or Ogg Vorbis; any
    /// rate, any channels.
    pub file: PathBuf,
    /// Latitude of the recording, for the location filter (with --lon).
    #[arg(long, requires = "lon", allow_hyphen_values = true)]
    pub lat: Option<f64>,
    /// Longitude of the recording (with --lat).
    #[arg(long, requires = "lat", allow_hyphen_values = true)]
    pub lon: Option<f64>,
    /// Date of the recording, YYYY-MM-DD (default: today), for the location filter.
    #[arg(long)]
    pub date: Option<NaiveDate>,
    /// Drop species the range model does not expect at --lat/--lon in that week.
    #[arg(long, requires = "lat")]
    pub only_expected: bool,
    /// Minimum confidence (default: inference.threshold, 0.7).
    #[arg(long)]
    pub threshold: Option<f32>,
    /// BirdNET sensitivity, 0.5-1.5; higher finds more.
    #[arg(long, default_value_t = predict::DEFAULT_SENSITIVITY)]
    pub sensitivity: f32,
    /// Species shown per window at most.
    #[arg(long, default_value_t = 3)]
    pub top: usize,
    /// Overlap of consecutive windows in seconds (0 to 2.9).
    #[arg(long, default_value_t = 0.0)]
    pub overlap: f64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    file: String,
    duration_seconds: f64,
    sample_rate: u32,
    model: &'static str,
    /// The network that ran (FP32 when the configured precision's file is missing).
    precision: crate::inference::Precision,
    threshold: f32,
    location: Option<Location>,
    windows: Vec<Window>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    latitude: f64,
    longitude: f64,
    date: NaiveDate,
    week: u32,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Window {
    start_seconds: f64,
    end_seconds: f64,
    detections: Vec<Prediction>,
}

pub async fn run(settings: &Settings, args: ClassifyArgs) -> anyhow::Result<ExitCode> {
    let settings = settings.clone();
    tokio::task::spawn_blocking(move || classify(&settings, &args)).await?
}

fn classify(settings: &Settings, args: &ClassifyArgs) -> anyhow::Result<ExitCode> {
    let threshold = args.threshold.unwrap_or(settings.inference.threshold);
    anyhow::ensure!((0.0..=1.0).contains(&threshold), "--threshold must be between 0 and 1");
    anyhow::ensure!((0.5..=1.5).contains(&args.sensitivity), "--sensitivity must be between 0.5 and 1.5");
    anyhow::ensure!((0.0..3.0).contains(&args.overlap), "--overlap must be at least 0 and under 3 seconds");
    let bytes = std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let extension = args.file.extension().and_then(|e| e.to_str());
    let decoded =
        audio::decode::decode_bytes(bytes, extension, MAX_SECONDS).with_context(|| args.file.display().to_string())?;
    let (duration, rate) = (decoded.duration_secs(), decoded.sample_rate);

    let dir = ModelDir::locate(&settings.inference.model_dir)?;
    let threads = settings.inference.workers.threads().max(1);
    let classifier = Classifier::load(
        &dir,
        ClassifierOptions { threads, spin: true, precision: settings.inference.precision, sessions: 1 },
    )?;
    let location = match (args.lat, args.lon) {
        (Some(latitude), Some(longitude)) => {
            let date = args.date.unwrap_or_else(|| chrono::Utc::now().date_naive());
            Some(Location { latitude, longitude, date, week: range::week_of(date) })
        }
        _ => None,
    };
    let filter = location.as_ref().map(|_| RangeFilter::load(&dir, range::DEFAULT_THRESHOLD)).transpose()?;

    let samples = audio::to_model_rate(decoded)?;
    let overlap = (args.overlap * f64::from(SAMPLE_RATE)) as usize;
    let all = audio::windows(&samples, overlap);
    let mut windows = Vec::with_capacity(all.len());
    for batch in all.chunks(BATCH) {
        let refs: Vec<&[f32]> = batch.iter().map(|(_, w)| w.as_slice()).collect();
        for ((start, _), logits) in batch.iter().zip(classifier.logits(&refs)?) {
            let mut found = predict::top(&logits, classifier.labels(), args.sensitivity, threshold, args.top);
            if let (Some(loc), Some(filter)) = (&location, &filter) {
                let scores = filter.scores(loc.latitude, loc.longitude, loc.week)?;
                for p in &mut found {
                    p.expected_here = Some(scores.get(p.index).is_some_and(|s| *s >= filter.threshold));
                }
                if args.only_expected {
                    found.retain(|p| p.expected_here == Some(true));
                }
            }
            let start_seconds = *start as f64 / f64::from(SAMPLE_RATE);
            let end_seconds = (start_seconds + 3.0).min(duration.max(start_seconds));
            windows.push(Window { start_seconds, end_seconds, detections: found });
        }
    }

    let report = Report {
        file: args.file.display().to_string(),
        duration_seconds: duration,
        sample_rate: rate,
        model: classifier.model_id(),
        precision: classifier.precision(),
        threshold,
        location,
        windows,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_text(&report);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_text(r: &Report) {
    println!(
        "{}: {:.1} s at {} Hz, {} window(s), model {} ({}), threshold {:.2}",
        r.file,
        r.duration_seconds,
        r.sample_rate,
        r.windows.len(),
        r.model,
        r.precision,
        r.threshold
    );
    if let Some(l) = &r.location {
        println!("location filter: {:.3}, {:.3} on {} (week {})", l.latitude, l.longitude, l.date, l.week);
    }
    let clock = |s: f64| format!("{:02}:{:04.1}", (s / 60.0).floor() as u64, s % 60.0);
    for w in &r.windows {
        let span = format!("{}-{}", clock(w.start_seconds), clock(w.end_seconds));
        if w.detections.is_empty() {
            println!("{span}  (nothing above {:.2})", r.threshold);
        }
        for (i, p) in w.detections.iter().enumerate() {
            let lead = if i == 0 { span.as_str() } else { "           " };
            let flag = match p.expected_here {
                Some(false) => "  [not expected here this week]",
                _ => "",
            };
            println!("{lead}  {:.2}  {} ({}){flag}", p.confidence, p.common_name, p.scientific_name);
        }
    }
}
