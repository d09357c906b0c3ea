//! `birdhub bench api`: read latency of the detection and session lists on a hub with a year of
//! data. The database is seeded once (see `bench_api_seed.rs`) into a data dir kept between runs,
//! then a real hub is started on it in this process (loopback ports, no model) and one client
//! times sequential requests over one keep-alive connection: p50/p99 per case, the database size
//! and the process's peak RSS.
//!
//! The live hub never runs `ANALYZE` or `PRAGMA optimize` (see `store/mod.rs`), so neither does
//! the seeding: the planner sees the database exactly as a hub that grew it would have it.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::Instant,
};

use anyhow::Context;
use serde_json::{Value, json};

use super::{
    bench::{peak_rss_mb, percentile},
    bench_api_seed::{self as seed, Plan},
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
}

/// The query parameter a case adds to its `i`th request.
type Param<'a> = Box<dyn Fn(usize) -> String + 'a>;

/// Untimed requests before each case.
const WARMUP: usize = 20;
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
    let hub = start_hub(settings, &dir).await?;
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

pub(super) async fn start_hub(base: &Settings, data: &Path) -> anyhow::Result<app::Hub> {
    let mut s = Settings { data_dir: data.to_path_buf(), log_level: "error".into(), ..base.clone() };
    s.http.bind = "127.0.0.1:0".parse()?;
    s.mqtt.bind = "127.0.0.1:0".parse()?;
    s.mqtt.ws_bind = "127.0.0.1:0".parse()?;
    s.inference.model_dir = data.join("no-model").display().to_string();
    // The bench is the only client: the public page's per-address limit would stop it.
    s.http.public_page_per_minute = 0;
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
    let get = Getter { client, token };

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
        cases.extend(super::bench_api_pages::cases(&http, n, &ids, &codes, &sats));
        let team =
            get.json(&format!("{base}/settings/tenant")).await?["tenantId"].as_str().unwrap_or_default().to_owned();
        cases.extend(super::bench_api_pages::public_cases(hub, &http, n, &team, &codes).await?);
    }

    println!(
        "\n{:<58} {:>8} {:>8} {:>8}  requests  (limit=50, offsets 0-150, one keep-alive client)",
        "case", "p50 ms", "p99 ms", "mean ms"
    );
    let mut worst: Option<(f64, String)> = None;
    let mut worst_stats: Option<(f64, String)> = None;
    let mut worst_page: Option<(f64, String)> = None;
    for (name, urls, key) in &cases {
        let times = get.time(urls, key).await?;
        let p99 = percentile(&times, 99.0);
        println!(
            "{name:<58} {:>8.2} {p99:>8.2} {:>8.2}  {}",
            percentile(&times, 50.0),
            times.iter().sum::<f64>() / times.len().max(1) as f64,
            times.len()
        );
        if name.ends_with("withCount=false") && worst.as_ref().is_none_or(|(w, _)| p99 > *w) {
            worst = Some((p99, name.clone()));
        }
        if name.starts_with("/stats") && worst_stats.as_ref().is_none_or(|(w, _)| p99 > *w) {
            worst_stats = Some((p99, name.clone()));
        }
        if name.starts_with("page ") && worst_page.as_ref().is_none_or(|(w, _)| p99 > *w) {
            worst_page = Some((p99, name.clone()));
        }
    }
    println!("\ndatabase:  {}", describe(hub, dir).await?);
    let whose = if seeded {
        "since seeding, whose freed page cache the allocator may still hold; a run that reuses the database shows the hub's alone"
    } else {
        "the whole process: the hub and the client"
    };
    println!("peak RSS:  {:.0} MB ({whose})", peak_rss_mb());
    if let Some((p99, name)) = worst {
        let verdict = if p99 < GOAL_MS { "under" } else { "OVER" };
        println!(
            "goal:      worst list p99 without the count {p99:.2} ms ({name}): {verdict} the {GOAL_MS:.0} ms goal"
        );
    }
    if let Some((p99, name)) = worst_stats {
        let goal = super::bench_api_stats::GOAL_MS;
        let verdict = if p99 < goal { "under" } else { "OVER" };
        println!("goal:      worst stats p99 {p99:.2} ms ({name}): {verdict} the {goal:.0} ms goal");
    }
    if let Some((p99, name)) = worst_page {
        println!("pages:     worst dashboard page p99 {p99:.2} ms ({name}), server render including its /api reads");
    }
    Ok(())
}

/// One HTTP client with the session token.
struct Getter {
    client: reqwest::Client,
    token: String,
}

impl Getter {
    async fn json(&self, url: &str) -> anyhow::Result<Value> {
        let resp = self.client.get(url).bearer_auth(&self.token).send().await?;
        let status = resp.status();
        let body = resp.text().await?;
        anyhow::ensure!(status.is_success(), "GET {url}: {status}: {body}");
        Ok(serde_json::from_str(&body)?)
    }

    /// Requests `urls` in turn; returns the sorted latencies (ms) after the warm-up. The first
    /// timed answer must hold rows under `key` (or be a detection, for `id`); a name search may
    /// match none of fewer species.
    async fn time(&self, urls: &[String], key: &str) -> anyhow::Result<Vec<f64>> {
        let mut times = Vec::with_capacity(urls.len());
        for (i, url) in urls.iter().enumerate() {
            let t = Instant::now();
            // The API reads the bearer token; dashboard pages read the session cookie.
            let resp = self
                .client
                .get(url)
                .bearer_auth(&self.token)
                .header(reqwest::header::COOKIE, format!("birdhub_session={}", self.token))
                .send()
                .await?;
            let status = resp.status();
            let body = resp.bytes().await?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            anyhow::ensure!(
                status == reqwest::StatusCode::OK,
                "GET {url}: {status}: {}",
                String::from_utf8_lossy(&body)
            );
            if i == WARMUP && key != "-" && !url.contains("speciesSearch") {
                let v: Value = serde_json::from_slice(&body)?;
                let rows =
                    if key == "id" { v["id"].is_string() } else { v[key].as_array().is_some_and(|a| !a.is_empty()) };
                anyhow::ensure!(rows, "GET {url} returned nothing");
            }
            if i >= WARMUP {
                times.push(ms);
            }
        }
        times.sort_by(f64::total_cmp);
        Ok(times)
    }
}
