//! `birdhub bench quality`: what the detection settings keep, on a labelled set of real bird
//! recordings mixed with non-bird sound, and on non-bird sound alone.
//!
//! Every chunk of the set (3 s: one window, as a satellite sends them) goes through the model at
//! each asked precision, then through three settings (plain BirdNET, the hub before issue 35, the
//! new defaults; see [`bench_quality_score::Setting`]) by the hub's own screening. Printed per
//! setting and precision: detections per hour of non-bird sound (all of them false), recall and
//! precision on the labelled bird windows, clean and per SNR, and the extra model calls the second
//! look made. How the set is built: `docs/detection-quality-bench.md`.

use std::{path::PathBuf, process::ExitCode, time::Instant};

use anyhow::Context;
use serde::Serialize;

use super::{
    bench_quality_score::{self as score, HUB_THRESHOLD, Setting, Shift, Tally},
    bench_quality_set::{self as set, Place, Set},
};
use crate::{
    config::Settings,
    inference::{Classifier, ClassifierOptions, ModelDir, Precision, RangeFilter, audio, range, screen::Policy},
};

/// Windows per model call.
const BATCH: usize = 8;

#[derive(Debug, clap::Args)]
pub struct QualityArgs {
    /// Network precisions to run, each over the whole set.
    #[arg(long, value_delimiter = ',', default_value = "fp32,fp16,int8")]
    pub precision: Vec<Precision>,
    /// The set's directory (default: made, or reused, by benches/quality/make-set.sh).
    #[arg(long)]
    pub set_dir: Option<PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// One satellite's run of chunks: a bird recording (clean or mixed) or a non-bird sound alone.
struct Stream {
    kind: Kind,
    place: Place,
}

enum Kind {
    Clean { bird: usize },
    Mix { mix: usize },
    Noise { noise: usize },
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SetSummary {
    dir: String,
    hash: String,
    seed: u64,
    recordings: usize,
    labelled_windows: usize,
    noise_kinds: usize,
    mixes: usize,
    snr_db: Vec<i32>,
    noise_minutes: f64,
    noise_place: Place,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SettingResult {
    setting: Setting,
    name: &'static str,
    #[serde(flatten)]
    tally: Tally,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Run {
    precision: Precision,
    /// The network that ran (FP32 when the asked precision's file is missing).
    loaded: Precision,
    seconds: f64,
    settings: Vec<SettingResult>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    set: SetSummary,
    model_dir: String,
    hub_threshold: f32,
    seconds: f64,
    runs: Vec<Run>,
}

pub async fn run(settings: &Settings, args: QualityArgs) -> anyhow::Result<ExitCode> {
    let settings = settings.clone();
    tokio::task::spawn_blocking(move || bench(&settings, &args)).await?
}

fn bench(settings: &Settings, args: &QualityArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    anyhow::ensure!(!args.precision.is_empty(), "--precision names no precision");
    let dir = set::locate(args.set_dir.as_deref())?;
    let set = Set::load(&dir)?;
    if set.manifest.hash != set::built_in_hash() {
        eprintln!(
            "bench quality: the set at {} was made from another recipe ({}) than this binary's ({})",
            dir.display(),
            set.manifest.hash,
            set::built_in_hash()
        );
    }
    let model = ModelDir::locate(&settings.inference.model_dir)?;
    let filter = RangeFilter::load(&model, range::DEFAULT_THRESHOLD)?;
    let streams = streams(&set);
    let mut runs = Vec::new();
    for &precision in &args.precision {
        let t = Instant::now();
        let classifier = Classifier::load(&model, ClassifierOptions { precision, ..ClassifierOptions::default() })?;
        let settings = run_precision(&set, &streams, &classifier, &filter)?;
        eprintln!("bench quality: {precision} done in {:.0} s", t.elapsed().as_secs_f64());
        runs.push(Run { precision, loaded: classifier.precision(), seconds: t.elapsed().as_secs_f64(), settings });
    }
    let m = &set.manifest;
    let report = Report {
        set: SetSummary {
            dir: set.dir.display().to_string(),
            hash: m.hash.clone(),
            seed: m.seed,
            recordings: m.birds.len(),
            labelled_windows: m.birds.iter().flat_map(|b| &b.windows).filter(|w| w.scored).count(),
            noise_kinds: m.noises.len(),
            mixes: m.mixes.len(),
            snr_db: m.snr_db.clone(),
            noise_minutes: m.noises.iter().map(|n| n.seconds).sum::<f64>() / 60.0,
            noise_place: m.noise_place.clone(),
        },
        model_dir: model.path.display().to_string(),
        hub_threshold: HUB_THRESHOLD,
        seconds: started.elapsed().as_secs_f64(),
        runs,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_tables(&report);
    }
    Ok(ExitCode::SUCCESS)
}

/// Every recording clean, every mix, every non-bird sound alone.
fn streams(set: &Set) -> Vec<Stream> {
    let m = &set.manifest;
    let clean =
        m.birds.iter().enumerate().map(|(bird, b)| Stream { kind: Kind::Clean { bird }, place: b.place.clone() });
    let mixes = m
        .mixes
        .iter()
        .enumerate()
        .map(|(mix, x)| Stream { kind: Kind::Mix { mix }, place: m.birds[x.bird].place.clone() });
    let noise = (0..m.noises.len()).map(|noise| Stream { kind: Kind::Noise { noise }, place: m.noise_place.clone() });
    clean.chain(mixes).chain(noise).collect()
}

/// The set through one network, scored under every setting.
fn run_precision(
    set: &Set,
    streams: &[Stream],
    classifier: &Classifier,
    filter: &RangeFilter,
) -> anyhow::Result<Vec<SettingResult>> {
    let labels = classifier.labels();
    let policies: Vec<Policy> =
        Setting::ALL.iter().map(|s| Policy::new(&s.team_settings(), HUB_THRESHOLD, labels)).collect();
    let mut tallies = vec![Tally::default(); Setting::ALL.len()];
    let m = &set.manifest;
    let species = |code: &str| labels.index_of(code).with_context(|| format!("the model has no species {code}"));
    for stream in streams {
        let samples: std::borrow::Cow<'_, [f32]> = match stream.kind {
            Kind::Clean { bird } => (&set.birds[bird][..]).into(),
            Kind::Mix { mix } => set.mixed(&m.mixes[mix]).into(),
            Kind::Noise { noise } => (&set.noises[noise][..]).into(),
        };
        let windows = audio::windows(&samples, 0);
        let starts: Vec<usize> = windows.iter().map(|(s, _)| *s).collect();
        let mut logits = Vec::with_capacity(windows.len());
        for batch in windows.chunks(BATCH) {
            logits.extend(classifier.logits(&batch.iter().map(|(_, w)| w.as_slice()).collect::<Vec<_>>())?);
        }
        drop(windows);
        let p = &stream.place;
        let scores = filter.scores(p.lat, p.lon, p.week)?;
        let half = (audio::WINDOW / 2) as isize;
        let mut shifted = |i: usize, shift: Shift| -> anyhow::Result<Vec<f32>> {
            let at = starts[i] as isize + if shift == Shift::Back { -half } else { half };
            let window = set::window_at(&samples, at);
            Ok(classifier.logits(&[&window])?.into_iter().next().unwrap_or_default())
        };
        for ((setting, policy), tally) in Setting::ALL.iter().zip(&policies).zip(tallies.iter_mut()) {
            let o = score::evaluate(policy, *setting, &starts, &logits, Some(&scores), &mut shifted)?;
            tally.add_run(&o);
            let (bird, condition) = match stream.kind {
                Kind::Noise { noise } => {
                    let n = tally.noise.entry(m.noises[noise].kind.clone()).or_default();
                    n.windows += o.kept.len();
                    n.detections += o.kept.iter().map(Vec::len).sum::<usize>();
                    continue;
                }
                Kind::Clean { bird } => (bird, "clean".to_owned()),
                Kind::Mix { mix } => (m.mixes[mix].bird, format!("{:+} dB", m.mixes[mix].snr_db)),
            };
            let b = &m.birds[bird];
            anyhow::ensure!(
                b.windows.len() == o.kept.len() && b.windows.iter().zip(&starts).all(|(w, s)| w.start == *s),
                "{}: its windows differ from the manifest's",
                b.id
            );
            for (w, kept) in b.windows.iter().zip(&o.kept) {
                if !w.scored {
                    continue;
                }
                let want = w.species.iter().map(|c| species(c)).collect::<anyhow::Result<Vec<_>>>()?;
                tally.birds.entry(condition.clone()).or_default().add(&want, kept);
                tally.groups.entry(b.group.clone()).or_default().entry(condition.clone()).or_default().add(&want, kept);
            }
        }
    }
    Ok(Setting::ALL
        .iter()
        .zip(tallies)
        .map(|(s, tally)| SettingResult { setting: *s, name: s.name(), tally })
        .collect())
}

fn print_tables(r: &Report) {
    let s = &r.set;
    println!("birdhub bench quality: set {} (seed {}) in {}", s.hash, s.seed, s.dir);
    println!(
        "  {} bird recordings ({} labelled windows) x {} non-bird sounds x SNR {} = {} mixes; {:.0} min of non-bird sound alone at {}",
        s.recordings,
        s.labelled_windows,
        s.noise_kinds,
        s.snr_db.iter().map(|d| format!("{d:+}")).collect::<Vec<_>>().join("/"),
        s.mixes,
        s.noise_minutes,
        s.noise_place.name
    );
    let conditions: Vec<String> =
        std::iter::once("clean".to_owned()).chain(s.snr_db.iter().map(|d| format!("{d:+} dB"))).collect();
    println!();
    println!("recall/precision on bird windows; FP/h = detections per hour of non-bird sound alone");
    print!("{:<14} {:<5} {:>8}", "setting", "prec", "FP/h");
    for c in &conditions {
        print!("  {c:>11}");
    }
    println!("  {:>11}  {:>7}", "all mixes", "extra/w");
    for run in &r.runs {
        for res in &run.settings {
            let t = &res.tally;
            print!("{:<14} {:<5} {:>8.1}", res.name, precision_name(run), t.noise_total().per_hour());
            for c in &conditions {
                print!("  {:>11}", rp(t.birds.get(c)));
            }
            let mixes =
                conditions[1..].iter().filter_map(|c| t.birds.get(c).copied()).fold(score::BirdScore::default(), sum);
            println!("  {:>11}  {:>7.3}", rp(Some(&mixes)), t.extra_calls_per_window());
        }
    }
    println!();
    println!("false positives per hour, by non-bird sound (alone)");
    let kinds: Vec<&String> =
        r.runs.first().and_then(|run| run.settings.first()).map_or(Vec::new(), |res| res.tally.noise.keys().collect());
    print!("{:<14} {:<5}", "setting", "prec");
    for k in &kinds {
        print!(" {k:>7}");
    }
    println!();
    for run in &r.runs {
        for res in &run.settings {
            print!("{:<14} {:<5}", res.name, precision_name(run));
            for k in &kinds {
                print!(" {:>7.1}", res.tally.noise.get(*k).map_or(0.0, score::NoiseScore::per_hour));
            }
            println!();
        }
    }
    println!();
    println!("recall by recording group (clean / all mixes)");
    let groups: Vec<&String> =
        r.runs.first().and_then(|run| run.settings.first()).map_or(Vec::new(), |res| res.tally.groups.keys().collect());
    print!("{:<14} {:<5}", "setting", "prec");
    for g in &groups {
        print!(" {g:>17}");
    }
    println!();
    for run in &r.runs {
        for res in &run.settings {
            print!("{:<14} {:<5}", res.name, precision_name(run));
            for g in &groups {
                let by = res.tally.groups.get(*g);
                let clean = by.and_then(|b| b.get("clean")).and_then(score::BirdScore::recall);
                let mixes = by
                    .map(|b| {
                        b.iter()
                            .filter(|(c, _)| *c != "clean")
                            .fold(score::BirdScore::default(), |a, (_, s)| sum(a, *s))
                    })
                    .and_then(|s| s.recall());
                print!(" {:>17}", format!("{} / {}", num(clean), num(mixes)));
            }
            println!();
        }
    }
    println!();
    for run in &r.runs {
        let find = |s: Setting| run.settings.iter().find(|x| x.setting == s).map(|x| &x.tally);
        if let (Some(today), Some(new)) = (find(Setting::Today), find(Setting::New)) {
            println!(
                "{}: hub before flagged {} kept detections not expected here; new defaults held {} for a second look ({} confirmed), emptied {} chunks for a voice; {:.0} s",
                precision_name(run),
                today.flagged,
                new.held,
                new.confirmed,
                new.privacy_dropped,
                run.seconds
            );
        }
    }
    println!("total {:.0} s", r.seconds);
}

fn precision_name(run: &Run) -> String {
    if run.loaded == run.precision { run.precision.to_string() } else { format!("{}!", run.loaded) }
}

fn sum(a: score::BirdScore, b: score::BirdScore) -> score::BirdScore {
    score::BirdScore {
        windows: a.windows + b.windows,
        labelled: a.labelled + b.labelled,
        kept: a.kept + b.kept,
        correct: a.correct + b.correct,
    }
}

fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"))
}

/// `recall/precision`.
fn rp(s: Option<&score::BirdScore>) -> String {
    s.map_or_else(|| "-".to_owned(), |s| format!("{}/{}", num(s.recall()), num(s.precision())))
}
