//! The hub's side of its remote workers: who has joined, the offers waiting for an answer, and
//! how many may be out at once. Hub threads ([`crate::inference::worker`]'s remote slots) call
//! [`RemotePool::score`] as they would call the classifier; the answer comes back through the
//! broker ([`crate::mqtt::ingest`] hands worker messages to [`RemotePool::on_message`]).
//!
//! An offer carries a fresh random lease token. Only the worker the broker handed it to (one
//! member of the shared subscription) learns it, and the first answer with it before its deadline
//! is taken; anything later, or for a token it was never given, is dropped and counted.

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    sync::{Arc, Condvar, Mutex, OnceLock, atomic::AtomicU64, atomic::Ordering},
    time::{Duration, Instant},
};

use serde::Serialize;
use uuid::Uuid;

use super::wire::{self, Answer, Hello, Release};
use crate::time::Timestamp;

/// Job messages one joined worker may hold at once: one it works on, one waiting, so it never
/// idles between two. (The broker hands the group's messages out in turn, not by who is free:
/// `birdhub bench workers` is where a third would show whether it balances a shared machine
/// better.)
pub const IN_FLIGHT_PER_WORKER: usize = 2;

/// What the hub runs, which a worker must run too.
#[derive(Debug, Clone)]
pub struct Expected {
    pub model: String,
    pub labels: String,
    pub classes: usize,
}

/// A message for the broker (published by the hub's forwarder task).
#[derive(Debug)]
pub struct Outgoing {
    pub topic: String,
    pub payload: Vec<u8>,
}

/// Which worker topic a message came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Hello,
    Result,
    Release,
    Status,
}

impl Channel {
    pub fn parse(s: &str) -> Option<Channel> {
        Some(match s {
            "hello" => Channel::Hello,
            "result" => Channel::Result,
            "release" => Channel::Release,
            "status" => Channel::Status,
            _ => return None,
        })
    }
}

/// Why an offer got no scores.
#[derive(Debug, thiserror::Error)]
pub enum ScoreError {
    #[error("no worker answered within {0} s; the jobs go back to the queue")]
    Expired(u64),
    #[error("the worker gave the jobs back (it is stopping)")]
    Released,
    #[error("the worker could not classify the jobs: {0}")]
    Failed(String),
    #[error("{0}")]
    Wire(String),
}

enum Reply {
    Scores(Vec<Vec<f32>>),
    Released,
    Failed(String),
}

struct Pending {
    reply: std::sync::mpsc::SyncSender<Reply>,
    windows: usize,
    /// Chunk jobs the offer holds (0 for a second look's extra windows).
    chunks: usize,
}

/// One remote worker as the hub sees it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteWorker {
    pub id: Uuid,
    pub machine: String,
    pub model: String,
    pub precision: String,
    pub threads: usize,
    pub batch: usize,
    pub version: String,
    /// Joined (model checked) and connected.
    pub connected: bool,
    pub joined_at: Timestamp,
    pub last_seen_at: Timestamp,
    /// Chunk jobs it answered in the last minute.
    pub jobs_per_minute: usize,
    /// Chunk jobs it answered since it joined.
    pub jobs_done: u64,
    #[serde(skip)]
    recent: VecDeque<(Instant, usize)>,
    /// Its subscription to the jobs is in place ([`wire::Status::ready`]).
    #[serde(skip)]
    ready: bool,
    #[serde(skip)]
    joined: Option<Instant>,
}

/// How long a joined worker that never says it is ready (a build from before the ready message)
/// waits before it gets offers anyway.
const READY_FALLBACK: Duration = Duration::from_secs(5);

impl RemoteWorker {
    /// Whether offers may go to it: joined, connected, and subscribed to the jobs.
    fn takes_offers(&self) -> bool {
        self.connected && (self.ready || self.joined.is_some_and(|t| t.elapsed() >= READY_FALLBACK))
    }
}

/// Counters of the traffic with remote workers (`birdhub bench workers`, `/metrics`).
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Traffic {
    pub offers: u64,
    pub bytes_out: u64,
    pub results: u64,
    pub bytes_in: u64,
    /// Results that came after their lease ended or for a token never handed out.
    pub late_or_unknown: u64,
    /// Messages refused: from a worker that has not joined, or unreadable.
    pub refused: u64,
}

#[derive(Default)]
struct Counters {
    offers: AtomicU64,
    bytes_out: AtomicU64,
    results: AtomicU64,
    bytes_in: AtomicU64,
    late: AtomicU64,
    refused: AtomicU64,
}

#[derive(Default)]
struct Inner {
    expected: OnceLock<Expected>,
    root: OnceLock<String>,
    outbox: OnceLock<tokio::sync::mpsc::Sender<Outgoing>>,
    pending: Mutex<HashMap<String, Pending>>,
    workers: Mutex<BTreeMap<Uuid, RemoteWorker>>,
    /// Offers out now, and the condition slots wait on for room.
    in_flight: Mutex<usize>,
    room: Condvar,
    counters: Counters,
}

/// The remote workers of this hub. Cheap to clone.
#[derive(Clone, Default)]
pub struct RemotePool(Arc<Inner>);

/// The topic the hub offers jobs on, under the topic root.
pub fn jobs_topic(root: &str) -> String {
    format!("{root}/_work/jobs")
}

/// The shared subscription every worker joins for jobs: one fixed group, so no worker can make a
/// group of its own and see every job.
pub fn shared_jobs_filter(root: &str) -> String {
    format!("$share/{}/{}", super::GROUP, jobs_topic(root))
}

/// A worker's own topic: `{root}/_work/{id}/{kind}` (`hello`, `result`, `release`, `status`
/// from it; `control` to it).
pub fn worker_topic(root: &str, id: Uuid, kind: &str) -> String {
    format!("{root}/_work/{id}/{kind}")
}

/// The worker and channel of a topic under `{root}/_work/`.
pub fn parse_worker_topic<'a>(root: &str, topic: &'a str) -> Option<(Uuid, &'a str)> {
    let rest = topic.strip_prefix(root)?.strip_prefix("/_work/")?;
    let (id, kind) = rest.split_once('/')?;
    Some((id.parse().ok()?, kind))
}

impl RemotePool {
    /// Connects the pool to the broker's forwarder and the topic root.
    pub fn attach(&self, root: &str, outbox: tokio::sync::mpsc::Sender<Outgoing>) {
        let _ = self.0.root.set(root.to_owned());
        let _ = self.0.outbox.set(outbox);
    }

    /// What workers must run; set when the hub has read its model directory.
    pub fn expect(&self, expected: Expected) {
        let _ = self.0.expected.set(expected);
    }

    fn root(&self) -> &str {
        self.0.root.get().map_or("birdhub", String::as_str)
    }

    /// Whether `id` has joined and is connected (its results are read, its subscription allowed).
    pub fn is_joined(&self, id: Uuid) -> bool {
        self.0.workers.lock().map(|w| w.get(&id).is_some_and(|r| r.connected)).unwrap_or(false)
    }

    /// Offers the pool may hold now: [`IN_FLIGHT_PER_WORKER`] per worker that is ready for them.
    fn capacity(&self) -> usize {
        self.0.workers.lock().map(|w| w.values().filter(|r| r.takes_offers()).count()).unwrap_or(0)
            * IN_FLIGHT_PER_WORKER
    }

    /// Waits (at most `wait`) for room for one more offer; `true` when taken (give it back with
    /// [`RemotePool::done`]).
    pub fn take_room(&self, wait: Duration) -> bool {
        let Ok(guard) = self.0.in_flight.lock() else { return false };
        let Ok((mut n, _)) = self.0.room.wait_timeout_while(guard, wait, |n| *n >= self.capacity()) else {
            return false;
        };
        if *n >= self.capacity() {
            return false;
        }
        *n += 1;
        true
    }

    /// Gives back room taken with [`RemotePool::take_room`].
    pub fn done(&self) {
        if let Ok(mut n) = self.0.in_flight.lock() {
            *n = n.saturating_sub(1);
        }
        self.0.room.notify_one();
    }

    /// Wakes every slot (a worker joined or left, or the hub stops).
    pub fn wake_all(&self) {
        self.0.room.notify_all();
    }

    /// Sends `windows` to the worker group and waits (blocking, at most `lease`) for their scores.
    /// `chunks` is how many chunk jobs they are (for the workers' counters).
    pub fn score(&self, windows: &[&[f32]], chunks: usize, lease: Duration) -> Result<Vec<Vec<f32>>, ScoreError> {
        let token = crate::auth::tokens::random_hex(16);
        let payload = wire::encode_job(&token, windows).map_err(|e| ScoreError::Wire(e.0))?;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        if let Ok(mut p) = self.0.pending.lock() {
            p.insert(token.clone(), Pending { reply: tx, windows: windows.len(), chunks });
        }
        let c = &self.0.counters;
        c.offers.fetch_add(1, Ordering::Relaxed);
        c.bytes_out.fetch_add(payload.len() as u64, Ordering::Relaxed);
        let sent =
            self.0.outbox.get().ok_or_else(|| ScoreError::Wire("the broker is not running".into())).and_then(|o| {
                o.blocking_send(Outgoing { topic: jobs_topic(self.root()), payload })
                    .map_err(|_| ScoreError::Wire("the broker is not running".into()))
            });
        tracing::debug!(token = %token, windows = windows.len(), "offer sent to the worker group");
        let answer = sent.and_then(|()| rx.recv_timeout(lease).map_err(|_| ScoreError::Expired(lease.as_secs())));
        if answer.is_err() {
            tracing::warn!(token = %token, windows = windows.len(), "an offer got no answer");
        }
        // Whatever happened, the token is spent: a later answer with it is late.
        if let Ok(mut p) = self.0.pending.lock() {
            p.remove(&token);
        }
        match answer? {
            Reply::Scores(l) => Ok(l),
            Reply::Released => Err(ScoreError::Released),
            Reply::Failed(e) => Err(ScoreError::Failed(e)),
        }
    }

    /// A message from worker `id` on one of its channels (the broker checked the topic is its
    /// own). Returns the join answer to publish on its control topic, if any.
    pub fn on_message(&self, id: Uuid, channel: Channel, payload: &[u8], now: Timestamp) -> Option<Answer> {
        let c = &self.0.counters;
        c.bytes_in.fetch_add(payload.len() as u64, Ordering::Relaxed);
        if channel == Channel::Hello {
            return Some(self.join(id, payload, now));
        }
        if !self.is_joined(id) {
            c.refused.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(worker = %id, ?channel, "a message from a worker that has not joined was refused");
            return None;
        }
        match channel {
            Channel::Hello => None,
            Channel::Status => {
                self.touch(id, now, 0);
                let status = serde_json::from_slice::<wire::Status>(payload).unwrap_or_default();
                if status.ready {
                    self.mark_ready(id);
                }
                None
            }
            Channel::Release => {
                match serde_json::from_slice::<Release>(payload) {
                    Ok(r) => {
                        if let Some(p) = self.take(&r.token) {
                            let _ = p.reply.try_send(Reply::Released);
                        }
                    }
                    Err(_) => {
                        c.refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
                None
            }
            Channel::Result => {
                let classes = self.0.expected.get().map_or(0, |e| e.classes);
                let result = match wire::decode_result(payload, classes) {
                    Ok(r) => r,
                    Err(e) => {
                        c.refused.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(worker = %id, error = %e, "an unreadable result was refused");
                        return None;
                    }
                };
                let Some(p) = self.take(&result.token) else {
                    c.late.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(
                        worker = %id,
                        "a result for a job no longer leased was dropped: if this worker is slow, raise \
                         inference.lease_seconds above its time for a batch"
                    );
                    return None;
                };
                c.results.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(worker = %id, token = %result.token, "result taken");
                let reply = match result.error {
                    Some(e) => Reply::Failed(e),
                    None if result.logits.len() != p.windows => {
                        Reply::Failed(format!("the worker answered {} windows for {}", result.logits.len(), p.windows))
                    }
                    None => {
                        self.touch(id, now, p.chunks);
                        Reply::Scores(result.logits)
                    }
                };
                let _ = p.reply.try_send(reply);
                None
            }
        }
    }

    /// The worker's jobs subscription is in place: slots may offer to it now.
    fn mark_ready(&self, id: Uuid) {
        let newly = self.0.workers.lock().is_ok_and(|mut w| {
            w.get_mut(&id).is_some_and(|r| {
                let was = r.ready;
                r.ready = true;
                !was
            })
        });
        if newly {
            tracing::debug!(worker = %id, "a remote worker is subscribed to the jobs");
            self.wake_all();
        }
    }

    fn take(&self, token: &str) -> Option<Pending> {
        self.0.pending.lock().ok()?.remove(token)
    }

    fn touch(&self, id: Uuid, now: Timestamp, chunks: usize) {
        if let Ok(mut w) = self.0.workers.lock()
            && let Some(r) = w.get_mut(&id)
        {
            r.last_seen_at = now;
            if chunks > 0 {
                let at = Instant::now();
                r.recent.push_back((at, chunks));
                r.jobs_done += chunks as u64;
                while r.recent.front().is_some_and(|(t, _)| at.duration_since(*t) > Duration::from_secs(60)) {
                    r.recent.pop_front();
                }
            }
        }
    }

    /// Checks a join against the hub's model and labels.
    fn join(&self, id: Uuid, payload: &[u8], now: Timestamp) -> Answer {
        let refuse =
            |reason: String| Answer { accepted: false, reason: Some(reason), jobs: String::new(), retry: false };
        let hello = match Hello::parse(payload) {
            Ok(h) => h,
            Err(e) => return refuse(format!("the join could not be read: {e}")),
        };
        let Some(expected) = self.0.expected.get() else {
            return Answer { retry: true, ..refuse("the hub has not loaded its model directory yet".into()) };
        };
        if hello.model != expected.model || hello.labels != expected.labels {
            return refuse(format!(
                "this worker runs model {} with label set {}, the hub runs model {} with label set {} ({} labels): \
                 install the hub's model directory on the worker",
                hello.model,
                short(&hello.labels),
                expected.model,
                short(&expected.labels),
                expected.classes
            ));
        }
        let worker = RemoteWorker {
            id,
            machine: hello.machine,
            model: hello.model,
            precision: hello.precision,
            threads: hello.threads,
            batch: hello.batch,
            version: hello.version,
            connected: true,
            joined_at: now,
            last_seen_at: now,
            jobs_per_minute: 0,
            jobs_done: 0,
            recent: VecDeque::new(),
            ready: false,
            joined: Some(Instant::now()),
        };
        if let Ok(mut w) = self.0.workers.lock() {
            let done = w.get(&id).map_or(0, |r| r.jobs_done);
            w.insert(id, RemoteWorker { jobs_done: done, ..worker });
        }
        // No slot is woken yet: offers wait for the worker's word that it subscribed to the jobs.
        Answer { accepted: true, reason: None, jobs: shared_jobs_filter(self.root()), retry: false }
    }

    /// The worker's connection closed: it gets no more offers (those it holds end with their lease).
    pub fn disconnected(&self, id: Uuid) {
        if let Ok(mut w) = self.0.workers.lock()
            && let Some(r) = w.get_mut(&id)
        {
            r.connected = false;
        }
        self.wake_all();
    }

    /// A revoked worker is forgotten: nothing it sends is read any more.
    pub fn forget(&self, id: Uuid) {
        if let Ok(mut w) = self.0.workers.lock() {
            w.remove(&id);
        }
        self.wake_all();
    }

    /// The hub is stopping: every offer waiting for an answer ends now (its jobs go back to the
    /// queue), and no worker gets more.
    pub fn close(&self) {
        if let Ok(mut w) = self.0.workers.lock() {
            w.values_mut().for_each(|r| r.connected = false);
        }
        let pending: Vec<Pending> =
            self.0.pending.lock().map(|mut p| p.drain().map(|(_, v)| v).collect()).unwrap_or_default();
        for p in pending {
            let _ = p.reply.try_send(Reply::Released);
        }
        self.wake_all();
    }

    /// Every worker heard from since the hub started, with its jobs per minute now.
    pub fn snapshot(&self) -> Vec<RemoteWorker> {
        let now = Instant::now();
        self.0
            .workers
            .lock()
            .map(|w| {
                w.values()
                    .map(|r| {
                        let recent = r.recent.iter().filter(|(t, _)| now.duration_since(*t) <= Duration::from_secs(60));
                        RemoteWorker { jobs_per_minute: recent.map(|(_, n)| n).sum(), ..r.clone() }
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn traffic(&self) -> Traffic {
        let c = &self.0.counters;
        Traffic {
            offers: c.offers.load(Ordering::Relaxed),
            bytes_out: c.bytes_out.load(Ordering::Relaxed),
            results: c.results.load(Ordering::Relaxed),
            bytes_in: c.bytes_in.load(Ordering::Relaxed),
            late_or_unknown: c.late.load(Ordering::Relaxed),
            refused: c.refused.load(Ordering::Relaxed),
        }
    }
}

/// The first 12 hex digits of a fingerprint, enough to tell two apart in a message.
fn short(fingerprint: &str) -> String {
    fingerprint.chars().take(12).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> (RemotePool, tokio::sync::mpsc::Receiver<Outgoing>) {
        let (tx, rx) = tokio::sync::mpsc::channel(8);
        let pool = RemotePool::default();
        pool.attach("bh", tx);
        pool.expect(Expected { model: "birdnet-v2.4".into(), labels: "a".repeat(64), classes: 3 });
        (pool, rx)
    }

    fn hello(labels: &str) -> Vec<u8> {
        serde_json::json!({"machine": "m", "model": "birdnet-v2.4", "labels": labels, "precision": "fp32",
            "threads": 1, "batch": 8, "version": "t"})
        .to_string()
        .into_bytes()
    }

    fn now() -> Timestamp {
        Timestamp(chrono::Utc::now())
    }

    #[test]
    fn a_join_with_another_label_set_is_refused_naming_both() {
        let (pool, _rx) = pool();
        let id = Uuid::new_v4();
        let answer = pool.on_message(id, Channel::Hello, &hello(&"b".repeat(64)), now()).expect("answer");
        assert!(!answer.accepted && !answer.retry);
        let reason = answer.reason.expect("reason");
        assert!(reason.contains("bbbbbbbbbbbb") && reason.contains("aaaaaaaaaaaa"), "{reason}");
        assert!(!pool.is_joined(id));
        let answer = pool.on_message(id, Channel::Hello, &hello(&"a".repeat(64)), now()).expect("answer");
        assert!(answer.accepted, "{answer:?}");
        assert_eq!(answer.jobs, "$share/birdhub-workers/bh/_work/jobs");
        assert!(pool.is_joined(id));
    }

    #[test]
    fn only_the_first_answer_with_a_live_token_is_taken() {
        let (pool, mut rx) = pool();
        let id = Uuid::new_v4();
        pool.on_message(id, Channel::Hello, &hello(&"a".repeat(64)), now());
        let worker = pool.clone();
        let answer = std::thread::spawn(move || {
            let window = vec![0.0f32; crate::inference::audio::WINDOW];
            worker.score(&[&window], 1, Duration::from_secs(10))
        });
        let offer = rx.blocking_recv().expect("an offer");
        let job = wire::decode_job(&offer.payload).expect("job");
        let result = wire::encode_result(&job.token, &[vec![1.0, 2.0, 3.0]], 1.0);
        pool.on_message(id, Channel::Result, &result, now());
        assert_eq!(answer.join().expect("thread").expect("scores"), vec![vec![1.0, 2.0, 3.0]]);
        // The same answer again is late; one from a worker that was revoked is not read.
        pool.on_message(id, Channel::Result, &result, now());
        assert_eq!(pool.traffic().late_or_unknown, 1);
        pool.forget(id);
        pool.on_message(id, Channel::Result, &result, now());
        assert_eq!((pool.traffic().late_or_unknown, pool.traffic().refused), (1, 1));
    }

    #[test]
    fn an_offer_nobody_answers_ends_with_its_lease_and_room_follows_the_workers() {
        let (pool, _rx) = pool();
        assert!(!pool.take_room(Duration::from_millis(10)), "no worker, no room");
        let id = Uuid::new_v4();
        pool.on_message(id, Channel::Hello, &hello(&"a".repeat(64)), now());
        // Joined, but the broker has not confirmed its jobs subscription: an offer now would
        // reach nobody and wait out its whole lease.
        assert!(!pool.take_room(Duration::from_millis(10)), "no room before the worker is subscribed");
        pool.on_message(id, Channel::Status, br#"{"jobs":0}"#, now());
        assert!(!pool.take_room(Duration::from_millis(10)), "a status that is not ready changes nothing");
        pool.on_message(id, Channel::Status, br#"{"jobs":0,"ready":true}"#, now());
        for _ in 0..IN_FLIGHT_PER_WORKER {
            assert!(pool.take_room(Duration::from_millis(10)));
        }
        assert!(!pool.take_room(Duration::from_millis(10)), "so many offers per worker");
        pool.done();
        assert!(pool.take_room(Duration::from_millis(10)));
        let window = vec![0.0f32; crate::inference::audio::WINDOW];
        let expired = pool.score(&[&window], 1, Duration::from_millis(50));
        assert!(matches!(expired, Err(ScoreError::Expired(_))), "{expired:?}");
        pool.disconnected(id);
        pool.done();
        assert!(!pool.take_room(Duration::from_millis(10)), "a worker gone takes its room along");
    }
}
