//! Pending log requests (`POST /satellites/{id}/logs/request`, SPEC 2.8): the hub sends
//! `log-request`, the satellite answers on `log-response`, and the answer waits here for the
//! request's caller or a later `GET /satellites/{id}/logs/{requestId}`. Requests live
//! [`REQUEST_TTL`] in memory only (nothing survives a restart, by design).
//!
//! An answer counts only when it comes from the satellite (and team) the request was sent to and
//! is the first for that request; anything else is dropped.

use std::{sync::Arc, time::Duration};

use tokio::sync::watch;

use super::protocol::LogResponse;
use crate::{
    ids::{SatelliteId, TenantId},
    time::Timestamp,
};

/// How long a request and its answer are kept.
pub const REQUEST_TTL: Duration = Duration::from_secs(10 * 60);
/// At most this many lines of one answer are kept (the newest ones).
pub const MAX_LINES: usize = 5000;
/// At most this much text of one answer is kept (the newest part).
pub const MAX_TEXT_BYTES: usize = 1 << 20;
/// At most this many requests are pending at once (the oldest go first).
const MAX_REQUESTS: u64 = 10_000;

/// A satellite's answer as kept: the lines, whether they were cut (by it or by the hub), when.
#[derive(Debug, Clone, PartialEq)]
pub struct LogResult {
    pub lines: Vec<String>,
    pub truncated: bool,
    pub received_at: Timestamp,
}

struct Pending {
    tenant: TenantId,
    satellite: SatelliteId,
    answer: watch::Sender<Option<Arc<LogResult>>>,
}

/// What a lookup finds.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// Unknown, expired or another satellite's request.
    Unknown,
    Pending,
    Complete(Arc<LogResult>),
}

/// Where the answer to one request arrives.
pub type AnswerReceiver = watch::Receiver<Option<Arc<LogResult>>>;

/// The registry of pending log requests; cloneable, shared by the API and the MQTT ingest.
#[derive(Clone)]
pub struct LogRequests {
    inner: moka::sync::Cache<String, Arc<Pending>>,
}

impl Default for LogRequests {
    fn default() -> Self {
        Self::new()
    }
}

impl LogRequests {
    pub fn new() -> Self {
        Self { inner: moka::sync::Cache::builder().max_capacity(MAX_REQUESTS).time_to_live(REQUEST_TTL).build() }
    }

    /// Registers a request sent to `satellite`; the receiver sees the answer when it arrives.
    pub fn register(&self, request_id: &str, tenant: TenantId, satellite: SatelliteId) -> AnswerReceiver {
        let (answer, rx) = watch::channel(None);
        self.inner.insert(request_id.to_owned(), Arc::new(Pending { tenant, satellite, answer }));
        rx
    }

    /// Takes a satellite's answer. `false` (and nothing kept) when no request of that id is
    /// pending for this satellite of this team, or when it was answered already.
    pub fn answer(&self, tenant: TenantId, satellite: SatelliteId, response: LogResponse, now: Timestamp) -> bool {
        let Some(pending) = self.inner.get(&response.request_id) else { return false };
        if pending.tenant != tenant || pending.satellite != satellite || pending.answer.borrow().is_some() {
            return false;
        }
        let (lines, cut) = cap(&response.text);
        let result = LogResult { lines, truncated: response.truncated || cut, received_at: now };
        pending.answer.send_replace(Some(Arc::new(result)));
        true
    }

    /// The state of `request_id` as seen for `satellite` of `tenant`.
    pub fn lookup(&self, tenant: TenantId, satellite: SatelliteId, request_id: &str) -> Lookup {
        match self.inner.get(request_id) {
            Some(p) if p.tenant == tenant && p.satellite == satellite => match p.answer.borrow().clone() {
                Some(result) => Lookup::Complete(result),
                None => Lookup::Pending,
            },
            _ => Lookup::Unknown,
        }
    }
}

/// Waits up to `wait` for the answer.
pub async fn wait(mut rx: AnswerReceiver, wait: Duration) -> Option<Arc<LogResult>> {
    if let Some(done) = rx.borrow().clone() {
        return Some(done);
    }
    let got = tokio::time::timeout(wait, rx.wait_for(Option::is_some)).await.ok()?.ok()?;
    got.clone()
}

/// Splits the journal text into lines, keeping the newest [`MAX_TEXT_BYTES`] and [`MAX_LINES`];
/// `true` when something was cut.
fn cap(text: &str) -> (Vec<String>, bool) {
    let mut cut = false;
    let mut start = text.len().saturating_sub(MAX_TEXT_BYTES);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    if start > 0 {
        cut = true;
        // Drop the partial line the cut landed in.
        start = text[start..].find('\n').map_or(text.len(), |i| start + i + 1);
    }
    let kept = &text[start..];
    let mut lines: Vec<&str> = kept.lines().collect();
    if lines.len() > MAX_LINES {
        lines.drain(..lines.len() - MAX_LINES);
        cut = true;
    }
    (lines.into_iter().map(str::to_owned).collect(), cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_keeps_the_newest_lines_within_both_limits() {
        let (lines, cut) = cap("a\nb\n");
        assert_eq!((lines, cut), (vec!["a".to_owned(), "b".to_owned()], false));
        let many: String = (0..MAX_LINES + 10).map(|i| format!("line {i}\n")).collect();
        let (lines, cut) = cap(&many);
        assert!(cut);
        assert_eq!(lines.len(), MAX_LINES);
        assert_eq!(lines.last().map(String::as_str), Some(format!("line {}", MAX_LINES + 9).as_str()));
        let long = format!("{}\nlast\n", "é".repeat(MAX_TEXT_BYTES));
        let (lines, cut) = cap(&long);
        assert!(cut);
        assert_eq!(lines, vec!["last".to_owned()]);
    }
}
