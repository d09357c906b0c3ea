//! `birdhub bench memory`: where the hub's resident memory goes. Two measurements, each in a
//! process of its own so that the bench's own memory is not counted:
//! - the stages of a start in `serve`'s order, each built with the hub's own code (a child
//!   `birdhub bench memory --stages`): resident memory after the async runtime, the database
//!   pool, the broker, the HTTP routes, ONNX Runtime, the labels, the range model, the classifier
//!   session, the first inference, a full batch and what the idle queue gives back;
//! - a real `birdhub serve` (mode `full`, model loaded): resident memory idle, the most while it
//!   drains a backlog that simulated satellites send over MQTT (sampled every 50 ms), its peak
//!   (`VmHWM`) and what it holds after the drain.

use std::{
    path::Path,
    process::{ExitCode, Stdio},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::Context;
use base64::Engine;
use rumqttc::QoS;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::{
    bench::status_mb,
    bench_pipeline::{Sat, connect_to, fixture_wav, make_satellites_in, message},
};
use crate::{
    api, app,
    config::{Settings, ensure_secrets},
    inference::{Classifier, ModelDir, audio, model},
    store,
};

#[derive(Debug, clap::Args)]
pub struct MemoryArgs {
    /// Chunks in the backlog the hub drains (sent at once by 4 simulated satellites).
    #[arg(long, default_value_t = 120)]
    pub backlog: usize,
    /// Seconds the started hub idles before its idle figure is read.
    #[arg(long, default_value_t = 10)]
    pub idle_secs: u64,
    /// Print the stage table of this process only (what `bench memory` runs in a child).
    #[arg(long, hide = true)]
    pub stages: bool,
}

const SATELLITES: usize = 4;

pub async fn run(settings: &Settings, args: MemoryArgs) -> anyhow::Result<ExitCode> {
    if args.stages {
        return stages(settings).await;
    }
    let model = ModelDir::locate(&settings.inference.model_dir)?;
    model.check()?;
    let exe = std::env::current_exe().context("the path of this binary")?;
    println!("birdhub bench memory: resident memory (RSS) of the hub, in MB");
    let allocator = match std::env::var(crate::process_memory::MARKER).as_deref() {
        Ok("tuned") => {
            format!(
                "tuned (MALLOC_MMAP_THRESHOLD_={}, MALLOC_TRIM_THRESHOLD_={}, MALLOC_ARENA_MAX=2)",
                crate::process_memory::MMAP_THRESHOLD,
                crate::process_memory::TRIM_THRESHOLD
            )
        }
        _ => "glibc defaults (BIRDHUB_MALLOC=default)".to_owned(),
    };
    println!("model {}, {} cores, allocator {allocator}\n", model.path.display(), cores());

    let out = tokio::process::Command::new(&exe)
        .args(["bench", "memory", "--stages"])
        .env("BIRDHUB_INFERENCE__MODEL_DIR", &model.path)
        .env("BIRDHUB_LOG_LEVEL", "error")
        .output()
        .await?;
    anyhow::ensure!(out.status.success(), "the stage run failed: {}", String::from_utf8_lossy(&out.stderr));
    print!("{}", String::from_utf8_lossy(&out.stdout));

    let data = std::env::temp_dir().join(format!("birdhub-bench-memory-{}", uuid::Uuid::new_v4()));
    let result = whole_hub(settings, &exe, &model, &data, &args).await;
    let _ = std::fs::remove_dir_all(&data);
    let rows = result?;
    println!("\nA real `birdhub serve` (mode full, {} inference workers):", workers(settings));
    for (what, mb) in rows {
        println!("  {what:<44} {mb:>7.1}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The stages of a start, in this process, printed as a table.
async fn stages(settings: &Settings) -> anyhow::Result<ExitCode> {
    let mut table = Stages::default();
    table.mark("process and async runtime");
    let data = std::env::temp_dir().join(format!("birdhub-bench-stages-{}", uuid::Uuid::new_v4()));
    let mut s = Settings { data_dir: data.clone(), ..settings.clone() };
    s.http.bind = "127.0.0.1:0".parse()?;
    s.mqtt.bind = "127.0.0.1:0".parse()?;
    s.mqtt.ws_bind = "127.0.0.1:0".parse()?;
    ensure_secrets(&mut s)?;
    let workers = workers(&s);
    let state = app::open_state(s).await?;
    table.mark("database pool (opened, migrated)");
    let broker = crate::mqtt::broker::start(&state).await?;
    let mut running = broker.broker;
    tokio::spawn(async move { running.run().await });
    table.mark("MQTT broker");
    let setup = Arc::new(crate::web::setup::SetupCode::new(&data, false));
    let _router = crate::web::router(state.clone(), api::router(state.clone()), setup);
    table.mark("HTTP routes and dashboard");
    let dir = ModelDir::locate(&state.settings.inference.model_dir)?;
    model::init_runtime(&dir.runtime_library())?;
    table.mark("ONNX Runtime library");
    let _labels = state.names.classes();
    table.mark("labels (English)");
    let range = state.range.clone();
    tokio::task::spawn_blocking(move || range.get()?.scores(40.8, -77.9, 20).map(|_| ())).await??;
    table.mark("range model (one answer, session closed)");
    let (options, frontend_threads) = model::pool_options(workers, state.settings.inference.precision);
    let classifier = Classifier::load(&dir, options)?.with_frontend_threads(frontend_threads);
    table.mark("classifier session");
    let wav = fixture_wav(&dir)?;
    let window = audio::decode_wav(&wav, 60.0)?.samples;
    classifier.logits(&[&window])?;
    table.mark("first inference");
    let batch: Vec<&[f32]> = (0..crate::inference::worker::BATCH).map(|_| window.as_slice()).collect();
    classifier.logits(&batch)?;
    table.mark("a batch as the workers claim it");
    classifier.release_batch_memory()?;
    table.mark("batch memory given back (queue idle)");
    table.print();
    let _ = std::fs::remove_dir_all(&data);
    Ok(ExitCode::SUCCESS)
}

#[derive(Default)]
struct Stages {
    rows: Vec<(&'static str, f64)>,
}

impl Stages {
    fn mark(&mut self, what: &'static str) {
        self.rows.push((what, rss_mb(std::process::id())));
    }

    fn print(&self) {
        println!("Stages of a start, in serve's order (one process):");
        println!("  {:<44} {:>7} {:>7}", "after", "RSS", "+");
        let mut before = 0.0;
        for (what, mb) in &self.rows {
            println!("  {what:<44} {mb:>7.1} {:>+7.1}", mb - before);
            before = *mb;
        }
    }
}

/// Starts `birdhub serve` on a fresh data dir, waits for its workers, reads it idle, then feeds it
/// a backlog and samples it while it drains.
async fn whole_hub(
    settings: &Settings,
    exe: &Path,
    model: &ModelDir,
    data: &Path,
    args: &MemoryArgs,
) -> anyhow::Result<Vec<(String, f64)>> {
    let (http, mqtt) = (free_port()?, free_port()?);
    let mut child = tokio::process::Command::new(exe)
        .arg("serve")
        .arg("--data-dir")
        .arg(data)
        .args(["--http-bind", &format!("127.0.0.1:{http}"), "--mqtt-bind", &format!("127.0.0.1:{mqtt}")])
        .env("BIRDHUB_INFERENCE__MODEL_DIR", &model.path)
        .env("BIRDHUB_MQTT__WS_BIND", "127.0.0.1:0")
        .env("BIRDHUB_MQTT__TOPIC_ROOT", &settings.mqtt.topic_root)
        .env("BIRDHUB_HTTP__MDNS", "false")
        .env("BIRDHUB_LOG_LEVEL", "info,mqtt5=warn,ort=warn")
        .env_remove("JOURNAL_STREAM")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting birdhub serve")?;
    let pid = child.id().context("the hub's pid")?;
    let mut lines = BufReader::new(child.stderr.take().context("stderr")?).lines();
    let ready = tokio::time::timeout(Duration::from_secs(180), async {
        while let Some(line) = lines.next_line().await? {
            if line.contains("inference workers started") {
                return Ok(());
            }
        }
        anyhow::bail!("the hub stopped before its workers started")
    })
    .await
    .context("the hub's workers did not start within 180 s")?;
    ready?;
    // Keep reading its log so the pipe never fills.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

    tokio::time::sleep(Duration::from_secs(args.idle_secs)).await;
    let idle = rss_mb(pid);

    let db = store::Store::open(&data.join("birdhub.db"))?;
    let sats = make_satellites_in(&db, SATELLITES).await?;
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let peak = peak.clone();
        tokio::spawn(async move {
            loop {
                peak.fetch_max((rss_mb(pid) * 10.0) as u64, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let started = Instant::now();
    send_backlog(mqtt, &settings.mqtt.topic_root, &sats, &fixture_wav(model)?, args.backlog).await?;
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let stats = db.call(|c| store::jobs::stats(c, None)).await?;
        if stats.done + stats.failed >= args.backlog as u64 {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "the backlog did not drain within 15 minutes ({stats:?})");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let drained = started.elapsed().as_secs_f64();
    sampler.abort();
    let hwm = status_mb(pid, "VmHWM:");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rss_mb(pid);
    let _ = tokio::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status().await;
    let _ = tokio::time::timeout(Duration::from_secs(20), child.wait()).await;
    Ok(vec![
        ("idle, model loaded".into(), idle),
        (
            format!("most while draining {} chunks ({:.0} chunks/s)", args.backlog, args.backlog as f64 / drained),
            peak.load(Ordering::Relaxed) as f64 / 10.0,
        ),
        ("peak of the process (VmHWM)".into(), hwm),
        ("2 s after the drain".into(), after),
    ])
}

/// Every satellite connects, then they send the backlog at once (QoS 1) and wait for the acks.
async fn send_backlog(port: u16, root: &str, sats: &[Sat], wav: &[u8], backlog: usize) -> anyhow::Result<()> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(wav);
    let acked = Arc::new(AtomicU64::new(0));
    let mut clients = Vec::new();
    for s in sats {
        let a = acked.clone();
        clients.push(
            connect_to(port, root, s, move |topic, _| {
                if topic.ends_with("/ack") {
                    a.fetch_add(1, Ordering::Relaxed);
                }
            })
            .await?,
        );
    }
    for i in 0..backlog {
        let (s, c) = (&sats[i % sats.len()], &clients[i % clients.len()]);
        let topic = crate::mqtt::topics::topic(root, s.tenant, s.id, crate::mqtt::topics::Channel::Audio);
        c.publish(topic, QoS::AtLeastOnce, false, message(s, &uuid::Uuid::new_v4().to_string(), &b64)).await?;
    }
    let deadline = Instant::now() + Duration::from_secs(300);
    while acked.load(Ordering::Relaxed) < backlog as u64 {
        anyhow::ensure!(Instant::now() < deadline, "the backlog was not acknowledged within 5 minutes");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

fn workers(settings: &Settings) -> usize {
    settings.inference.workers.threads()
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn rss_mb(pid: u32) -> f64 {
    status_mb(pid, "VmRSS:")
}
