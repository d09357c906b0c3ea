//! `birdhub bench inference`: how fast the classifier is on this machine, on real audio.
//! Prints model load time, the front end alone, per-chunk latency p50/p99 per batch size,
//! throughput with 1 and 2 threads, and the process's peak RSS.

use std::{process::ExitCode, time::Instant};

use anyhow::Context;
use serde::Serialize;

use crate::{
    config::Settings,
    inference::{Classifier, ClassifierOptions, ModelDir, audio},
    jobs::registry::resident_memory_bytes,
};

#[derive(Debug, clap::Args)]
pub struct InferenceArgs {
    /// Chunks per measurement (3 s each, cut from the real fixture recording).
    #[arg(long, default_value_t = 48)]
    pub chunks: usize,
    /// Thread counts to measure.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub threads: Vec<usize>,
    /// Batch sizes to measure.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8")]
    pub batches: Vec<usize>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
struct Row {
    threads: usize,
    batch: usize,
    /// Latency of one model call, divided by the batch size.
    p50_ms_per_chunk: f64,
    p99_ms_per_chunk: f64,
    /// Latency of one whole model call.
    p50_ms_per_call: f64,
    p99_ms_per_call: f64,
    chunks_per_sec: f64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    model_dir: String,
    chunks: usize,
    model_load_ms: f64,
    front_end_ms_per_chunk: f64,
    rows: Vec<Row>,
    best: Option<Row>,
    rss_after_load_mb: f64,
    /// Peak while only the first thread configuration's classifier had been loaded: what a hub uses.
    peak_rss_one_classifier_mb: f64,
    /// Peak over the whole run, with a classifier per thread configuration loaded in turn.
    peak_rss_mb: f64,
}

pub async fn inference(settings: &Settings, args: InferenceArgs) -> anyhow::Result<ExitCode> {
    let settings = settings.clone();
    tokio::task::spawn_blocking(move || run(&settings, &args)).await?
}

fn run(settings: &Settings, args: &InferenceArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.chunks > 0, "--chunks must be positive");
    anyhow::ensure!(
        args.threads.iter().chain(&args.batches).all(|n| *n > 0),
        "thread and batch counts must be positive"
    );
    let dir = ModelDir::locate(&settings.inference.model_dir)?;
    let fixture = dir.file("fixtures/birds_10s.wav");
    let bytes = std::fs::read(&fixture).with_context(|| format!("reading {}", fixture.display()))?;
    let samples = audio::to_model_rate(audio::decode_wav(&bytes, 60.0)?)?;
    let real: Vec<Vec<f32>> = audio::windows(&samples, 0).into_iter().map(|(_, w)| w).collect();
    let chunks: Vec<&[f32]> = real.iter().cycle().take(args.chunks).map(Vec::as_slice).collect();

    let mut rows = Vec::new();
    let (mut model_load_ms, mut front_end_ms, mut rss_after_load, mut peak_one) = (0.0, 0.0, 0.0, 0.0);
    for (i, &threads) in args.threads.iter().enumerate() {
        let classifier = Classifier::load(&dir, ClassifierOptions { threads, spin: true })?;
        if i == 0 {
            model_load_ms = classifier.load_ms;
            rss_after_load = mb(resident_memory_bytes());
            let t = Instant::now();
            for c in &chunks {
                std::hint::black_box(classifier.spectrogram(c));
            }
            front_end_ms = t.elapsed().as_secs_f64() * 1e3 / chunks.len() as f64;
        }
        classifier.logits(&chunks[..1])?; // warm-up: first run allocates
        for &batch in &args.batches {
            let mut calls = Vec::new();
            let started = Instant::now();
            for group in chunks.chunks(batch) {
                let t = Instant::now();
                std::hint::black_box(classifier.logits(group)?);
                calls.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let total = started.elapsed().as_secs_f64();
            calls.sort_by(f64::total_cmp);
            let (p50, p99) = (percentile(&calls, 50.0), percentile(&calls, 99.0));
            rows.push(Row {
                threads,
                batch,
                p50_ms_per_chunk: p50 / batch as f64,
                p99_ms_per_chunk: p99 / batch as f64,
                p50_ms_per_call: p50,
                p99_ms_per_call: p99,
                chunks_per_sec: chunks.len() as f64 / total,
            });
        }
        if i == 0 {
            peak_one = peak_rss_mb();
        }
    }
    let best = rows.iter().max_by(|a, b| a.chunks_per_sec.total_cmp(&b.chunks_per_sec)).copied();
    let report = Report {
        model_dir: dir.path.display().to_string(),
        chunks: chunks.len(),
        model_load_ms,
        front_end_ms_per_chunk: front_end_ms,
        rows,
        best,
        rss_after_load_mb: rss_after_load,
        peak_rss_one_classifier_mb: peak_one,
        peak_rss_mb: peak_rss_mb(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(r: &Report) {
    println!(
        "birdhub bench inference: BirdNET 2.4 (native front end + birdnet_net.onnx), {} chunks of real audio",
        r.chunks
    );
    println!("model dir:       {}", r.model_dir);
    println!("model load:      {:.0} ms", r.model_load_ms);
    println!("front end:       {:.2} ms/chunk (one thread)", r.front_end_ms_per_chunk);
    println!();
    println!("threads  batch  p50 ms/chunk  p99 ms/chunk  p50 ms/call  p99 ms/call  chunks/s");
    for row in &r.rows {
        println!(
            "{:>7}  {:>5}  {:>12.2}  {:>12.2}  {:>11.2}  {:>11.2}  {:>8.1}",
            row.threads,
            row.batch,
            row.p50_ms_per_chunk,
            row.p99_ms_per_chunk,
            row.p50_ms_per_call,
            row.p99_ms_per_call,
            row.chunks_per_sec
        );
    }
    if let Some(b) = &r.best {
        println!();
        println!("best:            {:.1} chunks/s ({} threads, batch {})", b.chunks_per_sec, b.threads, b.batch);
    }
    println!("RSS after load:  {:.0} MB", r.rss_after_load_mb);
    println!("peak RSS:        {:.0} MB with one classifier loaded (as in the hub)", r.peak_rss_one_classifier_mb);
    println!("peak RSS:        {:.0} MB over the whole bench (a classifier per thread count)", r.peak_rss_mb);
}

/// The `p`th percentile of sorted values (nearest rank); 0 when empty.
pub(super) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn mb(bytes: Option<u64>) -> f64 {
    bytes.unwrap_or(0) as f64 / (1024.0 * 1024.0)
}

/// The process's high-water resident set (`VmHWM`), in MB.
pub fn peak_rss_mb() -> f64 {
    status_mb(std::process::id(), "VmHWM:")
}

/// A `kB` line of `/proc/<pid>/status` (`VmRSS:`, `VmHWM:`), in MB; 0 when the process is gone.
pub(super) fn status_mb(pid: u32, key: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix(key))?.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}
