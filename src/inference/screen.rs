//! Which of the model's answers for one chunk become detections, under one satellite's detection
//! settings ([`crate::domain::detection_settings`]). Pure: the inference workers, `bench quality`
//! and the tests call the same code.
//!
//! In order, for a chunk's windows:
//! 1. **Privacy**: a human voice at or above its level in any window drops the whole chunk
//!    (the worker deletes its audio).
//! 2. Each species keeps its best window. A species below its own minimum (the per-species one,
//!    else the satellite's or team's, else the hub's) is not kept; neither is an excluded species,
//!    one outside a non-empty include list, or one a suppressing sound (a dog) hides.
//! 3. **Location**: a species the range model does not expect here is flagged, held for a second
//!    look, or dropped, as the settings say.
//! 4. **Second look**: below the sure level a detection is held too. [`confirms`] says whether
//!    another window (shifted by half a window, or a neighbouring chunk) names it again.

use crate::{
    domain::{
        detection_settings::{NotExpectedAction, UnconfirmedAction, is_owl},
        settings::TenantSettings,
    },
    inference::{labels::Labels, predict::sigmoid},
};

/// Why a class is never kept, whatever its confidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Never {
    /// A species that may be kept.
    No,
    /// Not a species: dog, engine, human vocal, noise ...
    NotSpecies,
    Excluded,
    NotIncluded,
}

/// One satellite's detection settings, resolved against the model's labels.
#[derive(Debug, Clone)]
pub struct Policy {
    sensitivity: f32,
    /// The team's (or satellite's) minimum, before per-species ones.
    floor: f32,
    /// Per class: the lowest confidence kept.
    keep_at: Vec<f32>,
    /// The lowest of `floor` and every `keep_at`: below it no class is looked at.
    lowest: f32,
    never: Vec<Never>,
    /// Per class: hidden while a suppressing sound was heard.
    suppressible: Vec<bool>,
    suppressors: Vec<usize>,
    suppress_at: f32,
    /// Seconds a suppressing sound hides the suppressible species on its satellite.
    pub suppress_seconds: u32,
    privacy: Vec<usize>,
    privacy_at: Option<f32>,
    range_threshold: f32,
    not_expected: NotExpectedAction,
    /// `None`: second look off.
    sure: Option<f32>,
    confirm_at: f32,
    /// How long a held detection waits for its satellite's next chunk.
    pub wait_sec: u32,
    /// What an unconfirmed held detection becomes.
    pub unconfirmed: UnconfirmedAction,
}

/// The human-voice classes the privacy filter listens for.
const VOICE: &[&str] = &["human_vocal", "human_whistle"];

impl Policy {
    /// `s` is the team's settings with the satellite's overrides applied; `hub_threshold` is
    /// `inference.threshold`, used when neither sets a minimum.
    pub fn new(s: &TenantSettings, hub_threshold: f32, labels: &Labels) -> Self {
        let floor = s.min_confidence.map_or(hub_threshold, |v| v as f32);
        let n = labels.len();
        let mut keep_at = vec![floor; n];
        let mut never = vec![Never::No; n];
        let mut suppressible = vec![false; n];
        let owls = s.suppress_species.iter().any(|c| c == crate::domain::detection_settings::OWLS);
        for (i, l) in labels.iter().enumerate() {
            if l.scientific == l.common {
                never[i] = Never::NotSpecies;
                continue;
            }
            if let Some(v) = s.species_min_confidence.get(&l.code) {
                keep_at[i] = *v as f32;
            }
            if s.exclude_species.contains(&l.code) {
                never[i] = Never::Excluded;
            } else if !s.include_species.is_empty() && !s.include_species.contains(&l.code) {
                never[i] = Never::NotIncluded;
            }
            suppressible[i] = (owls && is_owl(&l.scientific)) || s.suppress_species.contains(&l.code);
        }
        let find = |codes: &[&str]| codes.iter().filter_map(|c| labels.index_of(c)).collect::<Vec<_>>();
        let classes: Vec<&str> = s.suppress_classes.iter().map(String::as_str).collect();
        Self {
            sensitivity: s.sensitivity.map_or(super::predict::DEFAULT_SENSITIVITY, |v| v as f32),
            floor,
            lowest: keep_at.iter().copied().fold(floor, f32::min),
            keep_at,
            never,
            suppressible,
            suppressors: find(&classes),
            suppress_at: s.suppress_min_confidence as f32,
            suppress_seconds: s.suppress_seconds,
            privacy: find(VOICE),
            privacy_at: s.privacy_filter_enabled.then_some(s.privacy_min_confidence as f32),
            range_threshold: s.range_filter_threshold as f32,
            not_expected: s.not_expected_action,
            sure: s.second_look_enabled.then_some(s.second_look_sure_confidence as f32),
            confirm_at: s.second_look_min_confidence as f32,
            wait_sec: s.second_look_wait_sec,
            unconfirmed: s.second_look_unconfirmed,
        }
    }

    /// BirdNET's sensitivity these settings use.
    pub fn sensitivity(&self) -> f32 {
        self.sensitivity
    }

    /// Whether the range model's `score` counts as expected here.
    pub fn expected(&self, score: f32) -> bool {
        score >= self.range_threshold
    }
}

/// Why a candidate is held for a second look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Below the sure level.
    Borderline,
    /// Not expected here this week, and the settings ask for a second look.
    NotExpected,
}

impl Hold {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Borderline => "borderline",
            Self::NotExpected => "not_expected",
        }
    }
}

/// A species kept from a chunk: at once (`hold: None`) or after a second look.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub index: usize,
    pub confidence: f32,
    /// The best window's first sample (48 kHz).
    pub start: usize,
    /// `None` without a location.
    pub expected_here: Option<bool>,
    pub hold: Option<Hold>,
}

/// What the filters did to one chunk, per satellite (`hubFilterStats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub privacy_dropped: u32,
    pub suppressed: u32,
    pub excluded: u32,
    pub not_included: u32,
    pub below_threshold: u32,
    pub not_expected_dropped: u32,
}

/// One chunk's verdict.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Screened {
    /// A human voice was heard: nothing of the chunk is kept, its audio goes.
    pub privacy: bool,
    /// A suppressing sound (a dog) was heard in this chunk.
    pub suppressor_heard: bool,
    pub candidates: Vec<Candidate>,
    pub counts: Counts,
}

/// Screens one chunk: `per_window` holds each window's first sample and logits, `range` the range
/// model's scores at the chunk's place and week, `suppressed` whether a suppressing sound was
/// heard on this satellite within `suppress_seconds` before the chunk.
pub fn screen(p: &Policy, per_window: &[(usize, Vec<f32>)], range: Option<&[f32]>, suppressed: bool) -> Screened {
    let conf = |logit: f32| sigmoid(logit, p.sensitivity);
    let heard = |classes: &[usize], at: f32| {
        per_window.iter().any(|(_, l)| classes.iter().any(|i| l.get(*i).is_some_and(|v| conf(*v) >= at)))
    };
    if let Some(at) = p.privacy_at
        && heard(&p.privacy, at)
    {
        let counts = Counts { privacy_dropped: 1, ..Counts::default() };
        return Screened { privacy: true, counts, ..Screened::default() };
    }
    let suppressor_heard = heard(&p.suppressors, p.suppress_at);
    let mut best: std::collections::BTreeMap<usize, (f32, usize)> = std::collections::BTreeMap::new();
    for (start, logits) in per_window {
        for (i, l) in logits.iter().enumerate() {
            let c = conf(*l);
            if c < p.lowest || p.never.get(i) == Some(&Never::NotSpecies) {
                continue;
            }
            let e = best.entry(i).or_insert((c, *start));
            if c > e.0 {
                *e = (c, *start);
            }
        }
    }
    let mut counts = Counts::default();
    let mut candidates = Vec::new();
    for (index, (confidence, start)) in best {
        let keep_at = p.keep_at.get(index).copied().unwrap_or(f32::INFINITY);
        if confidence < keep_at {
            if confidence >= p.floor {
                counts.below_threshold += 1;
            }
            continue;
        }
        match p.never.get(index) {
            Some(Never::No) => {}
            Some(Never::Excluded) => {
                counts.excluded += 1;
                continue;
            }
            Some(Never::NotIncluded) => {
                counts.not_included += 1;
                continue;
            }
            _ => continue,
        }
        if (suppressed || suppressor_heard) && p.suppressible.get(index) == Some(&true) {
            counts.suppressed += 1;
            continue;
        }
        let expected_here = range.map(|s| s.get(index).is_some_and(|v| p.expected(*v)));
        let mut hold = None;
        if expected_here == Some(false) {
            match p.not_expected {
                NotExpectedAction::Drop => {
                    counts.not_expected_dropped += 1;
                    continue;
                }
                NotExpectedAction::SecondLook => hold = Some(Hold::NotExpected),
                NotExpectedAction::Flag => {}
            }
        }
        if hold.is_none() && p.sure.is_some_and(|sure| confidence < sure) {
            hold = Some(Hold::Borderline);
        }
        candidates.push(Candidate { index, confidence, start, expected_here, hold });
    }
    Screened { privacy: false, suppressor_heard, candidates, counts }
}

/// Whether one more window's logits name class `index` confidently enough to confirm a held
/// detection of it.
pub fn confirms(p: &Policy, index: usize, logits: &[f32]) -> bool {
    logits.get(index).is_some_and(|l| p.confirms_logit(*l))
}

impl Policy {
    /// Whether a window whose logit for the held species is `logit` confirms it.
    pub fn confirms_logit(&self, logit: f32) -> bool {
        sigmoid(logit, self.sensitivity) >= self.confirm_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels() -> Labels {
        Labels::parse(
            "Turdus merula_Eurasian Blackbird\nStrix aluco_Tawny Owl\nDog_Dog\nHuman vocal_Human vocal\nParus major_Great Tit\n",
            "t",
        )
        .expect("labels")
    }

    /// A logit whose plain sigmoid is `c`.
    fn logit(c: f32) -> f32 {
        (c / (1.0 - c)).ln()
    }

    fn window(confs: [f32; 5]) -> (usize, Vec<f32>) {
        (0, confs.iter().map(|c| if *c > 0.0 { logit(*c) } else { -15.0 }).collect())
    }

    #[test]
    fn thresholds_lists_and_the_second_look_decide_per_species() {
        let mut s = TenantSettings::default();
        s.species_min_confidence.insert("parus_major".into(), 0.95);
        let p = Policy::new(&s, 0.7, &labels());
        let got = screen(&p, &[window([0.8, 0.0, 0.0, 0.0, 0.9])], None, false);
        assert_eq!(got.candidates.len(), 1, "{got:?}");
        assert_eq!((got.candidates[0].index, got.candidates[0].hold), (0, Some(Hold::Borderline)));
        assert_eq!(got.counts.below_threshold, 1, "the great tit is below its own minimum");
        let sure = screen(&p, &[window([0.97, 0.0, 0.0, 0.0, 0.0])], None, false);
        assert_eq!(sure.candidates[0].hold, None);

        let s = TenantSettings { exclude_species: vec!["turdus_merula".into()], ..TenantSettings::default() };
        let got = screen(&Policy::new(&s, 0.7, &labels()), &[window([0.97, 0.0, 0.0, 0.0, 0.0])], None, false);
        assert!(got.candidates.is_empty());
        assert_eq!(got.counts.excluded, 1);
        let s = TenantSettings { include_species: vec!["parus_major".into()], ..TenantSettings::default() };
        let got = screen(&Policy::new(&s, 0.7, &labels()), &[window([0.97, 0.0, 0.0, 0.0, 0.0])], None, false);
        assert_eq!(got.counts.not_included, 1);
    }

    #[test]
    fn a_voice_drops_the_chunk_and_a_dog_hides_the_owls() {
        let p = Policy::new(&TenantSettings::default(), 0.7, &labels());
        let got = screen(&p, &[window([0.97, 0.0, 0.0, 0.8, 0.0])], None, false);
        assert!(got.privacy && got.candidates.is_empty());
        let got = screen(&p, &[window([0.97, 0.97, 0.9, 0.0, 0.0])], None, false);
        assert!(got.suppressor_heard);
        assert_eq!(got.candidates.iter().map(|c| c.index).collect::<Vec<_>>(), [0], "the owl is hidden");
        assert_eq!(got.counts.suppressed, 1);
        let later = screen(&p, &[window([0.0, 0.97, 0.0, 0.0, 0.0])], None, true);
        assert!(later.candidates.is_empty(), "a dog heard just before still hides it");
        let off = TenantSettings { privacy_filter_enabled: false, ..TenantSettings::default() };
        let got = screen(&Policy::new(&off, 0.7, &labels()), &[window([0.97, 0.0, 0.0, 0.8, 0.0])], None, false);
        assert!(!got.privacy && got.candidates.len() == 1);
    }

    #[test]
    fn not_expected_species_are_dropped_held_or_flagged() {
        let range = [0.5, 0.0, 0.0, 0.0, 0.01];
        let w = [window([0.97, 0.0, 0.0, 0.0, 0.97])];
        let mut s = TenantSettings::default();
        let got = screen(&Policy::new(&s, 0.7, &labels()), &w, Some(&range), false);
        assert_eq!(got.candidates.len(), 1);
        assert_eq!(got.counts.not_expected_dropped, 1);
        s.not_expected_action = NotExpectedAction::SecondLook;
        let got = screen(&Policy::new(&s, 0.7, &labels()), &w, Some(&range), false);
        assert_eq!(got.candidates[1].hold, Some(Hold::NotExpected));
        s.not_expected_action = NotExpectedAction::Flag;
        let got = screen(&Policy::new(&s, 0.7, &labels()), &w, Some(&range), false);
        assert_eq!((got.candidates[1].hold, got.candidates[1].expected_here), (None, Some(false)));
        let p = Policy::new(&s, 0.7, &labels());
        assert!(confirms(&p, 4, &window([0.0, 0.0, 0.0, 0.0, 0.6]).1));
        assert!(!confirms(&p, 4, &window([0.0, 0.0, 0.0, 0.0, 0.4]).1));
    }
}
