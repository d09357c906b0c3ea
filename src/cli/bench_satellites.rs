//! The simulated satellites of `bench pipeline`'s ingest phases, on an async runtime of their
//! own whose threads are named [`THREAD`]. The hub runs in the same process, so the process's
//! CPU time counts both MQTT ends; the satellites' threads are told apart by that name in
//! `/proc/self/task`, and the hub's own CPU time is the process's minus theirs ([`Cpu`]).
//! Both are read from nanosecond CPU clocks, not in the 10 ms ticks of `/proc/.../stat`, which
//! would move a 30 s phase of 200 chunks in steps of 0.05 ms per chunk: the process's clock, and
//! each satellite thread's own clock, which the thread notes whenever it goes idle.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::Context;
use base64::Engine;
use rumqttc::QoS;

use super::bench_pipeline::{Sat, connect_to, message, publish_backlog, wait_count};
use crate::app;

/// The name of every thread of the satellites' runtime.
pub(super) const THREAD: &str = "bench-sat";

/// The broker the satellites connect to (owned, so the satellites' tasks can move it along).
#[derive(Clone)]
pub(super) struct Target {
    pub port: u16,
    pub root: String,
}

impl Target {
    pub fn of(hub: &app::Hub) -> anyhow::Result<Self> {
        let port = hub.mqtt_addr.context("no broker")?.port();
        Ok(Self { port, root: hub.state.settings.mqtt.topic_root.clone() })
    }
}

/// The satellites' runtime: one worker thread, so their MQTT clients never run on the hub's.
pub(super) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(1)
        .thread_name(THREAD)
        .on_thread_park(note_thread_cpu)
        .on_thread_stop(note_thread_cpu)
        .enable_all()
        .build()?)
}

/// User plus system CPU seconds of the whole process and of the satellites' threads, at a moment.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cpu {
    process: f64,
    satellites: f64,
}

/// CPU milliseconds per chunk over a phase: the whole process, and the hub alone.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct PerChunk {
    pub whole_ms: f64,
    pub hub_ms: f64,
}

impl Cpu {
    pub fn now() -> Self {
        let process = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
        let process = process.tv_sec as f64 + process.tv_nsec as f64 / 1e9;
        Self { process, satellites: threads_cpu_seconds() }
    }

    /// What was spent per chunk since `self` (the satellites' threads live through the phase,
    /// so their difference is all they spent; the hub's is the rest).
    pub fn per_chunk(self, chunks: usize) -> PerChunk {
        Self::now().since(self, chunks)
    }

    /// What was spent per chunk between `earlier` and `self`.
    pub fn since(self, earlier: Self, chunks: usize) -> PerChunk {
        let whole = self.process - earlier.process;
        let hub = whole - (self.satellites - earlier.satellites);
        let n = chunks.max(1) as f64;
        PerChunk { whole_ms: whole * 1e3 / n, hub_ms: hub.max(0.0) * 1e3 / n }
    }
}

/// User plus system CPU seconds of this process's threads named `name` (`/proc/self/task`).
/// Each satellite thread's CPU seconds when it last went idle (or stopped).
static THREAD_CPU: Mutex<Option<HashMap<std::thread::ThreadId, f64>>> = Mutex::new(None);

/// Notes the calling thread's own CPU time (its runtime calls this as it parks and stops).
fn note_thread_cpu() {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    let seconds = t.tv_sec as f64 + t.tv_nsec as f64 / 1e9;
    if let Ok(mut map) = THREAD_CPU.lock() {
        map.get_or_insert_with(HashMap::new).insert(std::thread::current().id(), seconds);
    }
}

/// The satellites' threads' CPU seconds as of their last idle moment: exact between phases, when
/// they all wait.
fn threads_cpu_seconds() -> f64 {
    if std::thread::current().name() == Some(THREAD) {
        note_thread_cpu(); // a satellite thread asking: its own clock, up to now
    } else {
        // Time for a satellite thread that just finished its work to go idle and note it.
        std::thread::sleep(Duration::from_millis(20));
    }
    THREAD_CPU.lock().map_or(0.0, |m| m.as_ref().map_or(0.0, |m| m.values().sum()))
}

type Pending = Arc<Mutex<HashMap<String, Instant>>>;

/// What [`real_rate`] saw.
pub(super) struct RealRate {
    /// Ack latencies in ms, sorted.
    pub acks: Vec<f64>,
    /// Chunks sent.
    pub sent: usize,
    /// The CPU clocks once every satellite was connected and the hub had settled, before the
    /// first chunk: the connections (login, subscriptions, the config each one is pushed) are a
    /// cost of a satellite's start, paid once, not of each chunk it sends for days after.
    pub connected: Cpu,
}

/// Every satellite sends one chunk every 3 s; returns the ack latencies and how many chunks were
/// sent.
pub(super) async fn real_rate(
    to: Target,
    sats: Arc<Vec<Sat>>,
    wav: Arc<Vec<u8>>,
    seconds: u64,
) -> anyhow::Result<RealRate> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(wav.as_slice());
    let pending: Pending = Arc::default();
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let mut clients = Vec::new();
    for s in sats.iter() {
        let (p, l) = (pending.clone(), latencies.clone());
        clients
            .push(connect_to(to.port, &to.root, s, move |topic, payload| record_ack(&p, &l, &topic, &payload)).await?);
    }
    let rounds = seconds.div_ceil(3).max(1);
    let spacing = Duration::from_millis(3000 / sats.len().max(1) as u64);
    // One chunk from each satellite first, not timed: a satellite's first chunk of the day makes
    // its day's directory (three levels on a new hub), once a day, not for each chunk after.
    let send = async |s: &Sat, c: &rumqttc::AsyncClient| -> anyhow::Result<()> {
        let chunk = uuid::Uuid::new_v4().to_string();
        pending.lock().map_err(|_| anyhow::anyhow!("poisoned"))?.insert(chunk.clone(), Instant::now());
        let topic = crate::mqtt::topics::topic(&to.root, s.tenant, s.id, crate::mqtt::topics::Channel::Audio);
        c.publish(topic, QoS::AtLeastOnce, false, message(s, &chunk, &b64)).await?;
        Ok(())
    };
    for (s, c) in sats.iter().zip(&clients) {
        send(s, c).await?;
        tokio::time::sleep(spacing).await;
    }
    wait_acks(&latencies, sats.len()).await;
    latencies.lock().map_err(|_| anyhow::anyhow!("poisoned"))?.clear();
    // What the hub does for a satellite that just connected (its config push) is over by then.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let connected = Cpu::now();
    for _ in 0..rounds {
        for (s, c) in sats.iter().zip(&clients) {
            send(s, c).await?;
            tokio::time::sleep(spacing).await; // spread each round over 3 s, like real devices
        }
    }
    let expected = rounds as usize * sats.len();
    wait_acks(&latencies, expected).await;
    let mut acks = latencies.lock().map(|l| l.clone()).unwrap_or_default();
    acks.sort_by(f64::total_cmp);
    Ok(RealRate { acks, sent: expected, connected })
}

/// Waits (at most 10 s) until `expected` acks were recorded.
async fn wait_acks(latencies: &Mutex<Vec<f64>>, expected: usize) {
    for _ in 0..200 {
        if latencies.lock().map(|l| l.len()).unwrap_or(0) >= expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn record_ack(pending: &Pending, latencies: &Arc<Mutex<Vec<f64>>>, topic: &str, payload: &[u8]) {
    if !topic.ends_with("/ack") {
        return;
    }
    let Ok(ack) = serde_json::from_slice::<serde_json::Value>(payload) else { return };
    let Some(chunk) = ack["chunkId"].as_str() else { return };
    if let (Ok(mut p), Ok(mut l)) = (pending.lock(), latencies.lock())
        && let Some(sent) = p.remove(chunk)
    {
        l.push(sent.elapsed().as_secs_f64() * 1e3);
    }
}

/// How fast a backlog was acknowledged, and the CPU per chunk meanwhile.
pub(super) struct Ingested {
    pub rate: f64,
    pub cpu: PerChunk,
}

/// Every satellite sends `backlog` chunks at once; returns how fast they are acknowledged.
pub(super) async fn ingest_backlog(
    to: Target,
    sats: Arc<Vec<Sat>>,
    wav: Arc<Vec<u8>>,
    backlog: usize,
) -> anyhow::Result<Ingested> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(wav.as_slice());
    let acked = Arc::new(Mutex::new(0usize));
    let mut clients = Vec::new();
    for s in sats.iter() {
        let a = acked.clone();
        let client = connect_to(to.port, &to.root, s, move |topic, _| {
            if topic.ends_with("/ack")
                && let Ok(mut n) = a.lock()
            {
                *n += 1;
            }
        });
        clients.push(client.await?);
    }
    let total = sats.len() * backlog;
    let (started, cpu0) = (Instant::now(), Cpu::now());
    publish_backlog(&to.root, &sats, &clients, backlog, &b64).await?;
    wait_count(&acked, total, "acks").await?;
    Ok(Ingested { rate: total as f64 / started.elapsed().as_secs_f64(), cpu: cpu0.per_chunk(total) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_satellites_threads_count_their_own_cpu_time() {
        let rt = runtime().expect("runtime");
        // 300 ms of the thread's own CPU time (not of the wall clock: on a loaded machine a
        // thread spinning for 300 ms of wall time may run for less).
        let spin = rt.spawn(async {
            let cpu = || {
                let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
                t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
            };
            let (start, wall) = (cpu(), Instant::now());
            while cpu() - start < 0.3 && wall.elapsed() < Duration::from_secs(20) {
                std::hint::black_box(0u64);
            }
        });
        let before = threads_cpu_seconds();
        rt.block_on(spin).expect("spin");
        // The worker notes its clock as it goes idle after the spin.
        let deadline = Instant::now() + Duration::from_secs(5);
        while threads_cpu_seconds() - before < 0.25 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let spent = threads_cpu_seconds() - before;
        assert!(spent >= 0.25, "300 ms of spinning on a {THREAD} thread is counted: {spent:.3} s");
        rt.shutdown_background();
    }
}
