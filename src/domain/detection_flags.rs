//! The flags a new detection carries (SPEC 2.9), judged against what the team already has when it
//! arrives: first of the species that UTC day, first that meteorological season, and rarity: a
//! species the team has never recorded, or one the range model does not expect at that place and
//! week. The store gathers the facts ([`SpeciesHistory`]); this rule decides.

use serde::{Deserialize, Serialize};

/// What the team's records say about one species before this detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SpeciesHistory {
    /// Any detection of the species by the team, ever.
    pub seen_before: bool,
    /// Any that UTC day.
    pub seen_today: bool,
    /// Any that meteorological season.
    pub seen_this_season: bool,
}

/// Why a detection is rare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RareReason {
    /// The team has never detected this species before.
    FirstRecordForTeam,
    /// The range model scores it below the threshold at the chunk's place and week.
    NotExpectedHere,
}

impl RareReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RareReason::FirstRecordForTeam => "first_record_for_team",
            RareReason::NotExpectedHere => "not_expected_here",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flags {
    pub is_first_of_day: bool,
    pub is_first_of_season: bool,
    pub rare: Option<RareReason>,
}

/// The flags of a detection, given the species' history and the range model's verdict (`None`
/// when the chunk had no location). A first record outranks "not expected here".
pub fn judge(history: SpeciesHistory, expected_here: Option<bool>) -> Flags {
    let rare = if !history.seen_before {
        Some(RareReason::FirstRecordForTeam)
    } else if expected_here == Some(false) {
        Some(RareReason::NotExpectedHere)
    } else {
        None
    };
    Flags { is_first_of_day: !history.seen_today, is_first_of_season: !history.seen_this_season, rare }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(seen_before: bool, seen_today: bool, seen_this_season: bool) -> SpeciesHistory {
        SpeciesHistory { seen_before, seen_today, seen_this_season }
    }

    #[test]
    fn the_rule_for_each_history() {
        use RareReason::*;
        let cases = [
            (h(false, false, false), Some(false), (true, true, Some(FirstRecordForTeam))),
            (h(false, false, false), None, (true, true, Some(FirstRecordForTeam))),
            (h(true, true, true), Some(true), (false, false, None)),
            (h(true, false, true), Some(false), (true, false, Some(NotExpectedHere))),
            (h(true, false, false), None, (true, true, None)),
        ];
        for (history, expected, (day, season, rare)) in cases {
            let f = judge(history, expected);
            assert_eq!((f.is_first_of_day, f.is_first_of_season, f.rare), (day, season, rare), "{history:?}");
        }
        assert_eq!(serde_json::to_string(&FirstRecordForTeam).expect("json"), "\"first_record_for_team\"");
    }
}
