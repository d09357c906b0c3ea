//! The request log (tower-http's `TraceLayer`), with secrets taken out of the logged URI.
//! Browsers cannot set headers on a WebSocket, so `GET /api/ws/events?token=` carries a session
//! JWT or an API key in the query, and reset and invite links carry their one-time tokens there
//! too; a log line must never be enough to take over a session.

use axum::http::{Request, Uri};
use tower_http::trace::{HttpMakeClassifier, MakeSpan, TraceLayer};
use tracing::Span;

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

/// The request-logging layer every router uses.
pub fn layer() -> TraceLayer<HttpMakeClassifier, RedactedSpan> {
    TraceLayer::new_for_http().make_span_with(RedactedSpan)
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

    #[test]
    fn everything_else_is_logged_as_sent() {
        assert_eq!(redact("/api/detections?limit=5&tokenish=1"), "/api/detections?limit=5&tokenish=1");
        assert_eq!(redact("/api/health"), "/api/health");
        assert_eq!(redact("/api/x?flag&token"), "/api/x?flag&token=[redacted]");
    }
}
