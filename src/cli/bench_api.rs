//! `birdhub bench api`: read latency and SQLite work of the lists, statistics and pages on a hub
//! with a year of data. The database is seeded once (see `bench_api_seed.rs`) into a data dir
//! kept between runs, then a real hub is started on it in this process (loopback ports, no
//! model) and one client times sequential requests over one keep-alive connection
//! (`bench_api_time.rs`): per case p50/p99, the p99 with the process pinned to one core, the VM
//! steps of a request against the work budget, the database size and the process's peak RSS.
//!
//! The live hub never runs `ANALYZE` or `PRAGMA optimize` (see `store/mod.rs`), so neither does
//! the seeding: the planner sees the database exactly as a hub that grew it would have it.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::Context;
use serde_json::{Value, json};

use super::{
    bench::peak_rss_mb,
    bench_api_seed::{self as seed, Plan},
    bench_api_time::{Getter, WARMUP, current, pin},
};
use crate::{app, config::Settings, store};

#[derive(Debug, clap::Args)]
pub struct ApiArgs {
    /// Detections to seed.
    #[arg(long, default_value_t = 2_000_000)]
    pub detections: u64,
    /// Species (at most 50), with a Zipf-like frequency.
    #[arg(long, default_value_t = 50)]
    pub species: usize,
    /// Satellites recording at dawn and dusk.
    #[arg(long, default_value_t = 20)]
    pub satellites: usize,
    /// Days of recordings.
    #[arg(long, default_value_t = 365)]
    pub days: u32,
    /// Timed requests per case (after 20 warm-up requests).
    #[arg(long, default_value_t = 300)]
    pub requests: usize,
    /// Which cases to time: `lists` (detections and sessions), `stats` (SPEC 4.8), `pages` (the
    /// dashboard's server render time per page) or `all`.
    #[arg(long, default_value = "all", value_parser = ["all", "lists", "stats", "pages"])]
    pub suite: String,
    /// Where the seeded hub is kept and reused by later runs with the same figures
    /// (default: ~/.cache/birdhub/bench-api-DETECTIONS-SPECIES-SATELLITES-DAYS).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Time every case a second time with the whole process pinned to this CPU (`taskset`),
    /// the nearest thing to a Raspberry Pi core; `none` skips the pinned pass.
    #[arg(long, default_value = "0")]
    pub pin_cpu: String,
}

/// The query parameter a case adds to its `i`th request.
type Param<'a> = Box<dyn Fn(usize) -> String + 'a>;

/// The work budget of a statistics route or a dashboard page, in SQLite VM steps per request:
/// what reading and grouping about 30,000 rollup rows costs (some 25 steps a row). It holds at 2
/// million detections because those reads grow with the days, species and satellites of the
/// range, never with the detections.
pub const WORK_BUDGET: u64 = 750_000;
/// The pinned p99 goal of a dashboard page.
const PAGE_GOAL_MS: f64 = 150.0;
/// The p99 goal of a list page without its total.
const GOAL_MS: f64 = 20.0;
/// Written next to the database: which figures it was seeded with, and whether seeding finished.
const MARKER: &str = "bench-api.json";

pub async fn run(settings: &Settings, args: ApiArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        args.detections > 0 && args.species > 0 && args.satellites > 0 && args.days > 0 && args.requests > 0,
        "--detections, --species, --satellites, --days and --requests must be positive"
    );
    let known = seed::species(usize::MAX).len();
    anyhow::ensure!(args.species <= known, "--species is at most {known}");
    let dir = match &args.data_dir {
        Some(d) => d.clone(),
        None => {
            let home = std::env::var_os("HOME").context("HOME is not set; pass --data-dir")?;
            PathBuf::from(home)
                .join(".cache/birdhub")
                .join(format!("bench-api-{}-{}-{}-{}", args.detections, args.species, args.satellites, args.days))
        }
    };
    println!(
        "birdhub bench api: {} detections, {} species, {} satellites, {} days; data dir {}",
        args.detections,
        args.species,
        args.satellites,
        args.days,
        dir.display()
    );
    let seeded = prepare(&dir, &args).await?;
    let hub = start_hub(settings, &dir, true).await?;
    let measured = measure(&hub, &args, &dir, seeded).await;
    let stopped = hub.stop().await;
    measured?;
    stopped?;
    Ok(ExitCode::SUCCESS)
}

/// Seeds `dir`, or reuses what an earlier run seeded there with the same figures. Returns
/// whether it seeded.
async fn prepare(dir: &Path, args: &ApiArgs) -> anyhow::Result<bool> {
    let figures = json!({
        "detections": args.detections, "species": args.species, "satellites": args.satellites, "days": args.days,
        // 2: the seeded verdicts come with their votes. 3: chunks have the ingest's derived
        // storage key (stored as '', migration 0016).
        "seed": 3,
    });
    let marker = dir.join(MARKER);
    let db = dir.join("birdhub.db");
    match std::fs::read(&marker).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok()) {
        Some(m) if m["state"] == "seeded" && m["figures"] == figures => {
            println!(
                "database:  reused (seeded earlier in {:.0} s; remove {} to seed again)",
                m["seconds"].as_f64().unwrap_or(0.0),
                dir.display()
            );
            return Ok(false);
        }
        // Ours, but unfinished or seeded with other figures: start over.
        Some(_) => {
            for suffix in ["", "-wal", "-shm"] {
                let f = dir.join(format!("birdhub.db{suffix}"));
                if f.exists() {
                    std::fs::remove_file(&f).with_context(|| format!("removing {}", f.display()))?;
                }
            }
        }
        None => anyhow::ensure!(
            !db.exists(),
            "{} holds a database that bench api did not seed; pick another --data-dir",
            dir.display()
        ),
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(&marker, json!({ "state": "seeding", "figures": figures }).to_string())?;
    let plan = Plan {
        detections: args.detections,
        species: args.species,
        satellites: args.satellites,
        days: args.days,
        end: "2026-11-01T00:00:00Z".parse()?,
    };
    let seeded = seed::seed(dir, &plan).await?;
    let seconds = seeded.elapsed.as_secs_f64();
    std::fs::write(&marker, json!({ "state": "seeded", "figures": figures, "seconds": seconds }).to_string())?;
    println!(
        "database:  seeded in {seconds:.0} s: {} detections in {} chunks ({:.0} detections/s; the satellites' filters passed {:.1} % of 3 s slots; peak RSS {:.0} MB)",
        seeded.detections,
        seeded.chunks,
        seeded.detections as f64 / seconds,
        seeded.pass_rate * 100.0,
        peak_rss_mb()
    );
    // Start the high-water mark again (Linux: "5" resets VmHWM), so the peak printed at the end
    // is the hub's and the client's, not the seeding connection's page cache.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    Ok(true)
}

/// A hub on the seeded `data` on loopback ports. With `with_model`, it runs the classifier model
/// where the hub would find it (`inference.model_dir`, else `models/birdnet-v2.4` in the checkout,
/// else the system's), so the species pages are timed with the real names, pictures and range
/// model; it says which, or why there is none (the cases that need it are then skipped, see
/// `bench_api_pages::cases`). Without, it runs none (the export bench).
pub(super) async fn start_hub(base: &Settings, data: &Path, with_model: bool) -> anyhow::Result<app::Hub> {
    let mut s = Settings { data_dir: data.to_path_buf(), log_level: "error".into(), ..base.clone() };
    s.http.bind = "127.0.0.1:0".parse()?;
    s.mqtt.bind = "127.0.0.1:0".parse()?;
    s.mqtt.ws_bind = "127.0.0.1:0".parse()?;
    let model = crate::inference::ModelDir::locate(&base.inference.model_dir).and_then(|d| d.check().map(|()| d));
    s.inference.model_dir = match model {
        Ok(dir) if with_model => {
            println!(
                "model:     {} (species names, pictures and the range model as the hub serves them)",
                dir.path.display()
            );
            dir.path.display().to_string()
        }
        Err(e) if with_model => {
            println!("model:     none ({e}); the cases that need it are skipped");
            data.join("no-model").display().to_string()
        }
        _ => data.join("no-model").display().to_string(),
    };
    // The bench is the only client: the public page's per-address limit would stop it.
    s.http.public_page_per_minute = 0;
    // No audio retention sweep. On a year seeded in one go every chunk is past
    // `keep_audio_days` at once, so the hub's first sweep expires 3.5 million chunks while the
    // cases are timed: its VM steps landed in whichever request was running (the counter is
    // the store's, not the request's) and its CPU in the pinned p99s. A hub that grew the year
    // swept as it went, 10 minutes' worth at a time.
    s.retention.keep_audio_days = 36_500;
    s.retention.min_free_disk_mb = 0;
    app::start(s).await
}

/// The database's size and row counts, as one line.
async fn describe(hub: &app::Hub, dir: &Path) -> anyhow::Result<String> {
    let size = |suffix: &str| std::fs::metadata(dir.join(format!("birdhub.db{suffix}"))).map_or(0, |m| m.len());
    let (db, wal) = (size(""), size("-wal"));
    let (detections, chunks, sessions, rollups) = hub
        .state
        .store
        .call(|c| {
            let sessions: i64 = c.query_row("SELECT count(*) FROM recording_sessions", [], |r| r.get(0))?;
            let mut rollups = 0i64;
            for table in store::stats::rollups::TABLES {
                rollups += c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get::<_, i64>(0))?;
            }
            Ok((store::detections::count(c)?, store::chunks::count(c)?, sessions, rollups))
        })
        .await?;
    let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
    Ok(format!(
        "{:.0} MB (birdhub.db {:.0} MB + WAL {:.0} MB): {detections} detections, {chunks} chunks, {sessions} sessions, \
         {rollups} rollup rows; {:.0} bytes of file a detection",
        mb(db + wal),
        mb(db),
        mb(wal),
        (db + wal) as f64 / detections.max(1) as f64
    ))
}

/// Logs in, times every case and prints the results.
async fn measure(hub: &app::Hub, args: &ApiArgs, dir: &Path, seeded: bool) -> anyhow::Result<()> {
    println!("database:  {}", describe(hub, dir).await?);
    let base = format!("http://{}/api", hub.http_addr);
    let client = reqwest::Client::new();
    let token = seed::login(&client, &base).await?;
    let get = Getter { client, token, store: hub.state.store.clone() };

    let mut ids = Vec::new();
    for sort in ["date", "confidence", "species"] {
        let page = get.json(&format!("{base}/detections?limit=100&sortBy={sort}&withCount=false")).await?;
        let rows = page["detections"].as_array().context("no detections in the list")?;
        ids.extend(rows.iter().filter_map(|d| d["id"].as_str().map(str::to_owned)));
    }
    anyhow::ensure!(!ids.is_empty(), "the seeded database lists no detections");
    let codes: Vec<String> = seed::species(args.species).into_iter().map(|(code, ..)| code).collect();
    let n = WARMUP + args.requests;
    let list = |extra: &dyn Fn(usize) -> String| -> Vec<String> {
        (0..n).map(|i| format!("{base}/detections?limit=50&offset={}{}", (i % 4) * 50, extra(i))).collect()
    };
    let filters: [(&str, Param<'_>); 8] = [
        ("default sort", Box::new(|_| String::new())),
        ("species", Box::new(|i| format!("&species={}", codes[i % codes.len()]))),
        ("speciesSearch", Box::new(|i| format!("&speciesSearch={}", seed::SEARCH_WORDS[i % seed::SEARCH_WORDS.len()]))),
        ("verificationStatus=confirmed", Box::new(|_| "&verificationStatus=confirmed".into())),
        // Beyond the four: the other sorts and the filters that once fooled the planner.
        ("minConfidence=0.9", Box::new(|_| "&minConfidence=0.9".into())),
        ("sortBy=confidence", Box::new(|_| "&sortBy=confidence".into())),
        ("sortBy=species", Box::new(|_| "&sortBy=species".into())),
        (
            "review queue (pending_review by confidence)",
            Box::new(|_| "&verificationStatus=pending_review&sortBy=confidence".into()),
        ),
    ];
    let mut cases: Vec<(String, Vec<String>, &str)> = Vec::new();
    let lists = args.suite == "all" || args.suite == "lists";
    for count in [true, false].into_iter().filter(|_| lists) {
        for (name, f) in &filters {
            let suffix = if count { "" } else { "&withCount=false" };
            let label = format!("/detections {name}{}", if count { "" } else { ", withCount=false" });
            cases.push((label, list(&|i| format!("{}{suffix}", f(i))), "detections"));
        }
    }
    let sessions = |sort: &str| -> Vec<String> {
        (0..n).map(|i| format!("{base}/sessions?limit=50&offset={}{sort}", (i % 4) * 50)).collect()
    };
    if lists {
        cases.push(("/sessions".into(), sessions(""), "sessions"));
        cases.push(("/sessions sortBy=detections".into(), sessions("&sortBy=detections"), "sessions"));
        cases.push((
            "/detections/:id".into(),
            (0..n).map(|i| format!("{base}/detections/{}", ids[i % ids.len()])).collect(),
            "id",
        ));
    }
    let sats = get.json(&format!("{base}/satellites?limit=100")).await?;
    let sats: Vec<String> = sats["satellites"]
        .as_array()
        .context("no satellites")?
        .iter()
        .filter_map(|s| s["id"].as_str().map(str::to_owned))
        .collect();
    if args.suite == "all" || args.suite == "stats" {
        anyhow::ensure!(sats.len() >= 2, "the stats cases need two satellites");
        cases.extend(super::bench_api_stats::cases(&base, n, &codes, &sats));
    }
    if args.suite == "all" || args.suite == "pages" {
        let http = format!("http://{}", hub.http_addr);
        cases.extend(super::bench_api_pages::cases(hub, &http, n, &ids, &codes, &sats));
        let team =
            get.json(&format!("{base}/settings/tenant")).await?["tenantId"].as_str().unwrap_or_default().to_owned();
        cases.extend(super::bench_api_pages::public_cases(hub, &http, n, &team, &codes).await?);
    }

    let pinned = match args.pin_cpu.as_str() {
        "none" => None,
        cpu => match current() {
            Ok(all) => Some((cpu.to_owned(), all)),
            Err(e) => {
                println!("pinned:    skipped ({e})");
                None
            }
        },
    };
    println!(
        "\n{:<58} {:>8} {:>8} {:>9} {:>11} {:>11}  requests  (limit=50, offsets 0-150, one keep-alive client)",
        "case",
        "p50 ms",
        "p99 ms",
        if pinned.is_some() { "pin p99" } else { "" },
        "steps p50",
        "steps max"
    );
    let mut worst = Worst::default();
    let mut over_budget = Vec::new();
    for (name, urls, key) in &cases {
        let times = get.time(urls, key).await?;
        let pinned_p99 = match &pinned {
            Some((cpu, all)) => {
                pin(cpu)?;
                let timed = get.time(urls, key).await;
                pin(all)?;
                Some(timed?.p(99.0))
            }
            None => None,
        };
        let (p99, (steps_p50, steps_max)) = (times.p(99.0), times.work());
        println!(
            "{name:<58} {:>8.2} {p99:>8.2} {:>9} {steps_p50:>11} {steps_max:>11}  {}",
            times.p(50.0),
            pinned_p99.map_or(String::new(), |p| format!("{p:.2}")),
            times.ms.len()
        );
        if let Some((steps, url)) = times.costliest.as_ref().filter(|(steps, _)| *steps > WORK_BUDGET) {
            println!(
                "    costliest request: {steps} steps: {}",
                url.split_once("/api").map_or(url.as_str(), |(_, u)| u)
            );
        }
        let judged = pinned_p99.unwrap_or(p99);
        if name.ends_with("withCount=false") {
            worst.list.keep(p99, name);
        }
        if name.starts_with("/stats") || name.starts_with("page ") {
            if steps_max > WORK_BUDGET {
                over_budget.push(format!("{name} ({steps_max})"));
            }
            let slot = if name.starts_with("/stats") { &mut worst.stats } else { &mut worst.page };
            slot.keep(judged, name);
            worst.steps.keep(steps_max as f64, name);
        }
    }
    println!("\ndatabase:  {}", describe(hub, dir).await?);
    let whose = if seeded {
        "since seeding, whose freed page cache the allocator may still hold; a run that reuses the database shows the hub's alone"
    } else {
        "the whole process: the hub and the client"
    };
    println!("peak RSS:  {:.0} MB ({whose})", peak_rss_mb());
    let how = if pinned.is_some() { "pinned p99" } else { "p99 (not pinned)" };
    let verdict = |v: f64, goal: f64| if v < goal { "under" } else { "OVER" };
    if let Some((p99, name)) = worst.list.0 {
        println!(
            "goal:      worst list p99 without the count {p99:.2} ms ({name}): {} the {GOAL_MS:.0} ms goal",
            verdict(p99, GOAL_MS)
        );
    }
    if let Some((ms, name)) = worst.stats.0 {
        let goal = super::bench_api_stats::GOAL_MS;
        println!("goal:      worst stats {how} {ms:.2} ms ({name}): {} the {goal:.0} ms goal", verdict(ms, goal));
    }
    if let Some((ms, name)) = worst.page.0 {
        println!(
            "goal:      worst page {how} {ms:.2} ms ({name}, server render with its /api reads): {} the {PAGE_GOAL_MS:.0} ms goal",
            verdict(ms, PAGE_GOAL_MS)
        );
    }
    if let Some((steps, name)) = worst.steps.0 {
        println!(
            "goal:      most SQLite work of a stats route or page {steps:.0} VM steps ({name}): {} the budget of {WORK_BUDGET}",
            verdict(steps, WORK_BUDGET as f64 + 1.0)
        );
        if !over_budget.is_empty() {
            println!("           over the budget: {}", over_budget.join(", "));
        }
    }
    Ok(())
}

/// The slowest (or costliest) case of each kind so far.
#[derive(Default)]
struct Worst {
    list: Most,
    stats: Most,
    page: Most,
    steps: Most,
}

#[derive(Default)]
struct Most(Option<(f64, String)>);

impl Most {
    fn keep(&mut self, v: f64, name: &str) {
        if self.0.as_ref().is_none_or(|(w, _)| v > *w) {
            self.0 = Some((v, name.to_owned()));
        }
    }
}
