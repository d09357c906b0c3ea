//! `birdhub worker`: a machine that lends its cores to a hub. It loads the model itself, logs in
//! to the broker with its worker key, joins (the hub checks the model and labels), then takes
//! jobs from the shared subscription and answers each with the scores. It keeps no database and
//! no audio beyond the job in hand. It reconnects on its own; on SIGTERM it leaves the group,
//! finishes the job in hand and gives back any that arrive after.

use std::{
    process::ExitCode,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::Context;
use rumqttc::v5::{
    AsyncClient, Event, MqttOptions,
    mqttbytes::{QoS, v5::ConnectReturnCode, v5::Packet, v5::SubscribeReasonCode},
};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::{
    pool::worker_topic,
    wire::{self, Answer, Hello},
};
use crate::inference::{Classifier, ClassifierOptions, ModelDir, Precision};

/// Everything a worker needs to know.
#[derive(Debug, Clone)]
pub struct NodeOptions {
    pub host: String,
    pub port: u16,
    pub topic_root: String,
    pub id: Uuid,
    pub secret: String,
    pub model_dir: String,
    pub threads: usize,
    pub precision: Precision,
    pub batch: usize,
    pub machine: String,
}

/// The largest message a worker accepts: a job of [`wire::MAX_WINDOWS`] float windows.
const MAX_MESSAGE: u32 = 40 << 20;
/// How often an idle worker says it is alive.
const STATUS_EVERY: Duration = Duration::from_secs(30);

/// Loads the model and the labels' fingerprint.
pub fn load(options: &NodeOptions) -> anyhow::Result<(Classifier, String)> {
    let dir = ModelDir::locate(&options.model_dir)?;
    let classifier = Classifier::load(
        &dir,
        ClassifierOptions { threads: options.threads.max(1), spin: false, precision: options.precision, sessions: 1 },
    )?;
    let labels = super::labels_fingerprint(&dir.path).with_context(|| format!("reading {}", dir.path.display()))?;
    Ok((classifier, labels))
}

/// The bare model's rate on this machine at the worker's threads and batch: chunks per second
/// over `seconds` of back-to-back batches (`birdhub worker --measure`).
pub fn measure(classifier: &Classifier, batch: usize, seconds: f64) -> anyhow::Result<f64> {
    let windows: Vec<Vec<f32>> = (0..batch.max(1))
        .map(|b| (0..crate::inference::audio::WINDOW).map(|i| ((i * 7 + b * 13) % 97) as f32 / 970.0 - 0.05).collect())
        .collect();
    let refs: Vec<&[f32]> = windows.iter().map(Vec::as_slice).collect();
    classifier.logits(&refs)?;
    let started = Instant::now();
    let mut done = 0usize;
    while started.elapsed().as_secs_f64() < seconds {
        classifier.logits(&refs)?;
        done += refs.len();
    }
    Ok(done as f64 / started.elapsed().as_secs_f64())
}

/// What the worker thread is handed: a job's bytes, or the order to stop.
enum Work {
    Job(Vec<u8>),
}

/// Runs the worker until `shutdown`, or until the hub refuses it for good.
pub async fn run(
    options: NodeOptions,
    classifier: Classifier,
    labels: String,
    shutdown: CancellationToken,
) -> anyhow::Result<ExitCode> {
    let hello = Hello {
        machine: options.machine.clone(),
        model: classifier.model_id().to_owned(),
        labels,
        precision: classifier.precision().to_string(),
        threads: options.threads.max(1),
        batch: options.batch,
        version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let client_id = format!("{}{}", super::CLIENT_PREFIX, options.id);
    let mut mqtt = MqttOptions::new(client_id.clone(), options.host.clone(), options.port);
    mqtt.set_credentials(client_id.clone(), options.secret.clone());
    mqtt.set_keep_alive(Duration::from_secs(20));
    mqtt.set_clean_start(true);
    mqtt.set_max_packet_size(Some(MAX_MESSAGE));
    let (client, mut eventloop) = AsyncClient::new(mqtt, 64);
    let root = options.topic_root.clone();
    let topic = |kind: &str| worker_topic(&root, options.id, kind);
    let (control, result_topic, release_topic) = (topic("control"), topic("result"), topic("release"));

    let stopping = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let (work_tx, work_rx) = std::sync::mpsc::channel::<Work>();
    let compute = {
        let (client, stopping, done, rt) =
            (client.clone(), stopping.clone(), done.clone(), tokio::runtime::Handle::current());
        let batch = options.batch.max(1);
        std::thread::Builder::new().name("worker-compute".into()).spawn(move || {
            for Work::Job(bytes) in work_rx {
                let (topic, payload) = answer(&classifier, &bytes, batch, &stopping, &result_topic, &release_topic);
                let Some(payload) = payload else { continue };
                if topic == result_topic {
                    done.fetch_add(1, Ordering::Relaxed);
                }
                match rt.block_on(client.publish(topic, QoS::AtLeastOnce, false, payload)) {
                    Ok(()) => tracing::debug!("answer handed to the connection"),
                    Err(e) => tracing::warn!(error = %e, "could not send an answer to the hub"),
                }
            }
        })?
    };

    let mut jobs_filter: Option<String> = None;
    // Subscribed to the jobs but not yet acknowledged: the hub offers nothing until it hears the
    // broker took the subscription (`ready`), so no early offer goes to a group we are not in.
    let mut awaiting_jobs_ack = false;
    let status_body = |ready: bool| {
        serde_json::to_vec(&wire::Status { jobs: done.load(Ordering::Relaxed), ready }).unwrap_or_default()
    };
    let mut status = tokio::time::interval_at(tokio::time::Instant::now() + STATUS_EVERY, STATUS_EVERY);
    let mut failures = 0u32;
    let code = loop {
        let polled = tokio::select! {
            _ = shutdown.cancelled(), if !stopping.load(Ordering::Relaxed) => {
                stopping.store(true, Ordering::Relaxed);
                if let Some(f) = jobs_filter.take() {
                    tracing::info!("stopping: leaving the worker group, finishing the job in hand");
                    let _ = client.unsubscribe(f).await;
                } else {
                    break ExitCode::SUCCESS;
                }
                continue;
            }
            _ = status.tick() => {
                let ready = jobs_filter.is_some() && !awaiting_jobs_ack;
                let _ = client.try_publish(topic("status"), QoS::AtMostOnce, false, status_body(ready));
                continue;
            }
            p = eventloop.poll() => p,
        };
        match polled {
            Ok(Event::Incoming(Packet::ConnAck(ack))) => {
                failures = 0;
                if ack.code != ConnectReturnCode::Success {
                    tracing::error!(code = ?ack.code, "the broker refused the worker key (wrong, or revoked)");
                    break ExitCode::from(2);
                }
                tracing::info!(host = %options.host, port = options.port, "connected; joining the hub's workers");
                jobs_filter = None;
                awaiting_jobs_ack = false;
                client.subscribe(control.clone(), QoS::AtLeastOnce).await?;
                client.publish(topic("hello"), QoS::AtLeastOnce, false, serde_json::to_vec(&hello)?).await?;
            }
            Ok(Event::Incoming(Packet::Publish(p))) if p.topic.as_ref() == control.as_bytes() => {
                let Ok(answer) = serde_json::from_slice::<Answer>(&p.payload) else { continue };
                if answer.accepted {
                    tracing::info!(group = %answer.jobs, model = %hello.model, precision = %hello.precision, threads = hello.threads, "joined the hub's workers");
                    client.subscribe(answer.jobs.clone(), QoS::AtLeastOnce).await?;
                    jobs_filter = Some(answer.jobs);
                    awaiting_jobs_ack = true;
                } else if answer.retry {
                    tracing::warn!(
                        reason = answer.reason.as_deref().unwrap_or(""),
                        "the hub cannot take workers yet; joining again in 30 s"
                    );
                    let (client, t, body) = (client.clone(), topic("hello"), serde_json::to_vec(&hello)?);
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        let _ = client.publish(t, QoS::AtLeastOnce, false, body).await;
                    });
                } else {
                    tracing::error!(
                        reason = answer.reason.as_deref().unwrap_or("no reason given"),
                        "the hub refused this worker"
                    );
                    eprintln!("the hub refused this worker: {}", answer.reason.unwrap_or_default());
                    break ExitCode::from(2);
                }
            }
            Ok(Event::Incoming(Packet::SubAck(ack))) if awaiting_jobs_ack => {
                // The control topic's acknowledgement came before the join was even answered, so
                // this one is for the jobs.
                let Some(filter) = jobs_filter.clone() else { continue };
                if ack.return_codes.iter().all(|c| matches!(c, SubscribeReasonCode::Success(_))) {
                    awaiting_jobs_ack = false;
                    tracing::info!("subscribed to the jobs; telling the hub this worker is ready");
                    client.publish(topic("status"), QoS::AtLeastOnce, false, status_body(true)).await?;
                } else {
                    tracing::warn!(codes = ?ack.return_codes, "the broker refused the jobs subscription; trying again in 2 s");
                    let client = client.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_secs(2)).await;
                        let _ = client.subscribe(filter, QoS::AtLeastOnce).await;
                    });
                }
            }
            Ok(Event::Incoming(Packet::Publish(p))) => {
                if work_tx.send(Work::Job(p.payload.to_vec())).is_err() {
                    break ExitCode::FAILURE;
                }
            }
            Ok(Event::Incoming(Packet::UnsubAck(_))) if stopping.load(Ordering::Relaxed) => {
                // Jobs already on their way arrive within moments; they are given back.
                tokio::time::sleep(Duration::from_millis(500)).await;
                while let Ok(Ok(Event::Incoming(Packet::Publish(p)))) =
                    tokio::time::timeout(Duration::from_millis(200), eventloop.poll()).await
                {
                    let _ = work_tx.send(Work::Job(p.payload.to_vec()));
                }
                break ExitCode::SUCCESS;
            }
            Ok(_) => {}
            Err(rumqttc::v5::ConnectionError::ConnectionRefused(code))
                if matches!(code, ConnectReturnCode::BadUserNamePassword | ConnectReturnCode::NotAuthorized) =>
            {
                tracing::error!(?code, "the broker refused the worker key (wrong, or revoked)");
                eprintln!("the broker refused the worker key (wrong, or revoked)");
                break ExitCode::from(2);
            }
            Err(e) => {
                failures += 1;
                if stopping.load(Ordering::Relaxed) {
                    break ExitCode::SUCCESS;
                }
                let wait = Duration::from_secs(u64::from(failures.min(5)));
                tracing::warn!(error = %e, retry_in_s = wait.as_secs(), "the connection to the broker failed; reconnecting");
                tokio::select! {
                    _ = shutdown.cancelled() => break ExitCode::SUCCESS,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    };
    // The job in hand is answered (and any that came after given back) before the connection goes.
    drop(work_tx);
    let _ = tokio::task::spawn_blocking(move || compute.join()).await;
    // Let the last answers leave before saying goodbye.
    let flush = async {
        let _ = client.disconnect().await;
        while let Ok(e) = eventloop.poll().await {
            if matches!(e, Event::Outgoing(rumqttc::Outgoing::Disconnect)) {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), flush).await;
    Ok(code)
}

/// The answer to one job: its scores (or why it failed), or, once stopping, the job given back.
fn answer(
    classifier: &Classifier,
    bytes: &[u8],
    batch: usize,
    stopping: &AtomicBool,
    result_topic: &str,
    release_topic: &str,
) -> (String, Option<Vec<u8>>) {
    let job = match wire::decode_job(bytes) {
        Ok(j) => j,
        Err(e) => {
            tracing::warn!(error = %e, "an unreadable job was ignored");
            return (String::new(), None);
        }
    };
    tracing::debug!(token = %job.token, windows = job.windows.len(), "job received");
    if stopping.load(Ordering::Relaxed) {
        let body = serde_json::to_vec(&wire::Release { token: job.token }).unwrap_or_default();
        return (release_topic.to_owned(), Some(body));
    }
    let started = Instant::now();
    let mut logits = Vec::with_capacity(job.windows.len());
    for part in job.windows.chunks(batch) {
        let refs: Vec<&[f32]> = part.iter().map(Vec::as_slice).collect();
        match classifier.logits(&refs) {
            Ok(l) => logits.extend(l),
            Err(e) => return (result_topic.to_owned(), Some(wire::encode_failure(&job.token, &e.to_string()))),
        }
    }
    let ms = started.elapsed().as_secs_f64() * 1e3;
    (result_topic.to_owned(), Some(wire::encode_result(&job.token, &logits, ms)))
}
