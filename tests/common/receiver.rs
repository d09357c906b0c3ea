//! A real webhook receiver for tests: an axum server on 127.0.0.1 that keeps every request it
//! accepts (path, headers, raw body). With a secret it checks `X-Service-Signature` against the
//! raw bytes in constant time and answers 401 on a missing or wrong one (SPEC 5.6). Statuses
//! can be scripted (503, 503, then 200 ...); a path ending in `/hang` never answers, one ending
//! in `/huge` answers with 50 MB and one ending in `/gone` with 404.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::State,
    http::{HeaderMap, StatusCode, Uri},
    response::{IntoResponse, Response},
};
use tokio::sync::Notify;

/// One request the receiver saw.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// What the receiver answered.
    pub status: u16,
}

impl Received {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("body is not JSON ({e}): {:?}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Clone, Default)]
struct Inner {
    secret: Option<Vec<u8>>,
    script: Arc<Mutex<VecDeque<u16>>>,
    seen: Arc<Mutex<Vec<Received>>>,
    arrived: Arc<Notify>,
}

#[derive(Clone)]
pub struct Receiver {
    pub base: String,
    inner: Inner,
}

impl Receiver {
    pub async fn start(secret: Option<&str>) -> Self {
        Self::start_on("127.0.0.1:0", secret).await
    }

    /// On a fixed address (a restarted hub must find the same receiver).
    pub async fn start_on(addr: &str, secret: Option<&str>) -> Self {
        let inner = Inner { secret: secret.map(|s| s.as_bytes().to_vec()), ..Default::default() };
        let app = Router::new().fallback(handle).with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind(addr).await.expect("bind receiver");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { base, inner }
    }

    /// The next requests get these statuses, in order; after them, 200.
    pub fn script(&self, statuses: &[u16]) {
        self.inner.script.lock().expect("lock").extend(statuses);
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn received(&self) -> Vec<Received> {
        self.inner.seen.lock().expect("lock").clone()
    }

    /// Waits until `n` requests have arrived (at most `secs`), then returns them all.
    pub async fn wait_for(&self, n: usize, secs: u64) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let notified = self.inner.arrived.notified();
            let seen = self.received();
            if seen.len() >= n || tokio::time::Instant::now() >= deadline {
                return seen;
            }
            let _ = tokio::time::timeout_at(deadline, notified).await;
        }
    }
}

async fn handle(State(inner): State<Inner>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let path = uri.path().to_owned();
    if path.ends_with("/hang") {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
    let status = if let Some(secret) = &inner.secret {
        let header = headers.get(birdhub::notify::signature::HEADER).and_then(|v| v.to_str().ok());
        if birdhub::notify::signature::verify(secret, &body, header) { None } else { Some(401) }
    } else {
        None
    };
    let status = match status {
        Some(s) => s,
        None if path.ends_with("/gone") => 404,
        None => inner.script.lock().expect("lock").pop_front().unwrap_or(200),
    };
    inner.seen.lock().expect("lock").push(Received { path: path.clone(), headers, body, status });
    inner.arrived.notify_waiters();
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    if path.ends_with("/huge") {
        let chunk = Bytes::from(vec![b'x'; 1 << 20]);
        let stream = futures_util::stream::iter((0..50).map(move |_| Ok::<_, std::io::Error>(chunk.clone())));
        return (code, Body::from_stream(stream)).into_response();
    }
    (code, "ok").into_response()
}
