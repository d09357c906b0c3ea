//! The verification consensus: how a detection's votes decide its `verification_status`
//! (SPEC 2.9, 3). The SPEC leaves the rule open; this is ours:
//!
//! 1. No votes: `unverified`.
//! 2. A team admin's (or platform admin's) `confirm` or `reject` is decisive; if several admins
//!    disagree, the most recent admin vote wins.
//! 3. Otherwise members' votes count equally: [`QUORUM`] or more `confirm` votes, outnumbering the
//!    `reject` votes, make it `confirmed`; the same for `reject` makes it `rejected`.
//! 4. Anything else (one vote, a tie, only `unsure` votes): `pending_review`.
//!
//! A person has one vote per detection; voting again replaces it (and may move the status back).

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

/// Agreeing member votes that settle a detection without an admin.
pub const QUORUM: usize = 2;

/// A vote value: `confirm`, `reject` or `unsure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Vote {
    Confirm,
    Reject,
    Unsure,
}

pub const VOTES: &[&str] = &["confirm", "reject", "unsure"];

impl Vote {
    pub fn as_str(self) -> &'static str {
        match self {
            Vote::Confirm => "confirm",
            Vote::Reject => "reject",
            Vote::Unsure => "unsure",
        }
    }
}

impl fmt::Display for Vote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Vote {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "confirm" => Ok(Vote::Confirm),
            "reject" => Ok(Vote::Reject),
            "unsure" => Ok(Vote::Unsure),
            other => Err(format!("vote must be one of {}, not {other:?}", VOTES.join(", "))),
        }
    }
}

/// `verification_status` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    PendingReview,
    Confirmed,
    Rejected,
    Unverified,
}

pub const STATUSES: &[&str] = &["pending_review", "confirmed", "rejected", "unverified"];

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::PendingReview => "pending_review",
            Status::Confirmed => "confirmed",
            Status::Rejected => "rejected",
            Status::Unverified => "unverified",
        }
    }
}

/// One person's vote as the rule sees it, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ballot {
    pub vote: Vote,
    /// Cast by an admin of the detection's team or a platform admin.
    pub decisive: bool,
}

/// The status `ballots` (oldest first) decide.
pub fn decide(ballots: &[Ballot]) -> Status {
    if ballots.is_empty() {
        return Status::Unverified;
    }
    let last_admin = ballots.iter().rev().find(|b| b.decisive && b.vote != Vote::Unsure);
    match last_admin.map(|b| b.vote) {
        Some(Vote::Confirm) => return Status::Confirmed,
        Some(Vote::Reject) => return Status::Rejected,
        _ => {}
    }
    let count = |v: Vote| ballots.iter().filter(|b| b.vote == v).count();
    let (yes, no) = (count(Vote::Confirm), count(Vote::Reject));
    if yes >= QUORUM && yes > no {
        Status::Confirmed
    } else if no >= QUORUM && no > yes {
        Status::Rejected
    } else {
        Status::PendingReview
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(vote: Vote) -> Ballot {
        Ballot { vote, decisive: false }
    }
    fn admin(vote: Vote) -> Ballot {
        Ballot { vote, decisive: true }
    }

    #[test]
    fn the_rule_table() {
        use Vote::*;
        let cases: &[(&[Ballot], Status)] = &[
            (&[], Status::Unverified),
            (&[member(Confirm)], Status::PendingReview),
            (&[member(Confirm), member(Confirm)], Status::Confirmed),
            (&[member(Reject), member(Reject)], Status::Rejected),
            (&[member(Confirm), member(Reject)], Status::PendingReview),
            (&[member(Confirm), member(Confirm), member(Reject), member(Reject)], Status::PendingReview),
            (&[member(Confirm), member(Confirm), member(Reject)], Status::Confirmed),
            (&[member(Unsure), member(Unsure)], Status::PendingReview),
            (&[admin(Confirm)], Status::Confirmed),
            (&[member(Reject), member(Reject), admin(Confirm)], Status::Confirmed),
            (&[admin(Confirm), admin(Reject)], Status::Rejected),
            (&[admin(Reject), admin(Unsure)], Status::Rejected),
            (&[admin(Unsure)], Status::PendingReview),
        ];
        for (ballots, want) in cases {
            assert_eq!(decide(ballots), *want, "{ballots:?}");
        }
    }

    #[test]
    fn votes_parse_and_unknown_values_are_named() {
        assert_eq!("confirm".parse::<Vote>(), Ok(Vote::Confirm));
        let err = "yes".parse::<Vote>().expect_err("not a vote");
        assert!(err.contains("confirm, reject, unsure"), "{err}");
    }
}
