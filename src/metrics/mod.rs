//! Prometheus metrics of this process, served at `GET /metrics` (`http.rs`) when `metrics.enabled`.
//!
//! Each hub owns its recorder (no global one: tests run several hubs in one process), and the
//! parts of the hub count through the cloneable [`Metrics`] handle in `AppState`. While metrics
//! are off the handle is empty and every call is a no-op, so nothing accumulates unscraped.
//! Counters and histograms move where things happen; gauges (queue depth, database size, memory,
//! broker clients) are read when Prometheus scrapes: whoever serves the scrape gathers them into
//! [`Figures`] (`usecases::metrics_scrape`), so this module needs no handle on the rest of the
//! hub. `docs/metrics.md` lists every series.

pub mod http;

use std::{sync::Arc, time::Duration};

use ::metrics::{Counter, Histogram, Key, Label, Level, Metadata, Recorder, Unit};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder};

use crate::ids::SatelliteId;

/// Where the series come from, for the recorder's bookkeeping (it does not show in the output).
static META: Metadata<'static> = Metadata::new("birdhub", Level::INFO, Some("birdhub::metrics"));

pub const CHUNKS_RECEIVED: &str = "birdhub_chunks_received_total";
pub const CHUNKS_STORED: &str = "birdhub_chunks_stored_total";
pub const CHUNKS_REFUSED: &str = "birdhub_chunks_refused_total";
pub const DETECTIONS: &str = "birdhub_detections_total";
pub const INFERENCE_JOBS: &str = "birdhub_inference_jobs_total";
pub const INFERENCE_WINDOWS: &str = "birdhub_inference_windows_total";
pub const INFERENCE_BATCH_SECONDS: &str = "birdhub_inference_batch_duration_seconds";
pub const INFERENCE_QUEUE: &str = "birdhub_inference_queue_depth";
pub const MQTT_CLIENTS: &str = "birdhub_mqtt_clients_connected";
pub const MQTT_MESSAGES: &str = "birdhub_mqtt_messages_received_total";
pub const HTTP_REQUESTS: &str = "birdhub_http_requests_total";
pub const HTTP_SECONDS: &str = "birdhub_http_request_duration_seconds";
pub const DATABASE_BYTES: &str = "birdhub_database_size_bytes";
pub const SQLITE_STEPS: &str = "birdhub_sqlite_vm_steps_total";
pub const MEMORY_BYTES: &str = "birdhub_process_resident_memory_bytes";
pub const BUILD_INFO: &str = "birdhub_build_info";

/// HTTP answers take milliseconds to seconds (exports and big pages are the slow end).
const HTTP_BUCKETS: &[f64] = &[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];
/// A batch of up to eight chunks takes a fraction of a second on a PC and seconds on a Pi.
const INFERENCE_BUCKETS: &[f64] = &[0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

/// Why a chunk was refused, as a label: a closed set, so refusals cannot grow the series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusedReason {
    /// Over the size limit of an `audio` message.
    TooLarge,
    /// Not the JSON the protocol asks for, or ids that do not match the topic.
    Malformed,
    /// The WAV or its announced properties were refused (format, rate, length, location).
    BadAudio,
    /// The disk is under retention's minimum.
    DiskFull,
    /// The hub could not write it (database or disk error); the satellite retries.
    NotStored,
}

impl RefusedReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TooLarge => "too_large",
            Self::Malformed => "malformed",
            Self::BadAudio => "bad_audio",
            Self::DiskFull => "disk_full",
            Self::NotStored => "not_stored",
        }
    }
}

/// The hub's metrics handle; cheap to clone. Empty (every call a no-op) while metrics are off.
#[derive(Clone, Default)]
pub struct Metrics(Option<Arc<Inner>>);

struct Inner {
    recorder: PrometheusRecorder,
    /// Renders the text exposition and keeps histograms drained.
    handle: PrometheusHandle,
    chunks_received: Counter,
    chunks_stored: Counter,
}

impl Metrics {
    /// A recorder for this hub when `enabled`, else the no-op handle.
    pub fn new(enabled: bool) -> Self {
        if !enabled {
            return Self(None);
        }
        let builder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full(HTTP_SECONDS.into()), HTTP_BUCKETS)
            .and_then(|b| b.set_buckets_for_metric(Matcher::Full(INFERENCE_BATCH_SECONDS.into()), INFERENCE_BUCKETS));
        let recorder = match builder {
            Ok(b) => b.build_recorder(),
            Err(e) => {
                // Only an empty bucket list fails, and ours are constants.
                tracing::error!(error = %e, "metrics are off: the recorder could not be built");
                return Self(None);
            }
        };
        describe(&recorder);
        let handle = recorder.handle();
        let counter = |name: &'static str| recorder.register_counter(&Key::from_static_name(name), &META);
        let (chunks_received, chunks_stored) = (counter(CHUNKS_RECEIVED), counter(CHUNKS_STORED));
        // Present from the first scrape, so a graph starts at zero instead of at the first chunk.
        chunks_received.increment(0);
        chunks_stored.increment(0);
        recorder
            .register_gauge(&Key::from_parts(BUILD_INFO, vec![Label::new("version", env!("CARGO_PKG_VERSION"))]), &META)
            .set(1.0);
        Self(Some(Arc::new(Inner { recorder, handle, chunks_received, chunks_stored })))
    }

    pub fn is_enabled(&self) -> bool {
        self.0.is_some()
    }

    fn counter(&self, name: &'static str, labels: Vec<Label>) -> Counter {
        match &self.0 {
            Some(inner) => inner.recorder.register_counter(&Key::from_parts(name, labels), &META),
            None => Counter::noop(),
        }
    }

    fn histogram(&self, name: &'static str, labels: Vec<Label>) -> Histogram {
        match &self.0 {
            Some(inner) => inner.recorder.register_histogram(&Key::from_parts(name, labels), &META),
            None => Histogram::noop(),
        }
    }

    fn gauge(&self, name: &'static str, labels: Vec<Label>, value: f64) {
        if let Some(inner) = &self.0 {
            inner.recorder.register_gauge(&Key::from_parts(name, labels), &META).set(value);
        }
    }

    /// An `audio` message reached ingest and was answered with `stored` (`Ok`) or an error ack.
    pub fn chunk_answered(&self, outcome: Result<(), RefusedReason>) {
        let Some(inner) = &self.0 else { return };
        inner.chunks_received.increment(1);
        match outcome {
            Ok(()) => inner.chunks_stored.increment(1),
            Err(reason) => self.counter(CHUNKS_REFUSED, vec![Label::new("reason", reason.as_str())]).increment(1),
        }
    }

    /// One batch of inference jobs was classified and stored (or failed), taking `took`.
    pub fn inference_batch(&self, took: Duration) {
        if self.0.is_some() {
            self.histogram(INFERENCE_BATCH_SECONDS, vec![]).record(took.as_secs_f64());
        }
    }

    /// One inference job finished: its detections stored (`ok`) or its attempt failed.
    pub fn inference_job(&self, ok: bool) {
        if self.0.is_some() {
            let result = if ok { "succeeded" } else { "failed" };
            self.counter(INFERENCE_JOBS, vec![Label::new("result", result)]).increment(1);
        }
    }

    /// `n` windows went through the model: the chunks' own, or a second look's extra ones.
    pub fn inference_windows(&self, second_look: bool, n: u64) {
        if self.0.is_some() {
            let kind = if second_look { "second_look" } else { "chunk" };
            self.counter(INFERENCE_WINDOWS, vec![Label::new("kind", kind)]).increment(n);
        }
    }

    /// A detection was stored for this satellite.
    pub fn detection(&self, satellite: SatelliteId) {
        if self.0.is_some() {
            self.counter(DETECTIONS, vec![Label::new("satellite", satellite.to_string())]).increment(1);
        }
    }

    /// One HTTP request answered; `route` is the matched route template (never the raw path).
    pub fn http_request(&self, method: &'static str, route: &str, status: u16, took: Duration) {
        if self.0.is_none() {
            return;
        }
        let route = route.to_owned();
        let labels = vec![Label::new("method", method), Label::new("route", route.clone())];
        self.histogram(HTTP_SECONDS, labels).record(took.as_secs_f64());
        let labels =
            vec![Label::new("method", method), Label::new("route", route), Label::new("status", status.to_string())];
        self.counter(HTTP_REQUESTS, labels).increment(1);
    }

    /// Drops histogram samples nobody scraped; the upkeep task calls this now and then.
    pub fn upkeep(&self) {
        if let Some(inner) = &self.0 {
            inner.handle.run_upkeep();
        }
    }

    /// Sets the scrape-time gauges from `figures` and renders every series in the text format 0.0.4.
    pub fn render(&self, figures: &Figures) -> String {
        let Some(inner) = &self.0 else { return String::new() };
        if let Some(q) = figures.inference_queue {
            for (status, n) in [("queued", q.queued), ("running", q.running), ("failed", q.failed)] {
                self.gauge(INFERENCE_QUEUE, vec![Label::new("status", status)], n as f64);
            }
        }
        if let Some(n) = figures.mqtt_clients {
            self.gauge(MQTT_CLIENTS, vec![], n as f64);
        }
        if let Some(n) = figures.mqtt_messages {
            self.counter(MQTT_MESSAGES, vec![]).absolute(n);
        }
        self.gauge(DATABASE_BYTES, vec![], figures.database_bytes as f64);
        self.counter(SQLITE_STEPS, vec![]).absolute(figures.sqlite_steps);
        if let Some(rss) = figures.memory_bytes {
            self.gauge(MEMORY_BYTES, vec![], rss as f64);
        }
        inner.handle.render()
    }
}

/// What is read at scrape time; `None` leaves a series out (a process without a broker or a
/// queue, or a figure that could not be read).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    pub inference_queue: Option<QueueDepth>,
    /// Clients connected to this process's broker.
    pub mqtt_clients: Option<usize>,
    /// Messages clients published to this process's broker since it started.
    pub mqtt_messages: Option<u64>,
    /// The database file and its write-ahead log.
    pub database_bytes: u64,
    /// SQLite virtual-machine steps since the hub started (`store::work`).
    pub sqlite_steps: u64,
    pub memory_bytes: Option<u64>,
}

/// Inference jobs by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueDepth {
    pub queued: u64,
    pub running: u64,
    pub failed: u64,
}

/// The `# HELP` text of every series.
fn describe(r: &PrometheusRecorder) {
    let text = |s: &'static str| s.into();
    r.describe_counter(CHUNKS_RECEIVED.into(), None, text("Audio chunks that satellites sent over MQTT."));
    r.describe_counter(CHUNKS_STORED.into(), None, text("Audio chunks acknowledged as stored (retries included)."));
    r.describe_counter(CHUNKS_REFUSED.into(), None, text("Audio chunks answered with an error ack, by reason."));
    r.describe_counter(DETECTIONS.into(), None, text("Detections stored, by satellite id."));
    r.describe_counter(INFERENCE_JOBS.into(), None, text("Inference jobs finished, by result."));
    r.describe_counter(
        INFERENCE_WINDOWS.into(),
        None,
        text("3 s windows classified: the chunks' own, and the extra ones of second looks."),
    );
    r.describe_histogram(
        INFERENCE_BATCH_SECONDS.into(),
        Some(Unit::Seconds),
        text("Time to classify one batch of chunks and store its detections."),
    );
    r.describe_gauge(INFERENCE_QUEUE.into(), None, text("Inference jobs in the queue, by status."));
    r.describe_gauge(MQTT_CLIENTS.into(), None, text("Clients connected to the embedded MQTT broker."));
    r.describe_counter(MQTT_MESSAGES.into(), None, text("Messages clients published to the embedded broker."));
    r.describe_counter(
        HTTP_REQUESTS.into(),
        None,
        text("HTTP requests answered, by method, route template and status."),
    );
    r.describe_histogram(
        HTTP_SECONDS.into(),
        Some(Unit::Seconds),
        text("Time to answer an HTTP request, by method and route template."),
    );
    r.describe_counter(
        SQLITE_STEPS.into(),
        None,
        text("SQLite virtual-machine steps run by the hub's queries: its database work, in a unit that does not move with the machine."),
    );
    r.describe_gauge(DATABASE_BYTES.into(), Some(Unit::Bytes), text("Size of the SQLite database and its WAL."));
    r.describe_gauge(MEMORY_BYTES.into(), Some(Unit::Bytes), text("Resident memory of this process."));
    r.describe_gauge(BUILD_INFO.into(), None, text("Always 1; the label carries the running version."));
}

/// Folds new histogram samples into their buckets every few seconds, so a hub that nobody
/// scrapes does not keep them all in memory.
pub async fn run_upkeep(metrics: Metrics, shutdown: tokio_util::sync::CancellationToken) -> anyhow::Result<()> {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            _ = tick.tick() => metrics.upkeep(),
        }
    }
}
