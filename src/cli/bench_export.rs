//! `birdhub bench export`: downloads `GET /export/detections?format=csv` for the whole range of
//! the year `bench api` seeded (2,000,000 detections by default) over real HTTP and prints rows,
//! bytes, time to first byte, total time, rows/s, the process's peak RSS and its RSS at 10 %,
//! 50 % and 100 % of the rows: memory must not grow with the row count.
//!
//! The seeded directory is only read: its database (and secrets) are copied into a scratch
//! directory beside it, the hub runs on the copy, and the copy is removed afterwards.

use std::{path::PathBuf, process::ExitCode, time::Instant};

use anyhow::Context;

use super::{bench::peak_rss_mb, bench_api::start_hub, bench_api_seed as seed};
use crate::{config::Settings, jobs::registry::resident_memory_bytes, store};

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The data dir `bench api` seeded (default: ~/.cache/birdhub/bench-api-2000000-50-20-365).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

pub async fn run(settings: &Settings, args: ExportArgs) -> anyhow::Result<ExitCode> {
    let seeded = match args.data_dir {
        Some(d) => d,
        None => PathBuf::from(std::env::var_os("HOME").context("HOME is not set; pass --data-dir")?)
            .join(".cache/birdhub/bench-api-2000000-50-20-365"),
    };
    anyhow::ensure!(
        seeded.join("birdhub.db").is_file(),
        "{} holds no seeded database: run `birdhub bench api` first",
        seeded.display()
    );
    let scratch = seeded.with_file_name(format!(
        "{}-export-scratch-{}",
        seeded.file_name().and_then(|n| n.to_str()).unwrap_or("bench"),
        std::process::id()
    ));
    std::fs::create_dir_all(&scratch)?;
    let t = Instant::now();
    let copied = ["birdhub.db", "birdhub.db-wal", "secrets.toml"].iter().try_for_each(|name| {
        let from = seeded.join(name);
        if from.exists() {
            std::fs::copy(&from, scratch.join(name)).with_context(|| format!("copying {}", from.display()))?;
        }
        anyhow::Ok(())
    });
    if let Err(e) = copied {
        let _ = std::fs::remove_dir_all(&scratch);
        return Err(e);
    }
    println!(
        "birdhub bench export: copied {} to {} in {:.0} s",
        seeded.display(),
        scratch.display(),
        t.elapsed().as_secs_f64()
    );
    let result = measure(settings, &scratch).await;
    std::fs::remove_dir_all(&scratch).with_context(|| format!("removing {}", scratch.display()))?;
    result?;
    Ok(ExitCode::SUCCESS)
}

async fn measure(settings: &Settings, dir: &std::path::Path) -> anyhow::Result<()> {
    let hub = start_hub(settings, dir, false).await?;
    let result = download(&hub).await;
    hub.stop().await?;
    result
}

async fn download(hub: &crate::app::Hub) -> anyhow::Result<()> {
    let total = hub.state.store.call(|c| store::detections::count(c)).await?;
    let base = format!("http://{}/api", hub.http_addr);
    let client = reqwest::Client::new();
    let token = seed::login(&client, &base).await?;
    // Start the high-water mark here (Linux: "5" resets VmHWM): the peak is the export's.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let rss_before = resident_memory_bytes().unwrap_or(0);
    let url = format!("{base}/export/detections?format=csv");
    let t = Instant::now();
    let mut resp = client.get(&url).bearer_auth(&token).send().await?;
    anyhow::ensure!(resp.status().is_success(), "GET {url}: {}", resp.status());
    let name = resp.headers().get("content-disposition").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let (mut bytes, mut lines, mut first_byte) = (0u64, 0u64, None);
    let marks = [total / 10, total / 2, total];
    let mut samples: Vec<(u64, f64)> = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        first_byte.get_or_insert_with(|| t.elapsed());
        bytes += chunk.len() as u64;
        lines += chunk.iter().filter(|b| **b == b'\n').count() as u64;
        let rows = lines.saturating_sub(1);
        if let Some(&mark) = marks.get(samples.len())
            && rows >= mark
        {
            samples.push((rows, mb(resident_memory_bytes().unwrap_or(0))));
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let rows = lines.saturating_sub(1);
    println!("export:    {name}");
    println!("rows:      {rows} of {total} detections in the database");
    println!("bytes:     {bytes} ({:.0} MB)", mb(bytes));
    println!("first byte {:.1} ms", first_byte.unwrap_or_default().as_secs_f64() * 1e3);
    println!("total:     {secs:.1} s, {:.0} rows/s, {:.1} MB/s", rows as f64 / secs, mb(bytes) / secs);
    println!("RSS:       {:.0} MB before the request", mb(rss_before));
    for ((at, rss), pct) in samples.iter().zip(["10 %", "50 %", "100 %"]) {
        println!("RSS:       {rss:.0} MB at {pct} of the rows ({at})");
    }
    println!("peak RSS:  {:.0} MB during the export (hub and client in one process)", peak_rss_mb());
    anyhow::ensure!(rows == total, "the export held {rows} rows, the database {total}");
    Ok(())
}
