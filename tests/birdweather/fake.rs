#![allow(dead_code)]
//! A local stand-in for BirdWeather's station API (IMPORTS.md C.2, C.3, C.5), over real HTTP.
//! It keeps every request (method, path, raw query, headers, body) and answers the calls the
//! way BirdWeather does: a soundscape with 201 and a new numeric id, a detection with 201, the
//! station's figures with 200. Answers can be scripted per call (a 415 with `success: true`
//! and a null id, a 503, a 422 species refusal ...).

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Router,
    body::Bytes,
    extract::State,
    http::{HeaderMap, Method, StatusCode, Uri},
    response::{IntoResponse, Response},
};
use tokio::sync::Notify;

/// One request BirdWeather saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: Method,
    pub path: String,
    /// The query exactly as sent (still percent-encoded).
    pub query: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub status: u16,
    /// What the fake answered.
    pub answer: String,
}

impl Seen {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("body is not JSON ({e}): {:?}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn is_soundscape(&self) -> bool {
        self.path.ends_with("/soundscapes")
    }

    pub fn is_detection(&self) -> bool {
        self.path.ends_with("/detections")
    }

    /// A query parameter, percent-decoded.
    pub fn param(&self, name: &str) -> Option<String> {
        url::form_urlencoded::parse(self.query.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
    }
}

/// Which call a scripted answer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Soundscape,
    Detection,
    Stats,
}

/// Scripted answers (status, body) of one call, in order.
type Script = VecDeque<(u16, String)>;

#[derive(Default)]
struct Inner {
    scripts: Mutex<Vec<(Call, Script)>>,
    seen: Mutex<Vec<Seen>>,
    next_id: Mutex<i64>,
    arrived: Notify,
}

#[derive(Clone)]
pub struct BirdWeather {
    /// `http://127.0.0.1:PORT/api/v1`, the hub's `birdweather.base_url`.
    pub base: String,
    inner: Arc<Inner>,
}

impl BirdWeather {
    pub async fn start() -> Self {
        Self::start_on("127.0.0.1:0").await
    }

    /// On a fixed address (BirdWeather coming back where the hub looked for it).
    pub async fn start_on(addr: &str) -> Self {
        let inner = Arc::new(Inner { next_id: Mutex::new(40_000), ..Default::default() });
        let app = Router::new().fallback(handle).with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind(addr).await.expect("bind BirdWeather");
        let base = format!("http://{}/api/v1", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { base, inner }
    }

    /// The next answers to `call`, in order; after them, success.
    pub fn script(&self, call: Call, answers: &[(u16, &str)]) {
        let mut scripts = self.inner.scripts.lock().expect("lock");
        let queue = answers.iter().map(|(s, b)| (*s, (*b).to_owned()));
        match scripts.iter_mut().find(|(c, _)| *c == call) {
            Some((_, q)) => q.extend(queue),
            None => scripts.push((call, queue.collect())),
        }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.inner.seen.lock().expect("lock").clone()
    }

    /// Waits until `n` requests have arrived (at most `secs`), then returns them all.
    pub async fn wait_for(&self, n: usize, secs: u64) -> Vec<Seen> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let notified = self.inner.arrived.notified();
            let seen = self.seen();
            if seen.len() >= n || tokio::time::Instant::now() >= deadline {
                return seen;
            }
            let _ = tokio::time::timeout_at(deadline, notified).await;
        }
    }
}

async fn handle(
    State(inner): State<Arc<Inner>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let call = if path.ends_with("/soundscapes") {
        Some(Call::Soundscape)
    } else if path.ends_with("/detections") {
        Some(Call::Detection)
    } else if path.ends_with("/stats") {
        Some(Call::Stats)
    } else {
        None
    };
    let scripted = call.and_then(|c| {
        let mut scripts = inner.scripts.lock().expect("lock");
        scripts.iter_mut().find(|(k, _)| *k == c).and_then(|(_, q)| q.pop_front())
    });
    let (status, answer) = match (call, scripted) {
        (_, Some(s)) => s,
        (Some(Call::Soundscape), None) => {
            let mut next = inner.next_id.lock().expect("lock");
            *next += 1;
            let id = *next;
            // `duration` as a string, as before Feb 2025: the hub must not care.
            (
                201,
                format!(
                    r#"{{"success":true,"soundscape":{{"id":{id},"stationId":678,"timestamp":"x","url":null,"filesize":{},"extension":"flac","duration":"3.0","mode":"birdnetpi"}}}}"#,
                    body.len()
                ),
            )
        }
        (Some(Call::Detection), None) => (201, r#"{"success":true,"detection":{"id":1}}"#.to_owned()),
        (Some(Call::Stats), None) => (200, r#"{"success":true,"detections":12,"species":4}"#.to_owned()),
        (None, None) => (404, r#"{"success":false,"message":"no such route"}"#.to_owned()),
    };
    let query = uri.query().unwrap_or("").to_owned();
    inner.seen.lock().expect("lock").push(Seen { method, path, query, headers, body, status, answer: answer.clone() });
    inner.arrived.notify_waiters();
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    (code, [("content-type", "application/json")], answer).into_response()
}

/// A soundscape answer of the kind BirdWeather gives to WAV since mid 2025: 415, yet
/// `success: true` and no id.
pub const WAV_DISCONTINUED: &str =
    r#"{"success":true,"soundscape":{"id":null},"message":"WAV support has been discontinued, please switch to FLAC"}"#;
/// A detection answer for a species BirdWeather does not know.
pub const UNKNOWN_SPECIES: &str = r#"{"success":false,"errors":{"species":["must exist"]}}"#;
