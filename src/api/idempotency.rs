//! `Idempotency-Key` on every `POST`: a retried or double-clicked request makes one row, not two.
//!
//! A request with the header is remembered per credential (the session cookie or the
//! `Authorization` value, hashed), team, method, path and key, for 24 hours in a bounded cache.
//! The first one runs; its successful answer is kept and every repeat gets that answer back (with
//! `Idempotent-Replayed: true`). A repeat that arrives while the first still runs waits for it
//! (up to [`WAIT`]), else gets 409 `request_in_progress`. A failed first answer (any status
//! outside 2xx, or a body that is not small JSON) is not kept: the next try runs for real. A key
//! is at most 64 visible ASCII characters (else 400 `invalid_idempotency_key`). Requests without
//! a credential are not remembered (nothing ties a repeat to the same caller).

use std::{sync::Arc, time::Duration};

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
};
use moka::future::Cache;
use tokio::sync::watch;

use super::ApiError;
use crate::auth::{context::cookie, tokens};

/// The request header.
pub const HEADER: &str = "idempotency-key";
/// The longest key accepted.
pub const MAX_KEY_LEN: usize = 64;
/// How long a repeat waits for the first request to finish.
const WAIT: Duration = Duration::from_secs(30);
/// How long an answer is kept.
const KEEP: Duration = Duration::from_secs(24 * 3600);
/// How many answers are kept at most.
const CAPACITY: u64 = 10_000;
/// The largest answer body kept (the answers of creating routes are small JSON).
const MAX_BODY: usize = 256 * 1024;

/// A kept answer.
#[derive(Debug)]
struct Stored {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

/// Where the first request with a key is.
#[derive(Debug, Clone)]
enum Phase {
    Running,
    Done(Arc<Stored>),
    Failed,
}

/// The remembered keys, shared by every clone of the API router.
#[derive(Clone)]
pub struct Keys(Cache<String, watch::Receiver<Phase>>);

impl Default for Keys {
    fn default() -> Self {
        Self(Cache::builder().max_capacity(CAPACITY).time_to_live(KEEP).build())
    }
}

/// The middleware (`axum::middleware::from_fn_with_state(Keys::default(), layer)`).
pub async fn layer(State(keys): State<Keys>, req: Request, next: Next) -> Response {
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
    let Some(caller) = caller(req.headers()) else {
        return next.run(req).await;
    };
    let team = req.headers().get("x-tenant-id").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let path = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let id = tokens::sha256_hex(&format!("{caller}\n{team}\nPOST {path}\n{key}"));

    let (tx, rx) = watch::channel(Phase::Running);
    let entry = keys.0.entry(id.clone()).or_insert(rx).await;
    if !entry.is_fresh() {
        drop(tx);
        let mut first = entry.into_value();
        let phase = tokio::time::timeout(WAIT, first.wait_for(|p| !matches!(p, Phase::Running)))
            .await
            .map(|r| r.map(|p| p.clone()).unwrap_or(Phase::Failed));
        return match phase {
            Ok(Phase::Done(stored)) => replay(&stored),
            // The first try failed (and was forgotten), or went away without an answer: this one runs.
            Ok(_) => next.run(req).await,
            Err(_) => ApiError::Conflict(
                "request_in_progress",
                "the same request is still being handled; try again in a moment".into(),
            )
            .into_response(),
        };
    }

    let resp = next.run(req).await;
    let (parts, body) = resp.into_parts();
    let keep = parts.status.is_success() && small_json(&parts.headers);
    if !keep {
        keys.0.invalidate(&id).await;
        tx.send_replace(Phase::Failed);
        return Response::from_parts(parts, body);
    }
    match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) => {
            let stored = Arc::new(Stored { status: parts.status, headers: parts.headers.clone(), body: bytes.clone() });
            tx.send_replace(Phase::Done(stored));
            Response::from_parts(parts, Body::from(bytes))
        }
        Err(e) => {
            keys.0.invalidate(&id).await;
            tx.send_replace(Phase::Failed);
            ApiError::internal(anyhow::anyhow!("reading an answer to keep for its Idempotency-Key: {e}"))
                .into_response()
        }
    }
}

/// Who is asking: the session cookie or the `Authorization` value, hashed with the rest.
fn caller(headers: &HeaderMap) -> Option<String> {
    let session = cookie(headers, tokens::SESSION_COOKIE).unwrap_or_default();
    let bearer = headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or_default();
    (!session.is_empty() || !bearer.is_empty()).then(|| format!("{session}\n{bearer}"))
}

/// An answer small enough to keep: JSON (or no body) with a known, small length.
fn small_json(headers: &HeaderMap) -> bool {
    let json = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|t| t.starts_with("application/json"));
    let small = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .is_none_or(|n| n <= MAX_BODY);
    json && small
}

fn replay(stored: &Stored) -> Response {
    let mut resp = Response::new(Body::from(stored.body.clone()));
    *resp.status_mut() = stored.status;
    *resp.headers_mut() = stored.headers.clone();
    resp.headers_mut().insert("idempotent-replayed", HeaderValue::from_static("true"));
    resp
}
