//! Alert rules (SPEC 2.15; the body is ours, documented in docs/alerts.md): what each trigger type's
//! conditions say, how they are checked on input, and the pure decisions the engine makes with
//! them: does a detection match, is a silence long enough, is a day's count a trend.
//!
//! - `detection`: species (codes or scientific names), special kinds (`rare`, `first_for_team`, `first_of_day`,
//!   `first_of_season`, `not_expected_here`), a minimum confidence, satellites and hours of the day.
//!   Every condition given must hold; a list matches when any of its entries does.
//! - `absence`: no detection (or no chunk) from the listed satellites, or the whole team, for
//!   `minutes`. It fires once per silence.
//! - `trend`: yesterday's detection count or species count (days of the team's zone) against the
//!   mean of the `baselineDays` before it, rising or falling by at least `percent`. It fires at
//!   most once per day.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The key of the system rule every team has: satellite outages are raised under it.
pub const OFFLINE_RULE_KEY: &str = "satellite_offline";
/// The system rule's name.
pub const OFFLINE_RULE_NAME: &str = "Satellite offline";
/// The key of the second system rule: a satellite's clock found wrong (`domain::clock_sanity`).
pub const CLOCK_RULE_KEY: &str = "satellite_clock";
/// Its name (listed after "Satellite offline").
pub const CLOCK_RULE_NAME: &str = "Wrong satellite clock";

/// The longest silence an absence rule may wait for, and the longest cooldown: 30 days.
pub const MAX_MINUTES: u32 = 30 * 24 * 60;
/// The cooldown a rule gets when its body names none.
pub const DEFAULT_COOLDOWN_MINUTES: u32 = 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    Detection,
    Absence,
    Trend,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Detection => "detection",
            Trigger::Absence => "absence",
            Trigger::Trend => "trend",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Trigger::Detection, Trigger::Absence, Trigger::Trend].into_iter().find(|t| t.as_str() == s)
    }
}

/// The notable kinds of detection a rule can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Special {
    /// Rare: the range model does not expect it here (`isRare`). A team's first record of a
    /// species is not rare on its own (issue 36).
    Rare,
    /// The team's first detection of the species ever ("New for the team").
    FirstForTeam,
    FirstOfDay,
    FirstOfSeason,
    /// Rare because the range model does not expect it at that place and week.
    NotExpectedHere,
}

/// Hours of the day, in the local time of the detecting station (its effective zone): `from`
/// inclusive to `to` exclusive, wrapping past midnight when `from > to` (22 to 5 is the night).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hours {
    pub from: u32,
    pub to: u32,
}

impl Hours {
    pub fn contains(self, hour: u32) -> bool {
        if self.from < self.to { (self.from..self.to).contains(&hour) } else { hour >= self.from || hour < self.to }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DetectionConditions {
    /// Species codes (`cardinalis_cardinalis`) or scientific names; empty: any species.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub species: Vec<String>,
    /// Any of these kinds; empty: any detection.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub special: Vec<Special>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_confidence: Option<f64>,
    /// Empty: every satellite of the team.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub satellite_ids: Vec<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hours: Option<Hours>,
}

/// What an absence rule listens for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Activity {
    /// No bird identified.
    #[default]
    Detection,
    /// No audio arrived at all.
    Chunk,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AbsenceConditions {
    pub minutes: u32,
    #[serde(default)]
    pub of: Activity,
    /// Each listed satellite is watched on its own; empty: the team as a whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub satellite_ids: Vec<Uuid>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Detections per day.
    Detections,
    /// Distinct species per day.
    Species,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Rise,
    Fall,
    Either,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrendConditions {
    pub metric: Metric,
    pub direction: Direction,
    /// The change, in percent of the baseline, that fires the rule.
    pub percent: f64,
    #[serde(default = "default_baseline_days")]
    pub baseline_days: u32,
    /// One satellite; none: the whole team.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub satellite_id: Option<Uuid>,
}

fn default_baseline_days() -> u32 {
    7
}

/// A rule's conditions, by trigger type. System rules (`satellite_offline`) have none.
#[derive(Debug, Clone, PartialEq)]
pub enum Conditions {
    Detection(DetectionConditions),
    Absence(AbsenceConditions),
    Trend(TrendConditions),
}

impl Conditions {
    /// Reads and checks `value` as the conditions of `trigger`. The message names the field.
    pub fn parse(trigger: Trigger, value: serde_json::Value) -> Result<Self, String> {
        fn read<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> Result<T, String> {
            super::serde_words::from_value(v, "conditions")
        }
        let value = if value.is_null() { serde_json::json!({}) } else { value };
        let c = match trigger {
            Trigger::Detection => Conditions::Detection(read(value)?),
            Trigger::Absence => Conditions::Absence(read(value)?),
            Trigger::Trend => Conditions::Trend(read(value)?),
        };
        c.check()?;
        Ok(c)
    }

    pub fn to_json(&self) -> serde_json::Value {
        let v = match self {
            Conditions::Detection(c) => serde_json::to_value(c),
            Conditions::Absence(c) => serde_json::to_value(c),
            Conditions::Trend(c) => serde_json::to_value(c),
        };
        v.unwrap_or_default()
    }

    /// The satellites the conditions name (each must belong to the rule's team).
    pub fn satellite_ids(&self) -> Vec<Uuid> {
        match self {
            Conditions::Detection(c) => c.satellite_ids.clone(),
            Conditions::Absence(c) => c.satellite_ids.clone(),
            Conditions::Trend(c) => c.satellite_id.into_iter().collect(),
        }
    }

    fn check(&self) -> Result<(), String> {
        match self {
            Conditions::Detection(c) => {
                if let Some(m) = c.min_confidence
                    && !(0.0..=1.0).contains(&m)
                {
                    return Err("conditions.minConfidence must be between 0 and 1".into());
                }
                if let Some(h) = c.hours {
                    if h.from > 23 || h.to > 23 {
                        return Err("conditions.hours.from and .to must be hours 0 to 23".into());
                    }
                    if h.from == h.to {
                        return Err("conditions.hours.from and .to must differ (leave hours out for all day)".into());
                    }
                }
                if c.species.len() > 500 || c.species.iter().any(|s| s.trim().is_empty() || s.len() > 200) {
                    return Err("conditions.species must be up to 500 species codes or scientific names".into());
                }
                Ok(())
            }
            Conditions::Absence(c) => {
                if c.minutes == 0 || c.minutes > MAX_MINUTES {
                    return Err(format!("conditions.minutes must be 1 to {MAX_MINUTES}"));
                }
                Ok(())
            }
            Conditions::Trend(c) => {
                if !(c.percent.is_finite() && c.percent > 0.0 && c.percent <= 10_000.0) {
                    return Err("conditions.percent must be above 0 and at most 10000".into());
                }
                if c.direction == Direction::Fall && c.percent > 100.0 {
                    return Err("conditions.percent of a fall can be at most 100".into());
                }
                if !(1..=90).contains(&c.baseline_days) {
                    return Err("conditions.baselineDays must be 1 to 90".into());
                }
                Ok(())
            }
        }
    }
}

/// Checks a cooldown (minutes) given in a rule body.
pub fn check_cooldown(minutes: i64) -> Result<u32, String> {
    if minutes < 1 || minutes > i64::from(MAX_MINUTES) {
        return Err(format!("cooldownMinutes must be 1 to {MAX_MINUTES}"));
    }
    Ok(minutes as u32)
}

/// The facts of one new detection that rules look at.
#[derive(Debug, Clone, Copy)]
pub struct DetectionFacts<'a> {
    pub species_code: &'a str,
    pub scientific_name: &'a str,
    pub confidence: f64,
    pub satellite_id: Uuid,
    pub is_rare: bool,
    pub not_expected_here: bool,
    pub is_first_of_day: bool,
    pub is_first_of_season: bool,
    pub is_first_for_team: bool,
    /// In the detecting station's zone.
    pub local_hour: u32,
}

impl DetectionConditions {
    /// The webhook `event` when `d` matches (SPEC 6.3), or `None`. With special kinds asked for,
    /// the event names the most notable one that holds (`rare_species`, then `first_for_team`,
    /// then `first_of_season`, then `first_of_day`); without, it is `detection`.
    pub fn matches(&self, d: &DetectionFacts<'_>) -> Option<&'static str> {
        if !self.species.is_empty()
            && !self
                .species
                .iter()
                .any(|s| s.eq_ignore_ascii_case(d.species_code) || s.trim().eq_ignore_ascii_case(d.scientific_name))
        {
            return None;
        }
        if self.min_confidence.is_some_and(|m| d.confidence < m) {
            return None;
        }
        if !self.satellite_ids.is_empty() && !self.satellite_ids.contains(&d.satellite_id) {
            return None;
        }
        if self.hours.is_some_and(|h| !h.contains(d.local_hour)) {
            return None;
        }
        if self.special.is_empty() {
            return Some("detection");
        }
        let holds = |s: Special| match s {
            Special::Rare => d.is_rare,
            Special::NotExpectedHere => d.not_expected_here,
            Special::FirstForTeam => d.is_first_for_team,
            Special::FirstOfDay => d.is_first_of_day,
            Special::FirstOfSeason => d.is_first_of_season,
        };
        let asked = |s: Special| self.special.contains(&s) && holds(s);
        if asked(Special::Rare) || asked(Special::NotExpectedHere) {
            Some("rare_species")
        } else if asked(Special::FirstForTeam) {
            Some("first_for_team")
        } else if asked(Special::FirstOfSeason) {
            Some("first_of_season")
        } else if asked(Special::FirstOfDay) {
            Some("first_of_day")
        } else {
            None
        }
    }
}

/// Whether a detection rule may fire again for a key it last fired for at `last`.
pub fn cooled_down(last: Option<DateTime<Utc>>, cooldown_minutes: u32, now: DateTime<Utc>) -> bool {
    last.is_none_or(|t| now - t >= chrono::Duration::minutes(i64::from(cooldown_minutes)))
}

/// Whether an absence rule fires now: the silence (since the last activity, or since the rule
/// started watching when that is later) has lasted `minutes`, and the rule has not yet fired for
/// this silence.
pub fn absence_due(
    minutes: u32,
    last_activity: Option<DateTime<Utc>>,
    watching_since: DateTime<Utc>,
    last_fired: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> bool {
    let quiet_since = last_activity.map_or(watching_since, |a| a.max(watching_since));
    now - quiet_since >= chrono::Duration::minutes(i64::from(minutes)) && last_fired.is_none_or(|f| f < quiet_since)
}

/// The change of `value` against the mean of `baseline`, in percent, when it fires the rule.
/// A zero baseline has no percentage, so it never fires.
pub fn trend_change(c: &TrendConditions, value: f64, baseline: &[f64]) -> Option<f64> {
    if baseline.is_empty() {
        return None;
    }
    let mean = baseline.iter().sum::<f64>() / baseline.len() as f64;
    if mean <= 0.0 {
        return None;
    }
    let change = (value - mean) / mean * 100.0;
    let fires = match c.direction {
        Direction::Rise => change >= c.percent,
        Direction::Fall => -change >= c.percent,
        Direction::Either => change.abs() >= c.percent,
    };
    fires.then_some(change)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn facts() -> DetectionFacts<'static> {
        DetectionFacts {
            species_code: "cardinalis_cardinalis",
            scientific_name: "Cardinalis cardinalis",
            confidence: 0.9,
            satellite_id: Uuid::from_u128(1),
            is_rare: false,
            not_expected_here: false,
            is_first_of_day: false,
            is_first_for_team: false,
            is_first_of_season: false,
            local_hour: 6,
        }
    }

    fn detection(v: serde_json::Value) -> DetectionConditions {
        match Conditions::parse(Trigger::Detection, v) {
            Ok(Conditions::Detection(c)) => c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_condition_given_must_hold() {
        let any = detection(json!({}));
        assert_eq!(any.matches(&facts()), Some("detection"));
        let c = detection(json!({"species": ["Cardinalis cardinalis", "turdus_migratorius"], "minConfidence": 0.8,
            "satelliteIds": [Uuid::from_u128(1)], "hours": {"from": 5, "to": 9}}));
        assert_eq!(c.matches(&facts()), Some("detection"));
        assert_eq!(c.matches(&DetectionFacts { species_code: "x", scientific_name: "X y", ..facts() }), None);
        assert_eq!(c.matches(&DetectionFacts { confidence: 0.79, ..facts() }), None);
        assert_eq!(c.matches(&DetectionFacts { satellite_id: Uuid::from_u128(2), ..facts() }), None);
        assert_eq!(c.matches(&DetectionFacts { local_hour: 9, ..facts() }), None);
    }

    #[test]
    fn special_kinds_pick_the_most_notable_event() {
        let c = detection(json!({"special": ["first_of_day", "rare", "first_of_season"]}));
        assert_eq!(c.matches(&facts()), None);
        assert_eq!(c.matches(&DetectionFacts { is_first_of_day: true, ..facts() }), Some("first_of_day"));
        let all = DetectionFacts { is_first_of_day: true, is_first_of_season: true, is_rare: true, ..facts() };
        assert_eq!(c.matches(&all), Some("rare_species"));
        let first = detection(json!({"special": ["first_for_team", "first_of_season"]}));
        let new_here = DetectionFacts { is_first_for_team: true, is_first_of_season: true, ..facts() };
        assert_eq!(first.matches(&new_here), Some("first_for_team"), "a first record names itself");
        assert_eq!(first.matches(&DetectionFacts { is_rare: true, ..facts() }), None, "rare is not new");
        let only_expected = detection(json!({"special": ["not_expected_here"]}));
        assert_eq!(only_expected.matches(&DetectionFacts { is_rare: true, ..facts() }), None);
        let nowhere = DetectionFacts { is_rare: true, not_expected_here: true, ..facts() };
        assert_eq!(only_expected.matches(&nowhere), Some("rare_species"));
    }

    #[test]
    fn hours_wrap_past_midnight() {
        let night = Hours { from: 22, to: 5 };
        assert!(night.contains(23) && night.contains(0) && night.contains(4));
        assert!(!night.contains(5) && !night.contains(12) && !night.contains(21));
    }

    #[test]
    fn bad_conditions_are_named() {
        let bad = [
            (Trigger::Detection, json!({"minConfidence": 1.5}), "minConfidence"),
            (Trigger::Detection, json!({"hours": {"from": 3, "to": 3}}), "hours"),
            (Trigger::Detection, json!({"special": ["sometimes"]}), "special"),
            (Trigger::Detection, json!({"specis": []}), "specis"),
            (Trigger::Absence, json!({"minutes": 0}), "minutes"),
            (Trigger::Absence, json!({"minutes": -5}), "minutes"),
            (Trigger::Absence, json!({}), "minutes"),
            (Trigger::Trend, json!({"metric": "species", "direction": "fall", "percent": 0}), "percent"),
            (Trigger::Trend, json!({"metric": "species", "direction": "up", "percent": 10}), "direction"),
            (
                Trigger::Trend,
                json!({"metric": "species", "direction": "rise", "percent": 10, "baselineDays": 0}),
                "baselineDays",
            ),
        ];
        for (trigger, body, field) in bad {
            let e = Conditions::parse(trigger, body.clone()).expect_err(&body.to_string());
            assert!(e.contains(field), "{body}: {e}");
        }
        assert!(check_cooldown(0).is_err() && check_cooldown(-1).is_err() && check_cooldown(30).is_ok());
    }

    #[test]
    fn cooldown_and_absence_fire_once() {
        let t0 = DateTime::parse_from_rfc3339("2026-05-01T06:00:00Z").map(|t| t.with_timezone(&Utc)).expect("time");
        let min = |m: i64| t0 + chrono::Duration::minutes(m);
        assert!(cooled_down(None, 30, t0));
        assert!(!cooled_down(Some(t0), 30, min(29)));
        assert!(cooled_down(Some(t0), 30, min(30)));
        // Last heard at t0; a 60-minute rule fires at +60, not again at +61, and again only after
        // new activity and a new silence.
        assert!(!absence_due(60, Some(t0), t0, None, min(59)));
        assert!(absence_due(60, Some(t0), t0, None, min(60)));
        assert!(!absence_due(60, Some(t0), t0, Some(min(60)), min(61)));
        assert!(!absence_due(60, Some(min(70)), t0, Some(min(60)), min(100)));
        assert!(absence_due(60, Some(min(70)), t0, Some(min(60)), min(130)));
        // A rule made during a long silence waits its own minutes first.
        assert!(!absence_due(60, None, min(500), None, min(530)));
    }

    #[test]
    fn trends_compare_against_the_baseline_mean() {
        let rise = TrendConditions {
            metric: Metric::Detections,
            direction: Direction::Rise,
            percent: 50.0,
            baseline_days: 3,
            satellite_id: None,
        };
        assert_eq!(trend_change(&rise, 150.0, &[100.0, 80.0, 120.0]), Some(50.0));
        assert_eq!(trend_change(&rise, 149.0, &[100.0, 100.0, 100.0]), None);
        assert_eq!(trend_change(&rise, 10.0, &[0.0, 0.0]), None);
        let fall = TrendConditions { direction: Direction::Fall, ..rise.clone() };
        assert_eq!(trend_change(&fall, 40.0, &[100.0]), Some(-60.0));
        assert_eq!(trend_change(&fall, 160.0, &[100.0]), None);
        let either = TrendConditions { direction: Direction::Either, ..rise };
        assert!(trend_change(&either, 40.0, &[100.0]).is_some() && trend_change(&either, 160.0, &[100.0]).is_some());
    }
}
