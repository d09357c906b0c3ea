//! The one writer of chunks. Ingest hands it each checked chunk through a bounded queue and
//! waits for the outcome; the writer takes everything queued (up to [`MAX_BATCH`]), stores it as
//! one batch ([`super::batch`]) and answers each sender. While a batch waits for its fsyncs the
//! next one gathers, so batches grow with the load and a lone chunk is written at once.
//! A full queue makes the sender wait, and the broker handles a client's publishes in order,
//! so a slow disk slows the satellites down instead of losing chunks.
//!
//! The writer is a loop on a thread of its own, not an async task: a lone chunk (the
//! real rate, one every few hundred ms) then costs one wake-up of that thread and one of the
//! sender, not also a hop from a task to a blocking thread for the database and back (issue 39).

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use tokio::sync::{mpsc, oneshot};

use super::{Checked, ChunkError, Stored, batch};
use crate::{
    clock::Clock,
    objects::ObjectStore,
    store::{self, Store},
    usecases::audio_retention::DiskGuard,
};

/// The most chunks in one commit (about 10 MB of 3 s chunks at 48 kHz).
pub const MAX_BATCH: usize = 32;
/// Chunks that may wait for the writer before senders have to wait too.
const QUEUE: usize = 2 * MAX_BATCH;

/// A chunk and the sender waiting for its outcome.
struct Request {
    chunk: Checked,
    done: oneshot::Sender<Result<Stored, ChunkError>>,
}

/// The handles the writer stores with.
#[derive(Clone)]
pub struct Handles {
    pub store: Store,
    pub objects: ObjectStore,
    pub clock: Clock,
    pub disk: DiskGuard,
}

/// The queue into the writer task. Cheap to clone; the task ends when the last clone is dropped.
#[derive(Clone)]
pub struct ChunkWriter {
    queue: mpsc::Sender<Request>,
    counts: Arc<Counts>,
}

/// Batches and chunks written so far, for the benchmark's mean batch size.
#[derive(Debug, Default)]
struct Counts {
    batches: AtomicU64,
    chunks: AtomicU64,
}

impl ChunkWriter {
    /// Starts the writer on a thread of its own (`chunk-writer`), which uses the current runtime
    /// only for the disk guard. The thread ends when the last clone of the writer is dropped.
    pub fn spawn(handles: Handles) -> std::io::Result<Self> {
        let (queue, requests) = mpsc::channel(QUEUE);
        let counts = Arc::new(Counts::default());
        let (rt, c) = (tokio::runtime::Handle::current(), counts.clone());
        std::thread::Builder::new().name("chunk-writer".into()).spawn(move || run(handles, rt, requests, c))?;
        Ok(Self { queue, counts })
    }

    /// Stores a checked chunk; returns once its file and row are durable (or it failed).
    pub async fn store(&self, chunk: Checked) -> Result<Stored, ChunkError> {
        let stopped = || ChunkError::NotStored("the hub is shutting down".into());
        let (done, outcome) = oneshot::channel();
        self.queue.send(Request { chunk, done }).await.map_err(|_| stopped())?;
        outcome.await.map_err(|_| stopped())?
    }

    /// (batches, chunks) written since the start.
    pub fn counts(&self) -> (u64, u64) {
        (self.counts.batches.load(Ordering::Relaxed), self.counts.chunks.load(Ordering::Relaxed))
    }
}

fn run(h: Handles, rt: tokio::runtime::Handle, mut requests: mpsc::Receiver<Request>, counts: Arc<Counts>) {
    let mut taken = Vec::with_capacity(MAX_BATCH);
    // One connection for the writer's life: its cached statements and pages stay warm (the
    // writer is the only one changing most of them), taken by the first batch.
    let mut conn: Option<store::Pooled> = None;
    while let Some(first) = requests.blocking_recv() {
        taken.push(first);
        while taken.len() < MAX_BATCH {
            match requests.try_recv() {
                Ok(r) => taken.push(r),
                Err(_) => break,
            }
        }
        let (chunks, senders): (Vec<_>, Vec<_>) = taken.drain(..).map(|r| (r.chunk, r.done)).unzip();
        counts.batches.fetch_add(1, Ordering::Relaxed);
        counts.chunks.fetch_add(chunks.len() as u64, Ordering::Relaxed);
        let outcomes = match conn.as_deref_mut() {
            Some(c) => batch::store_batch_blocking(c, &h.store, &h.objects, &h.clock, &h.disk, &rt, chunks),
            None => match h.store.dedicated() {
                Ok(c) => {
                    batch::store_batch_blocking(conn.insert(c), &h.store, &h.objects, &h.clock, &h.disk, &rt, chunks)
                }
                Err(e) => batch::failed(&e, chunks.len()), // the next batch asks again
            },
        };
        for (sender, outcome) in senders.into_iter().zip(outcomes) {
            let _ = sender.send(outcome); // a sender that went away has nobody to ack
        }
    }
}
