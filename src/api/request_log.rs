//! The request log (tower-http's `TraceLayer`), with secrets taken out of the logged URI.
//! Browsers cannot set headers on a WebSocket, so `GET /api/ws/events?token=` carries a session
//! JWT or an API key in the query, and reset and invite links carry their one-time tokens there
//! too; a log line must never be enough to take over a session.
//!
//! A 5xx answer is an ERROR line, except a 503 because a part is not installed (the model,
//! [`super::error::NotInstalled`]): that is the operator's choice or first step, not a fault, and
//! every species route would repeat it. It is logged once per cause at WARN, later ones at DEBUG.

use std::{
    collections::HashSet,
    fmt,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::http::{Request, Response, StatusCode, Uri};
use tower_http::{
    classify::{ClassifiedResponse, ClassifyResponse, NeverClassifyEos, SharedClassifier},
    trace::{DefaultOnBodyChunk, DefaultOnEos, DefaultOnRequest, DefaultOnResponse, MakeSpan, OnFailure, TraceLayer},
};
use tracing::Span;

use super::error::NotInstalled;

/// Query parameters whose values are credentials.
const SECRET_PARAMS: &[&str] = &["token", "access_token", "invite"];

/// The URI as it may be logged: path and query, each secret parameter's value replaced.
pub fn redact_uri(uri: &Uri) -> String {
    let Some(query) = uri.query() else { return uri.path().to_owned() };
    let redacted: Vec<String> = query
        .split('&')
        .map(|pair| {
            let key = pair.split_once('=').map_or(pair, |(k, _)| k);
            if SECRET_PARAMS.iter().any(|s| key.eq_ignore_ascii_case(s)) {
                format!("{key}=[redacted]")
            } else {
                pair.to_owned()
            }
        })
        .collect();
    format!("{}?{}", uri.path(), redacted.join("&"))
}

/// The span of one request, like tower-http's default but with [`redact_uri`].
#[derive(Debug, Clone, Copy, Default)]
pub struct RedactedSpan;

impl<B> MakeSpan<B> for RedactedSpan {
    fn make_span(&mut self, request: &Request<B>) -> Span {
        tracing::debug_span!(
            "request",
            method = %request.method(),
            uri = %redact_uri(request.uri()),
            version = ?request.version(),
        )
    }
}

/// Why a request counts as failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A 5xx answer.
    Status(StatusCode),
    /// A 503 because a part is not installed.
    NotInstalled(NotInstalled),
    /// The service itself failed (axum's never do; kept for the trait).
    Error(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Status(s) => write!(f, "Status code: {s}"),
            Failure::NotInstalled(n) => write!(f, "503 {}: {}", n.code, n.message),
            Failure::Error(e) => write!(f, "Error: {e}"),
        }
    }
}

/// 5xx answers are failures; a [`NotInstalled`] mark says which kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct Classify;

impl ClassifyResponse for Classify {
    type FailureClass = Failure;
    type ClassifyEos = NeverClassifyEos<Failure>;

    fn classify_response<B>(self, res: &Response<B>) -> ClassifiedResponse<Failure, Self::ClassifyEos> {
        ClassifiedResponse::Ready(match res.extensions().get::<NotInstalled>() {
            Some(n) => Err(Failure::NotInstalled(n.clone())),
            None if res.status().is_server_error() => Err(Failure::Status(res.status())),
            None => Ok(()),
        })
    }

    fn classify_error<E: fmt::Display + 'static>(self, error: &E) -> Failure {
        Failure::Error(error.to_string())
    }
}

/// Logs failures: ERROR, but a missing part once per cause at WARN. One per router, so one per
/// hub process (and per test hub).
#[derive(Debug, Clone, Default)]
pub struct LogFailure {
    /// The [`NotInstalled`] codes already reported.
    reported: Arc<Mutex<HashSet<&'static str>>>,
}

impl LogFailure {
    /// True the first time `code` is seen.
    fn first(&self, code: &'static str) -> bool {
        self.reported.lock().unwrap_or_else(|p| p.into_inner()).insert(code)
    }
}

impl OnFailure<Failure> for LogFailure {
    fn on_failure(&mut self, failure: Failure, latency: Duration, _: &Span) {
        let latency = format!("{} ms", latency.as_millis());
        match failure {
            Failure::NotInstalled(n) if self.first(n.code) => tracing::warn!(
                code = n.code,
                "requests answer 503 {}: {} (logged once; later ones at DEBUG)",
                n.code,
                n.message
            ),
            Failure::NotInstalled(n) => tracing::debug!(code = n.code, %latency, "response failed: 503 {}", n.code),
            other => tracing::error!(classification = %other, %latency, "response failed"),
        }
    }
}

/// The request-logging layer every router uses.
pub fn layer() -> TraceLayer<
    SharedClassifier<Classify>,
    RedactedSpan,
    DefaultOnRequest,
    DefaultOnResponse,
    DefaultOnBodyChunk,
    DefaultOnEos,
    LogFailure,
> {
    TraceLayer::new(SharedClassifier::new(Classify)).make_span_with(RedactedSpan).on_failure(LogFailure::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(uri: &str) -> String {
        redact_uri(&uri.parse().expect("uri"))
    }

    #[test]
    fn credentials_in_the_query_are_not_logged() {
        assert_eq!(
            redact("/api/ws/events?tenantId=abc&token=eyJhbGciOi.secret.sig"),
            "/api/ws/events?tenantId=abc&token=[redacted]"
        );
        assert_eq!(redact("/api/ws/events?TOKEN=deadbeef"), "/api/ws/events?TOKEN=[redacted]");
        assert_eq!(redact("/reset-password?token=abc"), "/reset-password?token=[redacted]");
        assert_eq!(redact("/register?invite=abc&x=1"), "/register?invite=[redacted]&x=1");
        assert_eq!(redact("http://hub.local:8080/api/ws/events?token=k"), "/api/ws/events?token=[redacted]");
        assert!(!redact("/a?token=s3cret&token=other").contains("s3cret"));
    }

    fn answer(status: StatusCode, mark: Option<&'static str>) -> Response<()> {
        let mut r = Response::builder().status(status).body(()).expect("response");
        if let Some(code) = mark {
            r.extensions_mut().insert(NotInstalled { code, message: "run birdhub model fetch".into() });
        }
        r
    }

    fn class(r: &Response<()>) -> Result<(), Failure> {
        match Classify.classify_response(r) {
            ClassifiedResponse::Ready(c) => c,
            ClassifiedResponse::RequiresEos(_) => unreachable!("never waits for the end"),
        }
    }

    #[test]
    fn a_missing_model_is_reported_once_and_other_server_errors_every_time() {
        assert_eq!(class(&answer(StatusCode::OK, None)), Ok(()));
        assert_eq!(class(&answer(StatusCode::NOT_FOUND, None)), Ok(()));
        assert_eq!(
            class(&answer(StatusCode::SERVICE_UNAVAILABLE, None)),
            Err(Failure::Status(StatusCode::SERVICE_UNAVAILABLE)),
            "a 503 of another cause (the database) stays an error"
        );
        assert!(matches!(
            class(&answer(StatusCode::SERVICE_UNAVAILABLE, Some("model_unavailable"))),
            Err(Failure::NotInstalled(NotInstalled { code: "model_unavailable", .. }))
        ));
        let log = LogFailure::default();
        let other = log.clone();
        assert!(log.first("model_unavailable"), "the first one is reported");
        assert!(!other.first("model_unavailable"), "every clone of the layer shares what was reported");
        assert!(log.first("model_missing"), "each cause once");
        assert!(LogFailure::default().first("model_unavailable"), "another hub reports its own");
    }

    #[test]
    fn everything_else_is_logged_as_sent() {
        assert_eq!(redact("/api/detections?limit=5&tokenish=1"), "/api/detections?limit=5&tokenish=1");
        assert_eq!(redact("/api/health"), "/api/health");
        assert_eq!(redact("/api/x?flag&token"), "/api/x?flag&token=[redacted]");
    }
}
