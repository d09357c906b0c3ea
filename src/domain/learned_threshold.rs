//! Thresholds learned from votes: for one species of one team, the lowest minimum confidence
//! that keeps the share of right detections at a target precision (issue 35).
//!
//! The method, for the detections of one species (grouped by confidence, see [`Group`]):
//!
//! 1. **Enough votes.** `votes` is the number of detections people settled (confirmed or
//!    rejected, as the consensus of `domain::consensus` decided). Below the team's
//!    `learned_threshold_min_votes` there is no suggestion.
//! 2. **What a threshold keeps.** A threshold `t` keeps every detection with confidence >= `t`.
//!    Its estimated precision is the expected share of right detections among them:
//!    `(confirmed + Σ p(c) over open ones) / (confirmed + rejected + open)`, where *open* are the
//!    kept detections nobody settled and `p(c)` is the chance that a detection at confidence `c`
//!    is right, read from the isotonic calibration ([`super::calibration::fit`]) fitted on this
//!    species' own votes. With too few votes for a curve, open detections are left out and the
//!    estimate is the votes' own share `confirmed / (confirmed + rejected)`.
//! 3. **Candidates.** Only the confidences of settled detections can move a threshold from one
//!    set of evidence to another, so they are the candidates, tried from the lowest up. The first
//!    whose estimate reaches the target, with at least [`MIN_SUPPORT`] settled detections at or
//!    above it, wins. If none does (a species people mostly reject), there is no suggestion.
//! 4. **Where exactly.** Every threshold in `(previous candidate, winner]` keeps the same settled
//!    detections. If today's threshold already lies there (and reaches the target), it is the
//!    suggestion: nothing to change, and never higher than needed. Otherwise the suggestion is the
//!    middle of that gap, rounded to 0.01 when the rounding stays inside it, so it sits *between*
//!    the last rejected detections and the confirmed ones; below the lowest settled detection
//!    there is no evidence, so the suggestion is never lower than it (rounded down to 0.01).
//!    The result is kept within the settings' range, 0.01 to 0.99.
//! 5. **What it would hide.** The species' kept detections (all but rejected ones) with
//!    confidence from today's threshold up to, not including, the suggestion: what the team would
//!    not have seen had the suggestion been in place.

use super::calibration::{self, Bucket};

/// Fewest settled detections at or above a suggested threshold: a target met by two votes is luck.
pub const MIN_SUPPORT: u64 = 5;

/// The lowest and highest value a species threshold may take (`species_min_confidence`).
pub const RANGE: (f64, f64) = (0.01, 0.99);

/// What people decided about a group of detections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Confirmed,
    Rejected,
    /// Not settled: no votes, or votes without a consensus.
    Open,
}

/// Detections of one species with the same confidence and verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Group {
    pub confidence: f64,
    pub verdict: Verdict,
    pub count: u64,
}

/// The team's learning settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    /// The share of right detections a threshold must keep (0.5 to 0.999).
    pub precision: f64,
    /// Fewest settled detections before anything is suggested.
    pub min_votes: u32,
}

/// One species' review figures and its suggestion.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    /// Settled detections (confirmed + rejected).
    pub votes: u64,
    pub confirmed: u64,
    pub rejected: u64,
    /// The estimated precision at today's threshold; `None` without a settled detection above it.
    pub precision: Option<f64>,
    /// The learned threshold; `None` with too few votes or when no threshold reaches the target.
    pub suggested: Option<f64>,
    /// Kept detections between today's threshold and the suggestion.
    pub would_hide: u64,
}

/// Sums of what a threshold keeps.
struct Kept {
    settled: u64,
    right: f64,
    all: f64,
}

fn kept(groups: &[Group], curve: Option<&[Bucket]>, t: f64) -> Kept {
    let mut k = Kept { settled: 0, right: 0.0, all: 0.0 };
    for g in groups.iter().filter(|g| g.confidence >= t) {
        let n = g.count as f64;
        match (g.verdict, curve) {
            (Verdict::Confirmed, _) => {
                k.settled += g.count;
                k.right += n;
                k.all += n;
            }
            (Verdict::Rejected, _) => {
                k.settled += g.count;
                k.all += n;
            }
            (Verdict::Open, Some(c)) => {
                k.right += n * calibration::calibrate(c, g.confidence).unwrap_or(0.0);
                k.all += n;
            }
            (Verdict::Open, None) => {}
        }
    }
    k
}

/// The estimated precision of threshold `t`, with the settled detections it keeps.
fn estimate(groups: &[Group], curve: Option<&[Bucket]>, t: f64) -> (Option<f64>, u64) {
    let k = kept(groups, curve, t);
    let precision = (k.settled > 0 && k.all > 0.0).then(|| k.right / k.all);
    (precision, k.settled)
}

/// Assesses one species: `groups` are its detections, `current` its effective threshold today.
pub fn assess(groups: &[Group], current: f64, rules: Rules) -> Assessment {
    let count = |v: Verdict| groups.iter().filter(|g| g.verdict == v).map(|g| g.count).sum::<u64>();
    let (confirmed, rejected) = (count(Verdict::Confirmed), count(Verdict::Rejected));
    let votes = confirmed + rejected;
    let samples: Vec<(f64, bool)> = groups
        .iter()
        .filter(|g| g.verdict != Verdict::Open)
        .flat_map(|g| std::iter::repeat_n((g.confidence, g.verdict == Verdict::Confirmed), g.count as usize))
        .collect();
    let curve = calibration::fit(&samples);
    let curve = curve.as_deref();
    let precision = estimate(groups, curve, current).0;
    let suggested = if votes >= u64::from(rules.min_votes) { suggest(groups, curve, current, rules) } else { None };
    let would_hide = suggested.map_or(0, |t| {
        groups
            .iter()
            .filter(|g| g.verdict != Verdict::Rejected && g.confidence >= current && g.confidence < t)
            .map(|g| g.count)
            .sum()
    });
    Assessment { votes, confirmed, rejected, precision, suggested, would_hide }
}

fn reaches(groups: &[Group], curve: Option<&[Bucket]>, t: f64, target: f64) -> bool {
    let (precision, settled) = estimate(groups, curve, t);
    settled >= MIN_SUPPORT && precision.is_some_and(|p| p >= target - 1e-12)
}

fn suggest(groups: &[Group], curve: Option<&[Bucket]>, current: f64, rules: Rules) -> Option<f64> {
    let mut candidates: Vec<f64> = groups.iter().filter(|g| g.verdict != Verdict::Open).map(|g| g.confidence).collect();
    candidates.sort_by(f64::total_cmp);
    candidates.dedup();
    let target = rules.precision;
    let at = candidates.iter().position(|&t| reaches(groups, curve, t, target))?;
    let high = candidates[at];
    let low = at.checked_sub(1).map(|i| candidates[i]);
    // Today's threshold keeps the same settled detections as the winner: leave it.
    let inside = low.is_none_or(|l| current > l) && current <= high;
    if inside && reaches(groups, curve, current, target) {
        return Some(current);
    }
    let pick = match low {
        Some(l) => {
            let middle = (l + high) / 2.0;
            let rounded = (middle * 100.0).round() / 100.0;
            if rounded > l && rounded <= high { rounded } else { (middle * 1000.0 - 1e-9).ceil() / 1000.0 }
        }
        // The nudge keeps 0.72 (stored as 0.71999...) at 0.72.
        None => (high * 100.0 + 1e-9).floor() / 100.0,
    };
    let pick = if pick <= high && reaches(groups, curve, pick, target) { pick } else { high };
    let clamped = pick.clamp(RANGE.0, RANGE.1);
    (clamped == pick || reaches(groups, curve, clamped, target)).then_some(clamped)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: Rules = Rules { precision: 0.95, min_votes: 20 };

    fn g(confidence: f64, verdict: Verdict, count: u64) -> Group {
        Group { confidence, verdict, count }
    }

    /// 10 rejected at 0.71..0.75 and 15 confirmed at 0.81..0.95 (one each).
    fn mostly_rejected_low() -> Vec<Group> {
        let mut groups: Vec<Group> = (0..10).map(|i| g(0.71 + f64::from(i / 2) * 0.01, Verdict::Rejected, 1)).collect();
        groups.extend((0..15).map(|i| g(0.81 + f64::from(i) * 0.01, Verdict::Confirmed, 1)));
        groups
    }

    #[test]
    fn no_suggestion_below_the_vote_count() {
        let mut groups = mostly_rejected_low();
        groups.truncate(19);
        let a = assess(&groups, 0.7, RULES);
        assert_eq!((a.votes, a.suggested, a.would_hide), (19, None, 0));
        assert!(a.precision.is_some(), "the precision today is shown all the same");
        let a = assess(&groups, 0.7, Rules { min_votes: 19, ..RULES });
        assert!(a.suggested.is_some(), "19 votes are enough when the team asks for 19");
    }

    #[test]
    fn mostly_rejected_low_confidences_get_a_threshold_between_them_and_the_confirmed() {
        let mut groups = mostly_rejected_low();
        // Unsettled detections among the rejected ones and among the confirmed ones.
        groups.push(g(0.72, Verdict::Open, 4));
        groups.push(g(0.90, Verdict::Open, 6));
        let a = assess(&groups, 0.7, RULES);
        assert_eq!((a.votes, a.confirmed, a.rejected), (25, 15, 10));
        let t = a.suggested.expect("a suggestion");
        assert!(t > 0.75 && t <= 0.81, "between the rejected (<= 0.75) and the confirmed (>= 0.81): {t}");
        assert_eq!(t, 0.78, "the middle of the gap, rounded to 0.01");
        assert_eq!(a.would_hide, 4, "the open ones at 0.72; rejected ones are not counted");
        // Today: 15 confirmed + 6 open ones the species' curve trusts, of 35 kept.
        let today = a.precision.expect("precision today");
        assert!((today - 21.0 / 35.0).abs() < 1e-9, "{today}");
        let then = assess(&groups, t, RULES);
        assert_eq!((then.precision, then.suggested, then.would_hide), (Some(1.0), Some(t), 0), "applied, it is stable");
    }

    #[test]
    fn open_detections_the_curve_distrusts_push_the_threshold_up() {
        // Open detections at 0.79, where the votes' curve says 0 (the bucket of the 0.75 rejections):
        // 0.78 would keep them, so the suggestion moves up to the first confirmed detection.
        let mut groups = mostly_rejected_low();
        groups.push(g(0.79, Verdict::Open, 3));
        let a = assess(&groups, 0.7, RULES);
        assert_eq!(a.suggested, Some(0.81));
        assert_eq!(a.would_hide, 3);
    }

    #[test]
    fn a_species_already_at_target_is_not_raised() {
        let groups: Vec<Group> = (0..25).map(|i| g(0.72 + f64::from(i) * 0.01, Verdict::Confirmed, 1)).collect();
        let a = assess(&groups, 0.7, RULES);
        assert_eq!(a.suggested, Some(0.7), "today's threshold already keeps only right detections");
        assert_eq!(a.would_hide, 0);
        assert_eq!(a.precision, Some(1.0));
        // One rejection in 25 (96 %) still meets 95 %: still no raise.
        let mut one_wrong = groups.clone();
        one_wrong[3].verdict = Verdict::Rejected;
        assert_eq!(assess(&one_wrong, 0.7, RULES).suggested, Some(0.7));
        // With a stricter team threshold than the evidence needs, the suggestion may go down to
        // the lowest settled detection, never below it.
        let a = assess(&groups, 0.8, RULES);
        assert_eq!(a.suggested, Some(0.72));
        assert_eq!(a.would_hide, 0);
    }

    #[test]
    fn ties_cannot_be_split_and_one_kind_of_vote_behaves() {
        // At 0.8: 5 confirmed and 5 rejected at the same confidence; 15 confirmed above.
        let mut groups = vec![g(0.8, Verdict::Confirmed, 5), g(0.8, Verdict::Rejected, 5)];
        groups.extend((0..15).map(|i| g(0.85 + f64::from(i) * 0.001, Verdict::Confirmed, 1)));
        let t = assess(&groups, 0.7, RULES).suggested.expect("suggestion");
        assert!(t > 0.8 && t <= 0.85, "the tie is left out whole: {t}");
        // Only rejections: no threshold reaches the target.
        let all_wrong = vec![g(0.9, Verdict::Rejected, 30)];
        let a = assess(&all_wrong, 0.7, RULES);
        assert_eq!((a.suggested, a.precision), (None, Some(0.0)));
        // Only confirmations at one confidence: keep today's threshold.
        let all_right = vec![g(0.9, Verdict::Confirmed, 30)];
        assert_eq!(assess(&all_right, 0.7, RULES).suggested, Some(0.7));
        // Nothing settled at all.
        let a = assess(&[g(0.9, Verdict::Open, 40)], 0.7, RULES);
        assert_eq!((a.votes, a.precision, a.suggested), (0, None, None));
    }

    #[test]
    fn a_target_met_only_by_a_handful_is_not_trusted() {
        // 20 rejected below 0.9, then 4 confirmed: fewer than MIN_SUPPORT above any good threshold.
        let mut groups: Vec<Group> = (0..20).map(|i| g(0.7 + f64::from(i) * 0.01, Verdict::Rejected, 1)).collect();
        groups.extend((0..4).map(|i| g(0.95 + f64::from(i) * 0.01, Verdict::Confirmed, 1)));
        assert_eq!(assess(&groups, 0.7, RULES).suggested, None);
    }

    #[test]
    fn suggestions_stay_in_the_settings_range() {
        let mut groups: Vec<Group> = (0..20).map(|_| g(0.985, Verdict::Rejected, 1)).collect();
        groups.extend((0..6).map(|_| g(0.999, Verdict::Confirmed, 1)));
        assert_eq!(assess(&groups, 0.7, RULES).suggested, Some(0.99));
        // Rejections above 0.99 ask for more than the settings can hold: no suggestion.
        let mut groups: Vec<Group> = (0..20).map(|_| g(0.995, Verdict::Rejected, 1)).collect();
        groups.extend((0..6).map(|_| g(0.999, Verdict::Confirmed, 1)));
        assert_eq!(assess(&groups, 0.7, RULES).suggested, None);
    }
}
