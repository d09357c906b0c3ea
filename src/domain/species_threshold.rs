//! A species' minimum confidence as its team keeps it today (its own entry in
//! `species_min_confidence`, which "Apply" of a learned threshold writes too; else the team's
//! `min_confidence`; else the hub's `inference.threshold`), and the one raise a detection page may
//! offer: the lowest step of 0.01 that hides that detection, and only when it is above what the
//! species needs already (issue 51). A detection is kept when its confidence is at least the
//! threshold, so hiding a call of 0.85 takes 0.86.

use serde::{Deserialize, Serialize};

use super::settings::TenantSettings;

/// The highest threshold a team may set (`species_min_confidence` is 0.01..=0.99).
pub const MAX: f64 = 0.99;

/// Where a species' threshold comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Its own entry in the team's `species_min_confidence` (set by hand or a learned one applied).
    Species,
    /// The team's `min_confidence`.
    Team,
    /// The hub's `inference.threshold` (the team set none).
    Hub,
}

/// A species' threshold today and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Effective {
    pub value: f64,
    pub source: Source,
}

/// The team's threshold for species without their own: its `min_confidence`, else the hub's
/// (a 32-bit value, shown to 0.001).
pub fn team(s: &TenantSettings, hub: f64) -> f64 {
    s.min_confidence.unwrap_or((hub * 1000.0).round() / 1000.0)
}

/// `code`'s threshold in the team's settings `s`, with the hub's `hub` below them.
pub fn effective(s: &TenantSettings, code: &str, hub: f64) -> Effective {
    match s.species_min_confidence.get(code) {
        Some(v) => Effective { value: *v, source: Source::Species },
        None if s.min_confidence.is_some() => Effective { value: team(s, hub), source: Source::Team },
        None => Effective { value: team(s, hub), source: Source::Hub },
    }
}

/// The lowest threshold, in steps of 0.01, that hides a detection of `confidence` (stored as a
/// 32-bit value: 0.83 reads back as 0.8299999833 and is still 0.83); `None` when no threshold a
/// team may set hides it (0.99 and up).
pub fn hiding(confidence: f64) -> Option<f64> {
    let step = (confidence * 100.0 + 1e-4).floor() + 1.0;
    let t = (step / 100.0).max(0.01);
    (t <= MAX + 1e-9).then_some(t)
}

/// Whether `to` is above `current` (a threshold to two decimals is never "above" by noise).
pub fn raises(to: f64, current: f64) -> bool {
    to > current + 1e-6
}

/// What a detection page offers for a detection of `confidence` of a species needing `current`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Offer {
    /// Raise the species' threshold to this, which hides detections like this one.
    RaiseTo(f64),
    /// The species already needs at least the level that would hide it.
    AlreadyNeeds(Effective),
    /// No threshold a team may set hides a detection this confident.
    CannotHide,
}

pub fn offer(confidence: f64, current: Effective) -> Offer {
    match hiding(confidence) {
        None => Offer::CannotHide,
        Some(t) if raises(t, current.value) => Offer::RaiseTo(t),
        Some(_) => Offer::AlreadyNeeds(current),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_raise_hides_the_call_in_steps_of_a_hundredth() {
        let cases: [(f64, Option<&str>); 9] = [
            (f64::from(0.85_f32), Some("0.86")),
            (f64::from(0.83_f32), Some("0.84")),
            (0.8312, Some("0.84")),
            (f64::from(0.8312_f32), Some("0.84")),
            (0.98, Some("0.99")),
            (0.985, Some("0.99")),
            (0.99, None),
            (0.995, None),
            (1.0, None),
        ];
        for (c, want) in cases {
            assert_eq!(hiding(c).map(|t| format!("{t:.2}")).as_deref(), want, "{c}");
        }
        assert_eq!(hiding(0.0).map(|t| format!("{t:.2}")).as_deref(), Some("0.01"));
    }

    #[test]
    fn a_raise_is_offered_only_above_what_the_species_needs() {
        let own = |v| Effective { value: v, source: Source::Species };
        assert_eq!(offer(f64::from(0.85_f32), own(0.90)), Offer::AlreadyNeeds(own(0.90)), "issue 51: not 0.85");
        assert_eq!(offer(f64::from(0.81_f32), own(0.93)), Offer::AlreadyNeeds(own(0.93)), "a learned 0.93 stays");
        assert_eq!(offer(f64::from(0.89_f32), own(0.90)), Offer::AlreadyNeeds(own(0.90)), "0.90 hides 0.89 already");
        assert_eq!(offer(f64::from(0.9_f32), own(0.90)), Offer::RaiseTo(0.91));
        assert_eq!(offer(1.0, own(0.5)), Offer::CannotHide);
        assert!(!raises(0.85, 0.85) && !raises(0.84, 0.85) && raises(0.86, 0.85));
    }

    #[test]
    fn the_species_own_value_wins_then_the_teams_then_the_hubs() {
        let mut s = TenantSettings { min_confidence: None, ..TenantSettings::default() };
        assert_eq!(effective(&s, "parus_major", f64::from(0.7_f32)), Effective { value: 0.7, source: Source::Hub });
        s.min_confidence = Some(0.8);
        assert_eq!(effective(&s, "parus_major", 0.7), Effective { value: 0.8, source: Source::Team });
        s.species_min_confidence.insert("parus_major".into(), 0.93);
        assert_eq!(effective(&s, "parus_major", 0.7), Effective { value: 0.93, source: Source::Species });
    }
}
