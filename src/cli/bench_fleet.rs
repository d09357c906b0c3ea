//! `birdhub bench pipeline --real-satellites N`: N real `birdhub satellite` processes (this
//! binary) record a folder of the fixture as fast as they can and send it to a real hub in this
//! process. Prints what a Pi Zero 2 budget needs: chunks/s the hub stored, the satellites' ack
//! latency (sent to acked, from their own outboxes), and each satellite's CPU per chunk and RSS.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, ExitCode, Stdio},
    time::{Duration, Instant},
};

use anyhow::Context;

use super::{
    bench::percentile,
    bench_pipeline::{Sat, make_satellites, start_hub},
};
use crate::{
    app,
    config::Settings,
    inference::ModelDir,
    satellite::{capture::Pace, register, settings::SatelliteSettings},
};

struct Proc {
    child: Child,
    dir: PathBuf,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub async fn run(settings: &Settings, n: usize, seconds: u64) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(n > 0 && seconds > 0, "--real-satellites and --seconds must be positive");
    let fixture = ModelDir::locate(&settings.inference.model_dir)?.file("fixtures/birds_10s.wav");
    let hub = start_hub(settings, false).await?;
    let sats = make_satellites(&hub, n).await?;
    let root = std::env::temp_dir().join(format!("birdhub-bench-fleet-{}", uuid::Uuid::new_v4()));
    let exe = std::env::current_exe()?;
    let mut procs = Vec::with_capacity(n);
    for (i, s) in sats.iter().enumerate() {
        procs.push(spawn(&exe, &hub, s, &root.join(format!("sat-{i}")), &fixture)?);
    }
    println!("real satellites: {n} `birdhub satellite` processes (dir source of the 10 s fixture, fast pace,");
    println!("  RMS gate, SQLite outbox, QoS 1) -> hub in this process without the classifier, {seconds} s");

    tokio::time::sleep(Duration::from_secs(3)).await;
    let (count0, cpu0, t0) = (stored(&hub).await?, cpu_seconds(&procs), Instant::now());
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let (count1, cpu1, elapsed) = (stored(&hub).await?, cpu_seconds(&procs), t0.elapsed().as_secs_f64());
    let rss: Vec<(f64, f64)> = procs.iter().map(|p| rss_mb(p.child.id())).collect();
    let chunks = count1 - count0;
    let cpu: f64 = cpu1.iter().zip(&cpu0).map(|(a, b)| a - b).sum();
    let mut latencies = Vec::new();
    for p in &procs {
        latencies.extend(ack_latencies_ms(&p.dir.join("data/outbox/outbox.db"))?);
    }
    latencies.sort_by(f64::total_cmp);

    println!("chunks/s stored by the hub: {:.1} ({chunks} in {elapsed:.1} s)", chunks as f64 / elapsed);
    println!(
        "ack latency (satellite sent -> ack recorded): p50 {:.1} ms, p99 {:.1} ms over {} chunks",
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        latencies.len()
    );
    if chunks > 0 {
        let per_chunk_ms = cpu * 1000.0 / chunks as f64;
        println!(
            "satellite CPU per chunk: {per_chunk_ms:.2} ms (user+sys: decode, resample, RMS, WAV, SQLite, MQTT); \
             at one chunk per 3 s that is {:.2}% of one core",
            per_chunk_ms / 3000.0 * 100.0
        );
    }
    let peak = rss.iter().map(|r| r.1).fold(0.0, f64::max);
    let mean = rss.iter().map(|r| r.0).sum::<f64>() / rss.len() as f64;
    println!("satellite RSS: {mean:.1} MB now (mean of {n}), {peak:.1} MB peak");
    drop(procs);
    hub.stop().await?;
    let _ = std::fs::remove_dir_all(&root);
    Ok(ExitCode::SUCCESS)
}

fn spawn(exe: &Path, hub: &app::Hub, s: &Sat, dir: &Path, fixture: &Path) -> anyhow::Result<Proc> {
    let recordings = dir.join("recordings");
    std::fs::create_dir_all(&recordings)?;
    for i in 0..2 {
        std::fs::copy(fixture, recordings.join(format!("birds-{i}.wav")))?;
    }
    let mut cfg = register::fresh(None);
    cfg.hub_url = format!("http://{}", hub.http_addr);
    (cfg.mqtt_host, cfg.mqtt_port) = ("127.0.0.1".into(), hub.mqtt_addr.context("no broker")?.port());
    (cfg.satellite_id, cfg.tenant_id) = (s.id.0, s.tenant.0);
    cfg.name = format!("bench-{}", s.id);
    cfg.mqtt_password = s.password.clone();
    cfg.source = format!("dir:{}", recordings.display());
    (cfg.pace, cfg.loop_dir) = (Pace::Fast, true);
    cfg.data_dir = dir.join("data");
    cfg.version_command = format!("echo birdhub {}", env!("CARGO_PKG_VERSION"));
    cfg.update_command = "true".into();
    cfg.resend_per_sec = 1000;
    cfg.topic_root = hub.state.settings.mqtt.topic_root.clone();
    let path = dir.join("satellite.toml");
    SatelliteSettings::save(&cfg, &path)?;
    let log = std::fs::File::create(dir.join("satellite.log"))?;
    let child = Command::new(exe)
        .args(["satellite", "run", "--config"])
        .arg(&path)
        .env("RUST_LOG", "warn")
        // As birdhub-satellite.service runs it.
        .env("MALLOC_ARENA_MAX", "2")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .context("starting a satellite process")?;
    Ok(Proc { child, dir: dir.to_owned() })
}

async fn stored(hub: &app::Hub) -> anyhow::Result<i64> {
    Ok(hub
        .state
        .store
        .call(|c| Ok(c.query_row("SELECT count(*) FROM audio_chunks", [], |r| r.get::<_, i64>(0))?))
        .await?)
}

/// User plus system CPU seconds of each process.
fn cpu_seconds(procs: &[Proc]) -> Vec<f64> {
    procs.iter().map(|p| super::bench::cpu_seconds(p.child.id())).collect()
}

/// Current and peak resident set size in MB (`VmRSS`, `VmHWM`).
fn rss_mb(pid: u32) -> (f64, f64) {
    (super::bench::status_mb(pid, "VmRSS:"), super::bench::status_mb(pid, "VmHWM:"))
}

/// Sent-to-acked milliseconds of every acked row in a satellite's outbox.
fn ack_latencies_ms(db: &Path) -> anyhow::Result<Vec<f64>> {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    c.busy_timeout(Duration::from_secs(5))?;
    let mut q = c.prepare(
        "SELECT acked_at - last_sent_at FROM chunks WHERE acked_at IS NOT NULL AND last_sent_at IS NOT NULL",
    )?;
    let rows = q.query_map([], |r| r.get::<_, i64>(0))?;
    Ok(rows.filter_map(Result::ok).filter(|ms| *ms >= 0).map(|ms| ms as f64).collect())
}
