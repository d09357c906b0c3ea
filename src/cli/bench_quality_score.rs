//! The settings `bench quality` compares, applied to one stream of chunks (one satellite's
//! recording, a chunk per 3 s window) through the hub's own screening
//! ([`crate::inference::screen`]), and the tallies they add up to.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::{
    domain::{detection_settings::NotExpectedAction, settings::TenantSettings},
    inference::screen::{self, Policy},
};

/// The hub's `inference.threshold` default, which every setting here starts from.
pub const HUB_THRESHOLD: f32 = 0.7;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    /// BirdNET as it comes: 0.7, sensitivity 1.0, every species class, no location filter.
    Plain,
    /// The hub before issue 35: plain, plus the location filter flagging (and keeping) species
    /// not expected here.
    Today,
    /// `TenantSettings::default()`: privacy and dog filters, the second look below 0.85, species
    /// not expected here dropped.
    New,
}

impl Setting {
    pub const ALL: [Setting; 3] = [Setting::Plain, Setting::Today, Setting::New];

    pub fn name(self) -> &'static str {
        match self {
            Setting::Plain => "plain BirdNET",
            Setting::Today => "hub before",
            Setting::New => "new defaults",
        }
    }

    /// The team settings that give this setting through [`screen::screen`].
    pub fn team_settings(self) -> TenantSettings {
        match self {
            Setting::New => TenantSettings::default(),
            Setting::Plain | Setting::Today => TenantSettings {
                privacy_filter_enabled: false,
                suppress_classes: Vec::new(),
                suppress_species: Vec::new(),
                second_look_enabled: false,
                not_expected_action: NotExpectedAction::Flag,
                ..TenantSettings::default()
            },
        }
    }

    /// Whether the location filter runs (plain BirdNET has none).
    pub fn uses_range(self) -> bool {
        self != Setting::Plain
    }
}

/// What one setting kept from a stream.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Per window (chunk): the classes kept, once each.
    pub kept: Vec<Vec<usize>>,
    /// Kept but flagged "not expected here".
    pub flagged: usize,
    /// Held for a second look, and of those confirmed.
    pub held: usize,
    pub confirmed: usize,
    /// Model calls beyond one per window: the shifted windows of held detections.
    pub extra_calls: usize,
    /// Chunks the privacy filter emptied.
    pub privacy_dropped: usize,
}

/// Which way a second look shifts a held detection's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shift {
    Back,
    Forward,
}

/// Runs `setting` over a stream's windows. `logits[i]` belongs to the window starting at
/// `starts[i]`; `shifted(i, shift)` classifies window `i` shifted by half a window (one model
/// call). A held detection is decided the way the hub's worker decides it
/// (`inference::worker::second_look`): the previous chunk's scores, else the window shifted back
/// (one call); then the window shifted forward (one call) and the next chunk's scores.
pub fn evaluate(
    policy: &Policy,
    setting: Setting,
    starts: &[usize],
    logits: &[Vec<f32>],
    range: Option<&[f32]>,
    shifted: &mut dyn FnMut(usize, Shift) -> anyhow::Result<Vec<f32>>,
) -> anyhow::Result<Outcome> {
    let range = if setting.uses_range() { range } else { None };
    let chunk_seconds = 3usize;
    let mut out = Outcome::default();
    let mut last_suppressor: Option<usize> = None;
    for (i, (start, l)) in starts.iter().zip(logits).enumerate() {
        let suppressed = last_suppressor.is_some_and(|j| (i - j) * chunk_seconds <= policy.suppress_seconds as usize);
        let s = screen::screen(policy, &[(*start, l.clone())], range, suppressed);
        if s.suppressor_heard {
            last_suppressor = Some(i);
        }
        out.privacy_dropped += usize::from(s.privacy);
        let confirmed_by = |w: Option<&Vec<f32>>, index: usize| w.is_some_and(|w| screen::confirms(policy, index, w));
        let mut undecided: Vec<usize> = Vec::new();
        let mut kept = Vec::new();
        for c in &s.candidates {
            if c.hold.is_none() {
                kept.push(c.index);
                continue;
            }
            out.held += 1;
            if confirmed_by(i.checked_sub(1).and_then(|p| logits.get(p)), c.index) {
                kept.push(c.index);
            } else {
                undecided.push(c.index);
            }
        }
        for (shift, next) in [(Shift::Back, None), (Shift::Forward, logits.get(i + 1))] {
            if undecided.is_empty() {
                break;
            }
            out.extra_calls += 1;
            let w = shifted(i, shift)?;
            let (yes, no): (Vec<usize>, Vec<usize>) =
                undecided.iter().partition(|c| confirmed_by(Some(&w), **c) || confirmed_by(next, **c));
            kept.extend(yes);
            undecided = no;
        }
        out.confirmed += kept.len() - s.candidates.iter().filter(|c| c.hold.is_none()).count();
        let not_expected = |k: &usize| s.candidates.iter().any(|c| c.index == *k && c.expected_here == Some(false));
        out.flagged += kept.iter().filter(|k| not_expected(k)).count();
        kept.sort_unstable();
        out.kept.push(kept);
    }
    Ok(out)
}

/// Recall and precision on labelled bird windows.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BirdScore {
    pub windows: usize,
    /// Labelled (window, species) pairs.
    pub labelled: usize,
    /// Detections kept on those windows, and of those, labelled ones.
    pub kept: usize,
    pub correct: usize,
}

impl BirdScore {
    pub fn add(&mut self, labels: &[usize], kept: &[usize]) {
        self.windows += 1;
        self.labelled += labels.len();
        self.kept += kept.len();
        self.correct += kept.iter().filter(|k| labels.contains(k)).count();
    }

    pub fn recall(&self) -> Option<f64> {
        (self.labelled > 0).then(|| self.correct as f64 / self.labelled as f64)
    }

    pub fn precision(&self) -> Option<f64> {
        (self.kept > 0).then(|| self.correct as f64 / self.kept as f64)
    }
}

/// Detections on non-bird sound alone.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NoiseScore {
    pub windows: usize,
    pub detections: usize,
}

impl NoiseScore {
    pub fn per_hour(&self) -> f64 {
        let hours = self.windows as f64 * 3.0 / 3600.0;
        if hours > 0.0 { self.detections as f64 / hours } else { 0.0 }
    }
}

/// Everything one setting at one precision scored.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    /// By condition: `clean` or the SNR (`+20 dB` ...).
    pub birds: BTreeMap<String, BirdScore>,
    /// By recording group, then condition.
    pub groups: BTreeMap<String, BTreeMap<String, BirdScore>>,
    /// By kind of non-bird sound.
    pub noise: BTreeMap<String, NoiseScore>,
    pub windows: usize,
    pub extra_calls: usize,
    pub flagged: usize,
    pub held: usize,
    pub confirmed: usize,
    pub privacy_dropped: usize,
}

impl Tally {
    pub fn add_run(&mut self, o: &Outcome) {
        self.windows += o.kept.len();
        self.extra_calls += o.extra_calls;
        self.flagged += o.flagged;
        self.held += o.held;
        self.confirmed += o.confirmed;
        self.privacy_dropped += o.privacy_dropped;
    }

    /// All the non-bird sound together.
    pub fn noise_total(&self) -> NoiseScore {
        self.noise.values().fold(NoiseScore::default(), |a, n| NoiseScore {
            windows: a.windows + n.windows,
            detections: a.detections + n.detections,
        })
    }

    pub fn extra_calls_per_window(&self) -> f64 {
        if self.windows == 0 { 0.0 } else { self.extra_calls as f64 / self.windows as f64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::labels::Labels;

    fn labels() -> Labels {
        Labels::parse("Turdus merula_Eurasian Blackbird\nHuman vocal_Human vocal\nParus major_Great Tit\n", "t")
            .expect("labels")
    }

    fn logits(confs: [f32; 3]) -> Vec<f32> {
        confs.iter().map(|c| if *c > 0.0 { (c / (1.0 - c)).ln() } else { -15.0 }).collect()
    }

    #[test]
    fn the_new_defaults_look_twice_at_borderline_calls_and_count_the_calls() {
        let p = Policy::new(&Setting::New.team_settings(), HUB_THRESHOLD, &labels());
        // Chunk 0: a sure blackbird. Chunk 1: a borderline great tit that chunk 2 names again
        // (too weakly to be kept itself), after both shifted windows. Chunk 3: a borderline great
        // tit that chunk 2 confirms before any call. Chunk 4: a borderline blackbird nothing
        // confirms, beside chunk 5, where a voice empties the chunk.
        let l = [
            logits([0.95, 0.0, 0.0]),
            logits([0.0, 0.0, 0.75]),
            logits([0.0, 0.0, 0.6]),
            logits([0.0, 0.0, 0.75]),
            logits([0.75, 0.0, 0.0]),
            logits([0.0, 0.9, 0.95]),
        ];
        let starts: Vec<usize> = (0..6).map(|i| i * 144_000).collect();
        let mut asked = Vec::new();
        let mut shifted = |i: usize, shift: Shift| {
            asked.push((i, shift));
            Ok(logits([0.0; 3]))
        };
        let o = evaluate(&p, Setting::New, &starts, &l, None, &mut shifted).expect("evaluate");
        assert_eq!(o.kept, vec![vec![0], vec![2], vec![], vec![2], vec![], vec![]]);
        assert_eq!((o.held, o.confirmed, o.extra_calls, o.privacy_dropped), (3, 2, 4, 1));
        let (b, f) = (Shift::Back, Shift::Forward);
        assert_eq!(asked, [(1, b), (1, f), (4, b), (4, f)], "only undecided held detections cost model calls");

        let p = Policy::new(&Setting::Plain.team_settings(), HUB_THRESHOLD, &labels());
        let o = evaluate(&p, Setting::Plain, &starts, &l, None, &mut |_, _| anyhow::bail!("no calls")).expect("plain");
        assert_eq!(o.kept, vec![vec![0], vec![2], vec![], vec![2], vec![0], vec![2]]);
    }

    #[test]
    fn recall_and_precision_count_species_per_window() {
        let mut s = BirdScore::default();
        s.add(&[1, 2], &[2, 5]);
        s.add(&[1], &[]);
        assert_eq!((s.labelled, s.kept, s.correct), (3, 2, 1));
        assert_eq!(s.recall(), Some(1.0 / 3.0));
        assert_eq!(s.precision(), Some(0.5));
        assert_eq!(NoiseScore { windows: 1200, detections: 3 }.per_hour(), 3.0);
    }
}
