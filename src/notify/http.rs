//! One HTTP POST to a webhook or chat service, classified as delivered, worth retrying, or failed
//! for good; plus the retry schedule ([`backoff`], [`GIVE_UP_AFTER`]).
//!
//! A receiver is someone else's server, so nothing it does may hold a delivery worker: the whole
//! exchange has a deadline ([`TIMEOUT`]), at most [`MAX_RESPONSE_BYTES`] of a reply is read, and
//! redirects are not followed (a hook that moved should be edited, and following one would let a
//! receiver point the hub at another address).
//!
//! A channel's URL is typed by a team admin, so the hub connects only where the platform's
//! [`TargetPolicy`] allows, checked on the resolved address ([`super::guard`]). And what the
//! receiver answers never goes back to the team: a [`Failure`] carries a [`Reason`] and a fixed
//! public text (with the status code), while the reply's text, a redirect's target and the
//! operating system's error stay in [`Failure::detail`], which only the hub's log gets.

use std::{error::Error as _, io, time::Duration};

use reqwest::{StatusCode, Url, header};
use serde::Serialize;
use tokio::time::{Instant, timeout_at};

use super::{
    guard::{self, PolicyResolver, Refused},
    text::{fit, one_line},
};
use crate::domain::outbound::TargetPolicy;

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
/// How much of an error reply [`Failure::detail`] keeps for the hub's log.
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

/// The HTTP client of outgoing notifications; cheap to clone (one connection pool per policy).
#[derive(Clone)]
pub struct Sender {
    /// One client per [`TargetPolicy`], in the order of [`TargetPolicy::ALL`]: the resolver that
    /// filters addresses is part of a client, so a request picks the client of its policy.
    clients: [reqwest::Client; 3],
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
    /// Where the hub may connect for this request (the platform setting `channel_targets`).
    pub policy: TargetPolicy,
}

/// What came of one POST.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub verdict: Verdict,
    /// The receiver's status code, when it answered.
    pub http_status: Option<u16>,
    pub duration_ms: u64,
    /// Why it was not delivered.
    pub failure: Option<Failure>,
}

/// How a POST ended, and so what the delivery does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// 2xx.
    Delivered,
    /// 5xx, 429, a timeout or a connection error: try again later, after `after` when the
    /// receiver said so (`Retry-After` in seconds, at most [`MAX_DELAY`]).
    Retry { after: Option<Duration> },
    /// Any other status (4xx, 3xx), an unusable URL or a target the policy refuses: retrying
    /// would not help.
    Failed,
}

/// The classified reason a delivery failed: all a team learns about the far end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The receiver answered a non-2xx status (in `http_status`).
    HttpStatus,
    /// The receiver answered a redirect; redirects are never followed.
    RedirectRefused,
    /// Nothing listens at the address.
    ConnectionRefused,
    /// The connection failed some other way (unreachable network, reset).
    ConnectionFailed,
    /// No complete answer before the deadline.
    Timeout,
    /// The host name does not resolve.
    DnsFailed,
    /// The TLS handshake failed (certificate, protocol).
    TlsFailed,
    /// The platform setting `channel_targets` does not let channels reach this address; no
    /// connection was attempted.
    TargetNotAllowed,
    /// The URL is not an absolute http(s) URL.
    InvalidUrl,
    /// The request failed in another way.
    RequestFailed,
    /// The channel cannot send (deleted, disabled, misconfigured, its template failed).
    Channel,
    /// The mail server did not take the message.
    Mail,
}

/// Why a send was not delivered.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub reason: Reason,
    /// What the team reads (test answer, delivery log, a scheduled export's `lastError`): fixed
    /// text per reason, with the status code or the deadline, never anything the receiver sent.
    pub public: String,
    /// For the hub's log only: the first 200 characters of the reply, a redirect's target, the
    /// operating system's error.
    pub detail: Option<String>,
}

impl Failure {
    pub fn new(reason: Reason, public: impl Into<String>) -> Self {
        Self { reason, public: public.into(), detail: None }
    }

    fn with_detail(mut self, detail: impl Into<String>) -> Self {
        let detail = detail.into();
        self.detail = (!detail.is_empty()).then_some(detail);
        self
    }
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
        let client = |policy: TargetPolicy| {
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                // A proxy would resolve and connect on the hub's behalf, out of the resolver's sight.
                .no_proxy()
                .dns_resolver(PolicyResolver { policy })
                .timeout(timeout)
                .connect_timeout(CONNECT_TIMEOUT.min(timeout))
                .user_agent(concat!("birdhub/", env!("CARGO_PKG_VERSION")))
                .build()
                .expect("the HTTP client builds with the compiled-in TLS backend")
        };
        Self { clients: TargetPolicy::ALL.map(client), timeout }
    }

    fn client(&self, policy: TargetPolicy) -> &reqwest::Client {
        let i = TargetPolicy::ALL.iter().position(|p| *p == policy).unwrap_or(0);
        &self.clients[i]
    }

    /// POSTs `req.body` to `req.url` and classifies the answer. Never takes longer than the
    /// timeout, never reads more than [`MAX_RESPONSE_BYTES`] of the reply, and never connects
    /// to an address `req.policy` refuses.
    pub async fn post(&self, req: Request<'_>) -> Outcome {
        let started = Instant::now();
        let (verdict, http_status, failure) = match self.exchange(req, started + self.timeout).await {
            Ok(code) => (Verdict::Delivered, Some(code), None),
            Err((verdict, code, failure)) => (verdict, code, Some(failure)),
        };
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Outcome { verdict, http_status, duration_ms, failure }
    }

    async fn exchange(&self, req: Request<'_>, deadline: Instant) -> Result<u16, (Verdict, Option<u16>, Failure)> {
        let url =
            web_url(req.url).map_err(|reason| (Verdict::Failed, None, Failure::new(Reason::InvalidUrl, reason)))?;
        // An IP literal is connected to without the resolver: check it here, before any connection.
        guard::check_literal(&url, req.policy).map_err(|_| (Verdict::Failed, None, not_allowed()))?;
        let client = self.client(req.policy);
        let mut builder = client.post(url).header(header::CONTENT_TYPE, req.content_type).body(req.body.to_vec());
        for (name, value) in req.headers {
            builder = builder.header(name, value);
        }
        let response = match timeout_at(deadline, builder.send()).await {
            Err(_) => return Err((Verdict::Retry { after: None }, None, self.timed_out())),
            Ok(Err(e)) => return Err(self.failure(&e)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        let code = status.as_u16();
        if status.is_success() {
            // The receiver took it; its reply is not needed and is not waited for.
            return Ok(code);
        }
        let retry_after = retry_after(response.headers());
        let location = response.headers().get(header::LOCATION).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let reply = read_capped(response, deadline).await;
        let failure = describe_status(status, location.as_deref(), &reply);
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            Err((Verdict::Retry { after: retry_after }, Some(code), failure))
        } else {
            Err((Verdict::Failed, Some(code), failure))
        }
    }

    fn failure(&self, e: &reqwest::Error) -> (Verdict, Option<u16>, Failure) {
        let retry = Verdict::Retry { after: None };
        let detail = root_cause(e);
        if e.is_timeout() {
            return (retry, None, self.timed_out());
        }
        if e.is_builder() {
            return (Verdict::Failed, None, Failure::new(Reason::InvalidUrl, "invalid URL").with_detail(detail));
        }
        match guard::refusal(e) {
            Some(Refused::NotAllowed) => return (Verdict::Failed, None, not_allowed()),
            Some(Refused::Lookup(_)) => {
                let f = Failure::new(Reason::DnsFailed, "the host name could not be resolved");
                return (retry, None, f.with_detail(detail));
            }
            None => {}
        }
        let tls = guard::find(e, &|c| c.downcast_ref::<rustls::Error>().is_some()).is_some();
        let refused = io_kind(e) == Some(io::ErrorKind::ConnectionRefused);
        let failure = match () {
            _ if tls => Failure::new(Reason::TlsFailed, "the TLS handshake failed"),
            _ if refused => Failure::new(Reason::ConnectionRefused, "connection refused"),
            _ if e.is_connect() => Failure::new(Reason::ConnectionFailed, "could not connect"),
            _ => Failure::new(Reason::RequestFailed, "the request failed"),
        };
        (retry, None, failure.with_detail(detail))
    }

    fn timed_out(&self) -> Failure {
        let text = match self.timeout.subsec_millis() {
            0 => format!("timed out after {} s", self.timeout.as_secs()),
            _ => format!("timed out after {} ms", self.timeout.as_millis()),
        };
        Failure::new(Reason::Timeout, text)
    }
}

fn not_allowed() -> Failure {
    Failure::new(
        Reason::TargetNotAllowed,
        "target not allowed: the hub's channel_targets setting does not let channels reach this address",
    )
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

/// The public text of a non-2xx answer ("HTTP 404 Not Found", "HTTP 302 Found: redirects are
/// not followed"); the reply's text and a redirect's target go to the detail only.
fn describe_status(status: StatusCode, location: Option<&str>, reply: &[u8]) -> Failure {
    let head = match status.canonical_reason() {
        Some(reason) => format!("HTTP {} {reason}", status.as_u16()),
        None => format!("HTTP {}", status.as_u16()),
    };
    let text = fit(&one_line(&String::from_utf8_lossy(reply)), ERROR_BODY_CHARS);
    match location {
        Some(to) if status.is_redirection() => {
            Failure::new(Reason::RedirectRefused, format!("{head}: redirects are not followed"))
                .with_detail(format!("redirect to {}", fit(&one_line(to), ERROR_BODY_CHARS)))
        }
        _ if status.is_redirection() => {
            Failure::new(Reason::RedirectRefused, format!("{head}: redirects are not followed")).with_detail(text)
        }
        _ => Failure::new(Reason::HttpStatus, head).with_detail(text),
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
