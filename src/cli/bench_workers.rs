//! `birdhub bench workers` (issue 49): a coordinator hub (`inference.workers = 0`, in this
//! process) drains a queued backlog through real `birdhub worker` processes, each pinned to its
//! own core with one thread (`taskset`), against two bare single-thread models measured in the
//! same run; then chunk-ack-to-WebSocket latency with remote workers against in-process ones,
//! and the bytes on the wire and the hub's CPU per chunk.

use std::{
    collections::HashMap,
    process::{Child, Command, ExitCode, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::Context;
use base64::Engine;
use futures_util::StreamExt;
use rumqttc::QoS;

use super::{
    bench::percentile,
    bench_pipeline::{self as pipeline, Sat},
    bench_satellites as sim,
};
use crate::{
    app,
    config::{Settings, WorkerCount},
    inference::ModelDir,
};

#[derive(Debug, clap::Args)]
pub struct WorkersArgs {
    /// Simulated satellites filling the backlog.
    #[arg(long, default_value_t = 10)]
    pub satellites: usize,
    /// Backlog chunks per satellite for each drain. 100 (1,000 chunks, some 7 s with two
    /// workers here) keeps the start and the end of a drain, where a worker waits for its first
    /// offer or for the other's last batch, from weighing on the rate; 40 read 5-8 % lower.
    #[arg(long, default_value_t = 100)]
    pub backlog: usize,
    /// Chunks sent one at a time for the latency figures.
    #[arg(long, default_value_t = 40)]
    pub latency_chunks: usize,
    /// Keep the workers' logs in this directory (`<n>-workers-core<core>.log`, appended), at the
    /// level `RUST_LOG` gives (the workers inherit it), to read after a run that went wrong.
    #[arg(long)]
    pub worker_logs: Option<std::path::PathBuf>,
}

pub async fn run(settings: &Settings, args: WorkersArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.satellites > 0 && args.backlog > 0, "--satellites and --backlog must be positive");
    let dir = ModelDir::locate(&settings.inference.model_dir)?;
    let model = std::fs::canonicalize(&dir.path)?;
    let wav = pipeline::fixture_wav(&dir)?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pin = cores >= 2 && Command::new("taskset").arg("-V").output().is_ok_and(|o| o.status.success());
    println!(
        "birdhub bench workers: {cores} cores, workers {}",
        if pin { "pinned with taskset" } else { "not pinned" }
    );

    let bare = bare_rates(&model, pin).await?;
    let sum: f64 = bare.iter().sum();
    println!(
        "bare model, 1 thread each, both at once: core 0 {:.1}, core 1 {:.1} chunks/s (sum {sum:.1})",
        bare[0], bare[1]
    );
    let total = args.satellites * args.backlog;
    let one = drain_round(settings, &args, &wav, &model, 1, pin).await?;
    println!(
        "one worker:   {:.1} chunks/s drained = {:.2} x one bare model   ({total} chunks)",
        one.rate,
        one.rate / bare[0]
    );
    let two = drain_round(settings, &args, &wav, &model, 2, pin).await?;
    println!(
        "two workers:  {:.1} chunks/s drained = {:.2} x the sum of two bare models   ({total} chunks)",
        two.rate,
        two.rate / sum
    );
    println!(
        "wire per chunk: {:.0} KB to the workers, {:.0} KB back ({} offers of up to 8 chunks)",
        two.bytes_out / 1024.0,
        two.bytes_in / 1024.0,
        two.offers
    );
    println!(
        "hub CPU per chunk (coordinator, two workers): {:.2} ms in all; {:.2} ms on the async runtime (broker routing of jobs and results, reading results), {:.2} ms on the offer slots (reading WAVs, packing jobs, screening, writing detections)",
        two.hub_cpu_ms, two.runtime_ms, two.slots_ms
    );
    println!(
        "  (hub CPU: this process's user + system time over the drain / chunks, by thread name; the workers are other processes)"
    );
    if args.latency_chunks > 0 {
        let remote = two.latency;
        let local = local_latency(settings, &args, &wav).await?;
        println!(
            "ack -> WebSocket: remote workers p50 {:.0} ms p99 {:.0} ms; in-process p50 {:.0} ms p99 {:.0} ms   ({} chunks one at a time)",
            percentile(&remote, 50.0),
            percentile(&remote, 99.0),
            percentile(&local, 50.0),
            percentile(&local, 99.0),
            args.latency_chunks
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `birdhub worker --measure` on cores 0 and 1 at once: each one's chunks/s.
async fn bare_rates(model: &std::path::Path, pin: bool) -> anyhow::Result<Vec<f64>> {
    let mut children = Vec::new();
    for core in 0..2 {
        let mut cmd = worker_command(core, pin);
        cmd.args(["--measure", "--threads", "1", "--batch", "8", "--model-dir"]).arg(model);
        children.push(cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().context("starting birdhub worker")?);
    }
    let mut rates = Vec::new();
    for child in children {
        let out = tokio::task::spawn_blocking(move || child.wait_with_output()).await??;
        let text = String::from_utf8_lossy(&out.stdout);
        let rate = text
            .split("this machine: ")
            .nth(1)
            .and_then(|t| t.split_whitespace().next())
            .and_then(|n| n.parse::<f64>().ok())
            .with_context(|| format!("birdhub worker --measure printed {text:?}"))?;
        rates.push(rate);
    }
    Ok(rates)
}

fn worker_command(core: usize, pin: bool) -> Command {
    let exe = std::env::current_exe().unwrap_or_else(|_| "birdhub".into());
    if pin {
        let mut c = Command::new("taskset");
        c.args(["-c", &core.to_string()]).arg(exe).arg("worker");
        c
    } else {
        let mut c = Command::new(exe);
        c.arg("worker");
        c
    }
}

/// What one drain through remote workers measured.
struct Round {
    rate: f64,
    bytes_out: f64,
    bytes_in: f64,
    offers: u64,
    hub_cpu_ms: f64,
    runtime_ms: f64,
    slots_ms: f64,
    latency: Vec<f64>,
}

/// Fills a queue with no model, restarts the hub as a coordinator, starts `n` pinned workers and
/// times the drain by the hub's own timestamps.
async fn drain_round(
    settings: &Settings,
    args: &WorkersArgs,
    wav: &[u8],
    model: &std::path::Path,
    n: usize,
    pin: bool,
) -> anyhow::Result<Round> {
    let data = std::env::temp_dir().join(format!("birdhub-bench-{}", uuid::Uuid::new_v4()));
    let filling = pipeline::start_hub_in(settings, false, data.clone()).await?;
    let sats = Arc::new(pipeline::make_satellites(&filling, args.satellites).await?);
    sim::ingest_backlog(sim::Target::of(&filling)?, sats.clone(), Arc::new(wav.to_vec()), args.backlog).await?;
    filling.stop().await?;
    let mut coordinator = settings.clone();
    coordinator.inference.workers = WorkerCount::Threads(0);
    let hub = pipeline::start_hub_in(&coordinator, true, data.clone()).await?;
    let port = hub.mqtt_addr.context("no broker")?.port();
    let mut children = Vec::new();
    for core in 0..n {
        let now = crate::time::Timestamp(chrono::Utc::now());
        let (_, key) = crate::usecases::worker_keys::mint(
            &hub.state.store,
            hub.state.mqtt.logins(),
            &format!("bench-{core}"),
            None,
            now,
        )
        .await?;
        let mut cmd = worker_command(core, pin);
        cmd.args(["--hub", &format!("127.0.0.1:{port}"), "--threads", "1", "--batch", "8", "--model-dir"])
            .arg(model)
            .env("BIRDHUB_WORKER_KEY", key)
            .env("BIRDHUB_LOG", "error");
        children
            .push(Kill(cmd.stdout(Stdio::null()).stderr(worker_log(args.worker_logs.as_deref(), n, core)?).spawn()?));
    }
    let total = args.satellites * args.backlog;
    let cpu = sim::Cpu::now();
    let (runtime0, slots0) = (threads_cpu("tokio-rt"), threads_cpu("remote-"));
    let traffic0 = hub.state.remote.traffic();
    pipeline::wait_drained(&hub, total, Duration::from_secs(600)).await?;
    let hub_cpu_ms = cpu.per_chunk(total).whole_ms;
    let per_chunk_ms = |s: f64| s * 1e3 / total.max(1) as f64;
    let runtime_ms = per_chunk_ms(threads_cpu("tokio-rt") - runtime0);
    let slots_ms = per_chunk_ms(threads_cpu("remote-") - slots0);
    let t = hub.state.remote.traffic();
    let rate = drained_rate(&hub, total).await?;
    let latency = if n == 2 { latency(&hub, &sats, wav, args.latency_chunks).await? } else { Vec::new() };
    drop(children);
    hub.stop().await?;
    let _ = std::fs::remove_dir_all(&data);
    let per = total.max(1) as f64;
    Ok(Round {
        rate,
        bytes_out: (t.bytes_out - traffic0.bytes_out) as f64 / per,
        bytes_in: (t.bytes_in - traffic0.bytes_in) as f64 / per,
        offers: t.offers - traffic0.offers,
        hub_cpu_ms,
        runtime_ms,
        slots_ms,
        latency,
    })
}

/// Where a worker's log goes: nowhere, or with `--worker-logs <dir>` to
/// `<dir>/<n>-workers-core<core>.log`, appended.
fn worker_log(dir: Option<&std::path::Path>, n: usize, core: usize) -> anyhow::Result<Stdio> {
    let Some(dir) = dir else { return Ok(Stdio::null()) };
    let path = dir.join(format!("{n}-workers-core{core}.log"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    Ok(Stdio::from(file))
}

/// A child process killed when dropped.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Chunks per second from the first claim to the last commit, by the hub's timestamps.
async fn drained_rate(hub: &app::Hub, total: usize) -> anyhow::Result<f64> {
    Ok(total as f64 / pipeline::drained_seconds(hub).await?.max(1e-3))
}

/// CPU seconds so far of this process's threads whose name starts with `prefix`
/// (`/proc/self/task/*/stat`, in clock ticks of 10 ms).
fn threads_cpu(prefix: &str) -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0.0 };
    let mut ticks = 0u64;
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else { continue };
        // pid (comm) state ... utime stime: comm may hold spaces, so split after its ')'.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        if !stat[open + 1..close].starts_with(prefix) {
            continue;
        }
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let get = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
        ticks += get(11) + get(12);
    }
    ticks as f64 / 100.0
}

/// In-process workers: the same latency phase on a hub that runs the model itself.
async fn local_latency(settings: &Settings, args: &WorkersArgs, wav: &[u8]) -> anyhow::Result<Vec<f64>> {
    let hub = pipeline::start_hub(settings, true).await?;
    let sats = pipeline::make_satellites(&hub, 1).await?;
    let out = latency(&hub, &sats, wav, args.latency_chunks).await;
    pipeline::stop_and_remove(hub).await?;
    out
}

/// Sends `n` chunks one at a time from the first satellite: for each, from its ack to its
/// detection's frame on the WebSocket, in ms.
async fn latency(hub: &app::Hub, sats: &[Sat], wav: &[u8], n: usize) -> anyhow::Result<Vec<f64>> {
    let Some(sat) = sats.first() else { return Ok(Vec::new()) };
    let acks: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let frames: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let (ws, _) = tokio_tungstenite::connect_async(pipeline::ws_url(hub).await?).await?;
    let f = frames.clone();
    let watcher = tokio::spawn(async move {
        let mut ws = ws;
        while let Some(Ok(msg)) = ws.next().await {
            let Ok(text) = msg.into_text() else { continue };
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else { continue };
            if let (Some(chunk), Ok(mut m)) = (v["data"]["audioChunkId"].as_str(), f.lock()) {
                m.entry(chunk.to_owned()).or_insert_with(Instant::now);
            }
        }
    });
    let a = acks.clone();
    let root = hub.state.settings.mqtt.topic_root.clone();
    let port = hub.mqtt_addr.context("no broker")?.port();
    let client = pipeline::connect_to(port, &root, sat, move |topic, body| {
        if topic.ends_with("/ack")
            && let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body)
            && let (Some(chunk), Ok(mut m)) = (v["chunkId"].as_str(), a.lock())
        {
            m.insert(chunk.to_owned(), Instant::now());
        }
    })
    .await?;
    let b64 = base64::engine::general_purpose::STANDARD.encode(wav);
    let topic = crate::mqtt::topics::topic(&root, sat.tenant, sat.id, crate::mqtt::topics::Channel::Audio);
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let chunk = uuid::Uuid::new_v4().to_string();
        client.publish(topic.clone(), QoS::AtLeastOnce, false, pipeline::message(sat, &chunk, &b64)).await?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ack = acks.lock().ok().and_then(|m| m.get(&chunk).copied());
            let frame = frames.lock().ok().and_then(|m| m.get(&chunk).copied());
            if let (Some(ack), Some(frame)) = (ack, frame) {
                out.push(frame.saturating_duration_since(ack).as_secs_f64() * 1e3);
                break;
            }
            anyhow::ensure!(Instant::now() < deadline, "chunk {chunk} got no detection within 30 s");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    watcher.abort();
    out.sort_by(f64::total_cmp);
    Ok(out)
}
