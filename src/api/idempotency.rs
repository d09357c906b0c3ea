//! `Idempotency-Key` on every `POST`: a retried or double-clicked request makes one row, not two.
//!
//! A request with the header is remembered per credential, team, method, path and key. Only a
//! live credential counts: the session, JWT or API key is resolved as the route's own guard would
//! resolve it (not revoked, not expired, not blocked) before anything is looked up, so a signed-out
//! token never gets a kept answer back (it runs, and its route answers 401). The entry is scoped to
//! the session or key id behind the credential, so a revoked and reissued credential never matches.
//!
//! The first request runs. While it runs it is held in a small map of its own ([`Limits::running`]
//! at most; beyond that a new keyed request gets 503 `too_many_requests`), never in the cache, so
//! no cache pressure can drop it: a repeat that arrives meanwhile waits for it (up to
//! [`Limits::wait`]), else gets 409 `request_in_progress`.
//!
//! Only the answers of routes that create something are kept: 201 Created or 202 Accepted, JSON,
//! at most [`Limits::max_body`] bytes. Every repeat within [`Limits::keep`] gets that answer back
//! with `Idempotent-Replayed: true`. Any other answer (200, a refusal, an error) is not kept: the
//! next request with the key runs for real. The cache is weighed in bytes: [`Limits::total_bytes`]
//! for the hub, and one caller holds at most [`Limits::caller_entries`] answers and
//! [`Limits::caller_bytes`] bytes (their oldest answers go first), so one account cannot fill it.
//! A key is at most 64 visible ASCII characters (else 400 `invalid_idempotency_key`). Requests
//! without a live credential are not remembered.

use std::{
    collections::{HashMap, VecDeque},
    future::Future,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
};
use moka::{future::Cache, notification::RemovalCause};
use tokio::sync::watch;

use super::ApiError;
use crate::{
    auth::{
        context::{self, Principal},
        tokens,
    },
    state::AppState,
};

/// The request header.
pub const HEADER: &str = "idempotency-key";
/// The longest key accepted.
pub const MAX_KEY_LEN: usize = 64;

/// How much is remembered, and for how long.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Bytes of kept answers (bodies, headers and ids) for the whole hub.
    pub total_bytes: u64,
    /// Bytes of kept answers one credential may hold.
    pub caller_bytes: u64,
    /// Kept answers one credential may hold.
    pub caller_entries: usize,
    /// The largest answer body kept (the answers of creating routes are small JSON).
    pub max_body: usize,
    /// First requests running at once with a key, hub-wide.
    pub running: usize,
    /// How long an answer is kept.
    pub keep: Duration,
    /// How long a repeat waits for the first request to finish.
    pub wait: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            total_bytes: 16 * 1024 * 1024,
            caller_bytes: 1024 * 1024,
            caller_entries: 256,
            max_body: 64 * 1024,
            running: 4096,
            keep: Duration::from_secs(24 * 3600),
            wait: Duration::from_secs(30),
        }
    }
}

/// A kept answer.
#[derive(Debug)]
struct Stored {
    /// Whose answer it is (hashed), to give its bytes back to that caller when it goes.
    caller: String,
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Stored {
    /// Roughly what it costs in memory.
    fn weight(&self, id: &str) -> u64 {
        let headers: usize = self.headers.iter().map(|(k, v)| k.as_str().len() + v.len() + 32).sum();
        (self.body.len() + headers + id.len() + self.caller.len() + 128) as u64
    }
}

/// Where the first request with a key is.
#[derive(Debug, Clone)]
enum Phase {
    Running,
    Done(Arc<Stored>),
    Failed,
}

/// What one caller holds in the cache, oldest first.
#[derive(Debug, Default)]
struct Held {
    entries: VecDeque<(String, u64)>,
    bytes: u64,
}

type Callers = Arc<Mutex<HashMap<String, Held>>>;

/// The remembered keys, shared by every clone of the API router.
#[derive(Clone)]
pub struct Keys(Arc<Inner>);

struct Inner {
    limits: Limits,
    /// Finished answers, weighed in bytes.
    done: Cache<String, Arc<Stored>>,
    /// First requests still running: outside the cache, so never evicted.
    running: Mutex<HashMap<String, watch::Receiver<Phase>>>,
    /// What each caller holds in `done`, for the per-caller cap.
    callers: Callers,
}

impl Default for Keys {
    fn default() -> Self {
        Self::new(Limits::default())
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Takes a gone answer off its caller's list.
fn forget(callers: &Mutex<HashMap<String, Held>>, caller: &str, id: &str) {
    let mut callers = lock(callers);
    let Some(held) = callers.get_mut(caller) else { return };
    if let Some((_, w)) = held.entries.iter().position(|(i, _)| i == id).and_then(|at| held.entries.remove(at)) {
        held.bytes = held.bytes.saturating_sub(w);
    }
    if held.entries.is_empty() {
        callers.remove(caller);
    }
}

/// The first request's claim on a key; dropped without an answer (a failure, a cancelled
/// request), it lets waiting repeats run.
struct Claim {
    keys: Keys,
    id: String,
    tx: watch::Sender<Phase>,
}

impl Claim {
    fn finish(self, phase: Phase) {
        self.tx.send_replace(phase);
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        lock(&self.keys.0.running).remove(&self.id);
        if matches!(*self.tx.borrow(), Phase::Running) {
            self.tx.send_replace(Phase::Failed);
        }
    }
}

enum Look {
    Mine(Claim),
    Wait(watch::Receiver<Phase>),
    Full,
}

impl Keys {
    pub fn new(limits: Limits) -> Self {
        let callers: Callers = Arc::default();
        let listener = callers.clone();
        let done = Cache::builder()
            .max_capacity(limits.total_bytes)
            .weigher(|id: &String, s: &Arc<Stored>| u32::try_from(s.weight(id)).unwrap_or(u32::MAX))
            .time_to_live(limits.keep)
            .eviction_listener(move |id: Arc<String>, s: Arc<Stored>, cause| {
                if cause != RemovalCause::Replaced {
                    forget(&listener, &s.caller, &id);
                }
            })
            .build();
        Self(Arc::new(Inner { limits, done, running: Mutex::default(), callers }))
    }

    /// Runs `run` for the first request with `id` and keeps its answer if it created something;
    /// a repeat gets that answer back. `caller` is whom the kept answer is counted against.
    pub async fn once<F, Fut>(&self, caller: &str, id: String, run: F) -> Response
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Response>,
    {
        loop {
            if let Some(stored) = self.0.done.get(&id).await {
                return replay(&stored);
            }
            let look = {
                let mut running = lock(&self.0.running);
                if let Some(rx) = running.get(&id) {
                    Look::Wait(rx.clone())
                } else if running.len() >= self.0.limits.running {
                    Look::Full
                } else {
                    let (tx, rx) = watch::channel(Phase::Running);
                    running.insert(id.clone(), rx);
                    Look::Mine(Claim { keys: self.clone(), id: id.clone(), tx })
                }
            };
            match look {
                Look::Full => {
                    return ApiError::Unavailable(
                        "too_many_requests",
                        "the hub is handling too many requests with an Idempotency-Key; try again in a moment".into(),
                    )
                    .into_response();
                }
                Look::Wait(mut first) => {
                    let phase =
                        tokio::time::timeout(self.0.limits.wait, first.wait_for(|p| !matches!(p, Phase::Running)))
                            .await
                            .map(|r| r.map(|p| p.clone()).unwrap_or(Phase::Failed));
                    match phase {
                        Ok(Phase::Done(stored)) => return replay(&stored),
                        // The first failed or kept nothing: this one may claim the key and run.
                        Ok(_) => continue,
                        Err(_) => {
                            return ApiError::Conflict(
                                "request_in_progress",
                                "the same request is still being handled; try again in a moment".into(),
                            )
                            .into_response();
                        }
                    }
                }
                Look::Mine(claim) => {
                    // The first may have finished between the look-up and the claim.
                    if let Some(stored) = self.0.done.get(&id).await {
                        claim.finish(Phase::Done(stored.clone()));
                        return replay(&stored);
                    }
                    let resp = run().await;
                    return self.keep(caller, claim, resp).await;
                }
            }
        }
    }

    /// Keeps a creating route's answer; anything else only ends the claim.
    async fn keep(&self, caller: &str, claim: Claim, resp: Response) -> Response {
        let max = self.0.limits.max_body;
        let (parts, body) = resp.into_parts();
        let creates = matches!(parts.status, StatusCode::CREATED | StatusCode::ACCEPTED);
        if !(creates && small_json(&parts.headers, max)) {
            return Response::from_parts(parts, body);
        }
        match axum::body::to_bytes(body, max).await {
            Ok(bytes) => {
                let stored = Arc::new(Stored {
                    caller: caller.to_owned(),
                    status: parts.status,
                    headers: parts.headers.clone(),
                    body: bytes.clone(),
                });
                let weight = stored.weight(&claim.id);
                // Into the cache before the claim goes, so a repeat always finds one of the two.
                self.0.done.insert(claim.id.clone(), stored.clone()).await;
                self.count(caller, &claim.id, weight).await;
                claim.finish(Phase::Done(stored));
                Response::from_parts(parts, Body::from(bytes))
            }
            Err(e) => ApiError::internal(anyhow::anyhow!("reading an answer to keep for its Idempotency-Key: {e}"))
                .into_response(),
        }
    }

    /// Counts a kept answer against its caller, dropping the caller's oldest beyond the cap.
    async fn count(&self, caller: &str, id: &str, weight: u64) {
        let limits = &self.0.limits;
        let dropped: Vec<String> = {
            let mut callers = lock(&self.0.callers);
            let held = callers.entry(caller.to_owned()).or_default();
            held.entries.push_back((id.to_owned(), weight));
            held.bytes += weight;
            let mut dropped = Vec::new();
            while held.entries.len() > limits.caller_entries || held.bytes > limits.caller_bytes {
                let Some((old, w)) = held.entries.pop_front() else { break };
                held.bytes = held.bytes.saturating_sub(w);
                dropped.push(old);
            }
            dropped
        };
        for old in dropped {
            self.0.done.invalidate(&old).await;
        }
    }
}

/// The middleware's state: the keys, and the hub to resolve credentials with.
#[derive(Clone)]
pub struct Idempotency {
    app: AppState,
    keys: Keys,
}

impl Idempotency {
    pub fn new(app: AppState) -> Self {
        Self { app, keys: Keys::default() }
    }
}

/// The middleware (`axum::middleware::from_fn_with_state(Idempotency::new(state), layer)`).
pub async fn layer(State(idem): State<Idempotency>, req: Request, next: Next) -> Response {
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let Some(raw) = req.headers().get(HEADER) else {
        return next.run(req).await;
    };
    let key = match raw.to_str() {
        Ok(k) if !k.is_empty() && k.len() <= MAX_KEY_LEN && k.bytes().all(|b| b.is_ascii_graphic()) => k.to_owned(),
        _ => {
            return ApiError::BadRequest(
                "invalid_idempotency_key",
                format!("the Idempotency-Key header must be 1 to {MAX_KEY_LEN} visible characters"),
            )
            .into_response();
        }
    };
    // Only a live credential is remembered or answered from memory; anything else runs as if it
    // had no key, and its route refuses it.
    let Ok(who) = context::resolve(&idem.app, req.headers()).await else {
        return next.run(req).await;
    };
    let caller = caller(&who.principal, req.headers());
    let team = req.headers().get("x-tenant-id").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let path = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let id = tokens::sha256_hex(&format!("{caller}\n{team}\nPOST {path}\n{key}"));
    idem.keys.once(&caller, id, || next.run(req)).await
}

/// Who is asking, hashed: the session or key behind the credential, and the credential itself.
fn caller(principal: &Principal, headers: &HeaderMap) -> String {
    let who = match principal {
        Principal::Internal => "internal".to_owned(),
        Principal::User { user_id, session_id } => format!("user {user_id} session {session_id}"),
        Principal::ApiKey { key_id, .. } | Principal::Satellite { key_id, .. } => format!("key {key_id}"),
    };
    let session = context::cookie(headers, tokens::SESSION_COOKIE).unwrap_or_default();
    let bearer = headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or_default();
    tokens::sha256_hex(&format!("{who}\n{session}\n{bearer}"))
}

/// An answer small enough to keep: JSON (or no body) with a known, small length.
fn small_json(headers: &HeaderMap, max: usize) -> bool {
    let json = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|t| t.starts_with("application/json"));
    let small = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .is_none_or(|n| n <= max);
    json && small
}

fn replay(stored: &Stored) -> Response {
    let mut resp = Response::new(Body::from(stored.body.clone()));
    *resp.status_mut() = stored.status;
    *resp.headers_mut() = stored.headers.clone();
    resp.headers_mut().insert("idempotent-replayed", HeaderValue::from_static("true"));
    resp
}

#[cfg(test)]
#[path = "idempotency_tests.rs"]
mod tests;
