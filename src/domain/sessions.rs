//! The recording-session rule (SPEC 2.12): two chunks of one satellite belong to the same session
//! when their start times are less than [`GAP_MS`] apart; a gap of exactly 5 minutes or more starts
//! a new session. Chunks may arrive out of order (a satellite emptying its outbox), so a chunk can
//! extend a session at either end, or bridge two sessions, which then merge. The store keeps the
//! sessions; this module decides where a chunk goes and what the session becomes.

use chrono::{DateTime, Duration, Utc};

/// A gap of this many milliseconds or more between chunk starts begins a new session.
pub const GAP_MS: i64 = 5 * 60 * 1000;

/// A session's extent: the first chunk's start, the last chunk's start and the last chunk's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub started_at: DateTime<Utc>,
    pub last_chunk_at: DateTime<Utc>,
    pub ended_at: DateTime<Utc>,
}

impl Span {
    /// The span of a session holding one chunk starting at `at` and lasting `duration_ms`.
    pub fn of_chunk(at: DateTime<Utc>, duration_ms: i64) -> Self {
        Span { started_at: at, last_chunk_at: at, ended_at: at + Duration::milliseconds(duration_ms.max(0)) }
    }

    /// How long the session lasts, first start to last end.
    pub fn duration_ms(&self) -> i64 {
        (self.ended_at - self.started_at).num_milliseconds().max(0)
    }

    /// This span widened to also cover `other`.
    pub fn union(&self, other: &Span) -> Span {
        Span {
            started_at: self.started_at.min(other.started_at),
            last_chunk_at: self.last_chunk_at.max(other.last_chunk_at),
            ended_at: self.ended_at.max(other.ended_at),
        }
    }
}

/// The sessions that can hold a chunk starting at `at` start before the returned time. Sessions of
/// one satellite never overlap and lie 5 minutes apart, so at most the two latest of them are
/// candidates.
pub fn candidates_start_before(at: DateTime<Utc>) -> DateTime<Utc> {
    at + Duration::milliseconds(GAP_MS)
}

/// Whether a session (that starts before [`candidates_start_before`]) is within reach of a chunk
/// starting at `at`: its last chunk starts less than the gap before it.
pub fn within_reach(span: &Span, at: DateTime<Utc>) -> bool {
    span.last_chunk_at > at - Duration::milliseconds(GAP_MS)
}

/// Where a chunk goes, given the candidate sessions within reach, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// No session within reach: the chunk starts one.
    New,
    /// The chunk joins the one session within reach (by its index among the candidates).
    Join(usize),
    /// The chunk bridges two sessions: the second folds into the first, which takes the chunk.
    Merge(usize, usize),
}

/// Decides where a chunk goes among `near` (the candidates within reach, oldest first).
pub fn place(near: &[Span]) -> Placement {
    match near.len() {
        0 => Placement::New,
        1 => Placement::Join(0),
        _ => Placement::Merge(0, 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(min: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + Duration::days(20_000) + Duration::minutes(min)
    }

    #[test]
    fn the_gap_is_exclusive_at_five_minutes() {
        let s = Span::of_chunk(t(0), 3000);
        assert!(within_reach(&s, t(4)));
        assert!(!within_reach(&s, t(5)), "exactly 5 minutes starts a new session");
        assert_eq!(s.duration_ms(), 3000);
    }

    #[test]
    fn a_bridging_chunk_merges_and_spans_union() {
        let (a, b) = (Span::of_chunk(t(0), 3000), Span::of_chunk(t(8), 3000));
        let at = t(4);
        let near: Vec<Span> = [a, b].into_iter().filter(|s| within_reach(s, at)).collect();
        assert_eq!(near.len(), 2, "4 minutes after one session and 4 before the next: it bridges both");
        assert!(!within_reach(&a, t(6)), "6 minutes after the first session is out of its reach");
        assert_eq!(place(&[a, b]), Placement::Merge(0, 1));
        assert_eq!(place(&[]), Placement::New);
        let whole = a.union(&b).union(&Span::of_chunk(at, 3000));
        assert_eq!((whole.started_at, whole.last_chunk_at), (t(0), t(8)));
        assert_eq!(whole.duration_ms(), 8 * 60_000 + 3000);
    }
}
