//! From logits to predictions: BirdNET's sigmoid with a sensitivity, a threshold, top species.
//!
//! `confidence = 1 / (1 + exp(-s * clamp(logit, -15, 15)))` with `s = clamp(2 - sensitivity, 0.5, 1.5)`:
//! sensitivity 1.0 (the default) is the plain sigmoid; higher sensitivity flattens the curve so more
//! species pass a threshold, lower makes it steeper. Confidence is the raw model output, not
//! calibrated.

use serde::Serialize;

use super::labels::Labels;

pub const DEFAULT_SENSITIVITY: f32 = 1.0;

/// One species the model heard in a window.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Prediction {
    pub index: usize,
    pub species_code: String,
    pub scientific_name: String,
    pub common_name: String,
    pub confidence: f32,
    /// Whether the range model expects the species here this week; `None` without a location.
    pub expected_here: Option<bool>,
}

pub fn sigmoid(logit: f32, sensitivity: f32) -> f32 {
    let s = (2.0 - sensitivity).clamp(0.5, 1.5);
    1.0 / (1.0 + (-s * logit.clamp(-15.0, 15.0)).exp())
}

/// Species at or above `threshold`, most confident first, at most `max`.
pub fn top(logits: &[f32], labels: &Labels, sensitivity: f32, threshold: f32, max: usize) -> Vec<Prediction> {
    let mut scored: Vec<(usize, f32)> = logits
        .iter()
        .enumerate()
        .map(|(i, l)| (i, sigmoid(*l, sensitivity)))
        .filter(|(_, c)| *c >= threshold)
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored
        .into_iter()
        .take(max)
        .filter_map(|(index, confidence)| {
            let label = labels.get(index)?;
            Some(Prediction {
                index,
                species_code: label.code.clone(),
                scientific_name: label.scientific.clone(),
                common_name: label.common.clone(),
                confidence,
                expected_here: None,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sensitivity_shapes_the_sigmoid() {
        assert!((sigmoid(0.0, 1.0) - 0.5).abs() < 1e-6);
        assert!((sigmoid(1.2612, 1.0) - 0.7792).abs() < 1e-3, "matches BirdNET's own numbers");
        assert!(sigmoid(1.0, 1.5) < sigmoid(1.0, 1.0), "higher sensitivity flattens positive logits");
        assert!(sigmoid(-1.0, 1.5) > sigmoid(-1.0, 1.0), "... and lifts negative ones");
        assert_eq!(sigmoid(1000.0, 1.0), sigmoid(15.0, 1.0), "logits are clipped");
    }

    #[test]
    fn top_filters_sorts_and_limits() {
        let labels = Labels::parse("A a_Aa\nB b_Bb\nC c_Cc\n", "t").expect("labels");
        let got = top(&[0.0, 3.0, 1.0], &labels, 1.0, 0.6, 5);
        let names: Vec<_> = got.iter().map(|p| p.common_name.as_str()).collect();
        assert_eq!(names, ["Bb", "Cc"]);
        assert_eq!(top(&[0.0, 3.0, 1.0], &labels, 1.0, 0.6, 1).len(), 1);
    }
}
