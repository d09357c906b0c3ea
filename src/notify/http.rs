//! One HTTP POST to a webhook or chat service, classified as delivered, worth retrying, or failed
//! for good; plus the retry schedule ([`backoff`], [`GIVE_UP_AFTER`]).
//!
//! A receiver is someone else's server, so nothing it does may hold a delivery worker: the whole
//! exchange has a deadline ([`TIMEOUT`]), at most [`MAX_RESPONSE_BYTES`] of a reply is read, and
//! redirects are not followed (a hook that moved should be edited, and following one would let a
//! receiver point the hub at another address).

use std::{error::Error as _, io, time::Duration};

use reqwest::{StatusCode, Url, header};
use tokio::time::{Instant, timeout_at};

use super::text::{fit, one_line};

/// The deadline of one POST: connecting, sending and reading the reply together.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// The deadline of the TCP (and TLS) connection within [`TIMEOUT`].
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Read at most this much of a reply, then stop.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;
/// The longest wait honoured from a `Retry-After` header, and the longest backoff.
pub const MAX_DELAY: Duration = Duration::from_secs(60 * 60);
/// Deliveries give up after this long since they were created.
pub const GIVE_UP_AFTER: chrono::Duration = chrono::Duration::hours(24);
/// How much of an error reply is kept in [`Outcome::error`].
const ERROR_BODY_CHARS: usize = 200;

/// Delay before attempt `attempts + 1` after `attempts` failed ones: 2 s, 4 s, 8 s ... capped at
/// 1 h. No failed attempt yet means no delay.
pub fn backoff(attempts: u32) -> Duration {
    if attempts == 0 {
        return Duration::ZERO;
    }
    let seconds = 1u64.checked_shl(attempts).unwrap_or(u64::MAX);
    Duration::from_secs(seconds).min(MAX_DELAY)
}

/// The HTTP client of outgoing notifications; cheap to clone (one connection pool).
#[derive(Clone)]
pub struct Sender {
    client: reqwest::Client,
    /// [`TIMEOUT`], shorter only in tests that must not wait 10 s.
    timeout: Duration,
}

/// One POST.
pub struct Request<'a> {
    pub url: &'a str,
    pub body: &'a [u8],
    pub content_type: &'a str,
    /// Further headers, e.g. `(signature::HEADER, signature::sign(..))`.
    pub headers: Vec<(&'static str, String)>,
}

/// What came of one POST.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub verdict: Verdict,
    /// The receiver's status code, when it answered.
    pub http_status: Option<u16>,
    pub duration_ms: u64,
    /// A short human reason when not delivered: "connection refused", "timed out after 10 s",
    /// "HTTP 404: <first 200 characters of the reply>".
    pub error: Option<String>,
}

/// How a POST ended, and so what the delivery does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// 2xx.
    Delivered,
    /// 5xx, 429, a timeout or a connection error: try again later, after `after` when the
    /// receiver said so (`Retry-After` in seconds, at most [`MAX_DELAY`]).
    Retry { after: Option<Duration> },
    /// Any other status (4xx, 3xx) or an unusable URL: retrying would not help.
    Failed,
}

impl Default for Sender {
    fn default() -> Self {
        Self::new()
    }
}

impl Sender {
    /// # Panics
    /// When the HTTP client cannot be built at all (no TLS backend): a start-up fault of the
    /// binary, not something a channel's settings can cause.
    pub fn new() -> Self {
        Self::build(TIMEOUT)
    }

    /// A sender whose deadline is `timeout` instead of [`TIMEOUT`], for tests of the timeout path.
    #[cfg(test)]
    pub(crate) fn with_timeout(timeout: Duration) -> Self {
        Self::build(timeout)
    }

    fn build(timeout: Duration) -> Self {
        crate::install_tls_provider();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .connect_timeout(CONNECT_TIMEOUT.min(timeout))
            .user_agent(concat!("birdhub/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("the HTTP client builds with the compiled-in TLS backend");
        Self { client, timeout }
    }

    /// POSTs `req.body` to `req.url` and classifies the answer. Never takes longer than the
    /// timeout and never reads more than [`MAX_RESPONSE_BYTES`] of the reply.
    pub async fn post(&self, req: Request<'_>) -> Outcome {
        let started = Instant::now();
        let (verdict, http_status, error) = self.exchange(req, started + self.timeout).await;
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Outcome { verdict, http_status, duration_ms, error }
    }

    async fn exchange(&self, req: Request<'_>, deadline: Instant) -> (Verdict, Option<u16>, Option<String>) {
        let url = match web_url(req.url) {
            Ok(url) => url,
            Err(reason) => return (Verdict::Failed, None, Some(reason)),
        };
        let mut builder = self.client.post(url).header(header::CONTENT_TYPE, req.content_type).body(req.body.to_vec());
        for (name, value) in req.headers {
            builder = builder.header(name, value);
        }
        let response = match timeout_at(deadline, builder.send()).await {
            Err(_) => return (Verdict::Retry { after: None }, None, Some(self.timed_out())),
            Ok(Err(e)) => return self.failure(&e),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        let code = Some(status.as_u16());
        if status.is_success() {
            // The receiver took it; its reply is not needed and is not waited for.
            return (Verdict::Delivered, code, None);
        }
        let retry_after = retry_after(response.headers());
        let location = response.headers().get(header::LOCATION).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let reply = read_capped(response, deadline).await;
        let error = Some(describe_status(status, location.as_deref(), &reply));
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            (Verdict::Retry { after: retry_after }, code, error)
        } else {
            (Verdict::Failed, code, error)
        }
    }

    fn failure(&self, e: &reqwest::Error) -> (Verdict, Option<u16>, Option<String>) {
        let retry = Verdict::Retry { after: None };
        if e.is_timeout() {
            return (retry, None, Some(self.timed_out()));
        }
        if e.is_builder() {
            return (Verdict::Failed, None, Some(format!("invalid request: {}", root_cause(e))));
        }
        let refused = io_kind(e) == Some(io::ErrorKind::ConnectionRefused);
        let reason = match () {
            _ if refused => "connection refused".to_owned(),
            _ if e.is_connect() => format!("could not connect: {}", root_cause(e)),
            _ => format!("request failed: {}", root_cause(e)),
        };
        (retry, None, Some(reason))
    }

    fn timed_out(&self) -> String {
        match self.timeout.subsec_millis() {
            0 => format!("timed out after {} s", self.timeout.as_secs()),
            _ => format!("timed out after {} ms", self.timeout.as_millis()),
        }
    }
}

/// `url` when it is an absolute http(s) URL with a host.
fn web_url(url: &str) -> Result<Url, String> {
    let parsed = Url::parse(url.trim()).map_err(|e| format!("invalid URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("invalid URL: the scheme must be http or https, not {}", parsed.scheme()));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("invalid URL: no host".to_owned());
    }
    Ok(parsed)
}

/// `Retry-After` in seconds (the HTTP-date form is not honoured), at most [`MAX_DELAY`].
fn retry_after(headers: &header::HeaderMap) -> Option<Duration> {
    let seconds: u64 = headers.get(header::RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(seconds).min(MAX_DELAY))
}

/// Up to [`MAX_RESPONSE_BYTES`] of the reply, chunk by chunk; stops at the cap, the deadline or
/// the first error, whichever comes first.
async fn read_capped(mut response: reqwest::Response, deadline: Instant) -> Vec<u8> {
    let mut reply = Vec::new();
    while reply.len() < MAX_RESPONSE_BYTES {
        let Ok(Ok(Some(chunk))) = timeout_at(deadline, response.chunk()).await else {
            break;
        };
        let room = MAX_RESPONSE_BYTES - reply.len();
        reply.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    reply
}

/// "HTTP 404: no such hook", "HTTP 302 Found: redirect to /new not followed", "HTTP 500 Internal Server Error".
fn describe_status(status: StatusCode, location: Option<&str>, reply: &[u8]) -> String {
    let head = match status.canonical_reason() {
        Some(reason) => format!("HTTP {} {reason}", status.as_u16()),
        None => format!("HTTP {}", status.as_u16()),
    };
    let text = fit(&one_line(&String::from_utf8_lossy(reply)), ERROR_BODY_CHARS);
    match location {
        Some(to) if status.is_redirection() => {
            format!("{head}: redirect to {} not followed", fit(to, ERROR_BODY_CHARS))
        }
        _ if text.is_empty() => head,
        _ => format!("HTTP {}: {text}", status.as_u16()),
    }
}

/// The innermost error's text: "Connection refused (os error 111)" rather than "error sending request".
pub(crate) fn root_cause(e: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}

fn io_kind(e: &reqwest::Error) -> Option<io::ErrorKind> {
    let mut cause = e.source();
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<io::Error>() {
            return Some(io.kind());
        }
        cause = c.source();
    }
    None
}

#[cfg(test)]
mod tests;
