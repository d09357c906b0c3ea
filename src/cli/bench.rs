//! `birdhub bench inference`: how fast the classifier is on this machine, on real audio.
//! Prints model load time, the front end alone, per-chunk latency p50/p99 per batch size,
//! throughput with 1 and 2 threads, and the process's peak RSS. With `--precision int8,fp16` it
//! measures those networks in the same run, side by side with FP32, and how often they name the
//! same top species as FP32 on the run's chunks. First it prints the threads the hub would run
//! on this machine's allowed cores ([`ThreadPlan`]), and why.

use std::{process::ExitCode, time::Instant};

use anyhow::Context;
use serde::Serialize;

use crate::{
    config::Settings,
    inference::{Classifier, ClassifierOptions, ModelDir, Precision, ThreadPlan, audio},
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
    /// Network precisions to measure; FP32 always runs first as the reference
    /// (default: inference.precision).
    #[arg(long, value_delimiter = ',')]
    pub precision: Vec<Precision>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
struct Row {
    precision: Precision,
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

/// One precision against FP32 on the run's chunks.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct Agreement {
    /// The precision that asked for; `loaded` differs when its file is missing.
    precision: Precision,
    loaded: Precision,
    load_ms: f64,
    /// Chunks whose most confident species is FP32's.
    top1_equal: usize,
    chunks: usize,
    /// The largest difference in any species' confidence, over every chunk.
    max_confidence_diff: f32,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    /// The threads the hub would run here (`inference.workers` on the allowed cores), and why.
    plan: ThreadPlan,
    model_dir: String,
    chunks: usize,
    model_load_ms: f64,
    precisions: Vec<Agreement>,
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
    // Precisions are compared on windows every half second, so more of the song is compared.
    let half = audio::SAMPLE_RATE as usize / 2;
    let compared: Vec<Vec<f32>> = audio::windows(&samples, audio::WINDOW - half).into_iter().map(|(_, w)| w).collect();

    let mut precisions = vec![Precision::Fp32];
    let asked = if args.precision.is_empty() { vec![settings.inference.precision] } else { args.precision.clone() };
    precisions.extend(asked.into_iter().filter(|p| *p != Precision::Fp32));
    precisions.dedup();

    let mut rows = Vec::new();
    let mut agreements = Vec::new();
    let mut reference: Vec<Vec<f32>> = Vec::new();
    let (mut model_load_ms, mut front_end_ms, mut rss_after_load, mut peak_one) = (0.0, 0.0, 0.0, 0.0);
    for (p, &precision) in precisions.iter().enumerate() {
        for (i, &threads) in args.threads.iter().enumerate() {
            let classifier = Classifier::load(&dir, ClassifierOptions { threads, spin: true, precision, sessions: 1 })?;
            let first = p == 0 && i == 0;
            if first {
                model_load_ms = classifier.load_ms;
                rss_after_load = mb(resident_memory_bytes());
                // Into one buffer, after one warm-up chunk, as a batch writes its input tensor.
                let mut out = classifier.spectrogram(chunks[0]);
                let t = Instant::now();
                for c in &chunks {
                    classifier.spectrogram_into(c, &mut out);
                    std::hint::black_box(&out);
                }
                front_end_ms = t.elapsed().as_secs_f64() * 1e3 / chunks.len() as f64;
            }
            if i == 0 {
                let logits = classifier.logits(&compared.iter().map(Vec::as_slice).collect::<Vec<_>>())?;
                if p == 0 {
                    reference = logits;
                } else {
                    agreements.push(agreement(precision, &classifier, &reference, &logits));
                }
            }
            classifier.logits(&chunks[..1])?; // warm-up: first run allocates
            for &batch in &args.batches {
                rows.push(measure(&classifier, &chunks, threads, batch)?);
            }
            if first {
                peak_one = peak_rss_mb();
            }
        }
    }
    let best = rows.iter().max_by(|a, b| a.chunks_per_sec.total_cmp(&b.chunks_per_sec)).copied();
    let report = Report {
        plan: ThreadPlan::current(settings.inference.workers),
        model_dir: dir.path.display().to_string(),
        chunks: chunks.len(),
        model_load_ms,
        precisions: agreements,
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

/// Times `classifier` on `chunks` in calls of `batch`.
fn measure(classifier: &Classifier, chunks: &[&[f32]], threads: usize, batch: usize) -> anyhow::Result<Row> {
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
    Ok(Row {
        precision: classifier.precision(),
        threads,
        batch,
        p50_ms_per_chunk: p50 / batch as f64,
        p99_ms_per_chunk: p99 / batch as f64,
        p50_ms_per_call: p50,
        p99_ms_per_call: p99,
        chunks_per_sec: chunks.len() as f64 / total,
    })
}

/// How `logits` (from `classifier`) compare with FP32's `reference`, window by window.
fn agreement(asked: Precision, classifier: &Classifier, reference: &[Vec<f32>], logits: &[Vec<f32>]) -> Agreement {
    let top1 = |l: &[f32]| l.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(i, _)| i);
    let confidence = |l: f32| crate::inference::predict::sigmoid(l, crate::inference::predict::DEFAULT_SENSITIVITY);
    let mut a = Agreement {
        precision: asked,
        loaded: classifier.precision(),
        load_ms: classifier.load_ms,
        top1_equal: 0,
        chunks: reference.len(),
        max_confidence_diff: 0.0,
    };
    for (r, l) in reference.iter().zip(logits) {
        a.top1_equal += usize::from(top1(r) == top1(l));
        for (x, y) in r.iter().zip(l) {
            a.max_confidence_diff = a.max_confidence_diff.max((confidence(*x) - confidence(*y)).abs());
        }
    }
    a
}

fn print_table(r: &Report) {
    println!(
        "birdhub bench inference: BirdNET 2.4 (native front end + ONNX network), {} chunks of real audio",
        r.chunks
    );
    println!("hub threads:     {}", r.plan);
    println!("model dir:       {}", r.model_dir);
    println!("model load:      {:.0} ms", r.model_load_ms);
    println!("front end:       {:.2} ms/chunk (one thread)", r.front_end_ms_per_chunk);
    println!();
    for a in &r.precisions {
        let fell_back =
            if a.loaded == a.precision { String::new() } else { format!(" (file missing: ran {})", a.loaded) };
        println!(
            "{:<5} vs fp32:   top-1 equal on {}/{} windows (0.5 s apart), largest confidence difference {:.3}, load {:.0} ms{fell_back}",
            a.precision, a.top1_equal, a.chunks, a.max_confidence_diff, a.load_ms
        );
    }
    println!();
    println!("precision  threads  batch  p50 ms/chunk  p99 ms/chunk  p50 ms/call  p99 ms/call  chunks/s");
    for row in &r.rows {
        println!(
            "{:>9}  {:>7}  {:>5}  {:>12.2}  {:>12.2}  {:>11.2}  {:>11.2}  {:>8.1}",
            row.precision.as_str(),
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
        println!(
            "best:            {:.1} chunks/s ({}, {} threads, batch {})",
            b.chunks_per_sec, b.precision, b.threads, b.batch
        );
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

/// User plus system CPU seconds a process has used (`/proc/<pid>/stat`, 100 ticks a second);
/// 0 when the process is gone.
pub(super) fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}
