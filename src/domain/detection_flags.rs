//! The flags a new detection carries (SPEC 2.9), judged against what the team already has when it
//! arrives: first of the species that UTC day, first that meteorological season, first ever for
//! the team ("New for the team"), and rarity. Rare means only "not expected here": the range model
//! scores the species below its threshold at that place and week. A team's first record of a
//! garden bird is new, not rare (issue 36). The store gathers the facts ([`SpeciesHistory`]); this
//! rule decides.

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

/// Why a detection is rare. Only one reason is left; the field stays a string (`rareReason`) so a
/// later reason can join without changing the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RareReason {
    /// The range model scores it below the threshold at the chunk's place and week.
    NotExpectedHere,
}

impl RareReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RareReason::NotExpectedHere => "not_expected_here",
        }
    }

    /// The reason in words, for a tooltip or an alert text; `None` for a code this hub does not
    /// know (an old row's free text, say).
    pub fn words(code: &str) -> Option<&'static str> {
        match code {
            "not_expected_here" => Some("not expected at this place and time of year (range model)"),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flags {
    pub is_first_of_day: bool,
    pub is_first_of_season: bool,
    /// The team has never detected this species before.
    pub is_first_for_team: bool,
    pub rare: Option<RareReason>,
}

/// The flags of a detection, given the species' history and the range model's verdict (`None`
/// when the chunk had no location, which never makes a detection rare).
pub fn judge(history: SpeciesHistory, expected_here: Option<bool>) -> Flags {
    Flags {
        is_first_of_day: !history.seen_today,
        is_first_of_season: !history.seen_this_season,
        is_first_for_team: !history.seen_before,
        rare: (expected_here == Some(false)).then_some(RareReason::NotExpectedHere),
    }
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
            (h(false, false, false), Some(false), (true, true, true, Some(NotExpectedHere))),
            (h(false, false, false), Some(true), (true, true, true, None)),
            (h(false, false, false), None, (true, true, true, None)),
            (h(true, true, true), Some(true), (false, false, false, None)),
            (h(true, false, true), Some(false), (true, false, false, Some(NotExpectedHere))),
            (h(true, false, false), None, (true, true, false, None)),
        ];
        for (history, expected, (day, season, first, rare)) in cases {
            let f = judge(history, expected);
            assert_eq!(
                (f.is_first_of_day, f.is_first_of_season, f.is_first_for_team, f.rare),
                (day, season, first, rare),
                "{history:?}"
            );
        }
        assert_eq!(serde_json::to_string(&NotExpectedHere).expect("json"), "\"not_expected_here\"");
        assert!(RareReason::words("not_expected_here").is_some_and(|w| !w.contains('_')));
        assert_eq!(RareReason::words("first_record_for_team"), None);
    }
}
