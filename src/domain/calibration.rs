//! Calibration of raw classifier confidences from what people confirmed and rejected.
//!
//! A classifier's "confidence 0.8" is not an 80 % chance of being right: models are often
//! over- or under-confident, differently for every species and site. Once people have reviewed
//! some detections (confirmed or rejected), we can learn how often each confidence was actually
//! right and show that instead.
//!
//! The rule, in three steps:
//!
//! 1. **Buckets.** Confidences are sorted into [`BUCKETS`] fixed buckets of width 0.05 over
//!    [0, 1] (1.0 falls in the last one; values outside [0, 1] are clamped, NaN counts as 0).
//!    Each bucket's raw rate is the share of its reviewed detections that were confirmed.
//!    Fixed buckets keep the curve small, easy to show as a table, and comparable between
//!    species; reviews are too few for a finer, smooth fit.
//! 2. **Monotone fit (PAV).** A higher raw confidence should never mean a *lower* chance of being
//!    right, but with few reviews per bucket the raw rates zig-zag. The pool-adjacent-violators
//!    algorithm ([`pav`]) replaces them with the closest non-decreasing curve: wherever a bucket's
//!    rate is above the next one's, the two are pooled into their mean, weighted by how many
//!    reviews each holds, and pooling repeats until nothing decreases. Among all non-decreasing
//!    curves it has the least weighted squared error, and it needs no assumption about shape.
//! 3. **Empty buckets.** A bucket with no reviews takes the value of the nearest bucket below it
//!    that has some (or, if there is none below, the nearest above), so every confidence gets a
//!    value and the whole curve stays non-decreasing. Each bucket still reports its own review
//!    count (0 when empty), so a reader can tell measured values from filled-in ones.
//!
//! With fewer than [`MIN_SAMPLES`] reviews there is no curve at all ([`fit`] returns `None`):
//! that little evidence would mislead more than help.

use serde::Serialize;

/// Number of confidence buckets, each [`BUCKET_WIDTH`] wide.
pub const BUCKETS: usize = 20;

/// Width of one bucket in confidence.
pub const BUCKET_WIDTH: f64 = 1.0 / BUCKETS as f64;

/// Fewest reviewed detections a curve is fitted from.
pub const MIN_SAMPLES: usize = 10;

/// One bucket of a fitted calibration curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bucket {
    /// Position in the curve, 0 for the lowest confidences.
    pub index: usize,
    /// Lowest confidence in the bucket (inclusive).
    pub lower: f64,
    /// Highest confidence in the bucket (exclusive, except 1.0 for the last bucket).
    pub upper: f64,
    /// Share of detections in this confidence range expected to be right, in [0, 1].
    pub calibrated: f64,
    /// Reviewed detections that fell in this bucket; 0 means `calibrated` was filled in from a
    /// neighbour.
    pub samples: u32,
}

/// The bucket a confidence falls in: `floor(confidence / 0.05)`, with 1.0 in the last bucket,
/// values outside [0, 1] clamped and NaN treated as 0.
pub fn bucket_of(confidence: f64) -> usize {
    let clamped = if confidence.is_nan() { 0.0 } else { confidence.clamp(0.0, 1.0) };
    // The tiny nudge puts decimal boundaries such as 0.35 (stored as 0.34999...) in the bucket
    // a person reading "0.35" would expect.
    let index = (clamped * BUCKETS as f64 + 1e-9).floor() as usize;
    index.min(BUCKETS - 1)
}

/// A run of neighbouring points pooled to one value.
struct Block {
    weight: f64,
    weighted_sum: f64,
    /// Plain sum, used only if all weights are zero, so the mean stays defined.
    plain_sum: f64,
    len: usize,
}

impl Block {
    fn mean(&self) -> f64 {
        if self.weight > 0.0 { self.weighted_sum / self.weight } else { self.plain_sum / self.len as f64 }
    }
}

/// Weighted pool-adjacent-violators: the non-decreasing sequence closest to the `(value, weight)`
/// points in weighted squared error, one fitted value per point, in input order.
///
/// Weights should be positive; negative or NaN weights are treated as 0, NaN values as 0, so
/// the output is non-decreasing whatever comes in.
pub fn pav(points: &[(f64, f64)]) -> Vec<f64> {
    let mut blocks: Vec<Block> = Vec::with_capacity(points.len());
    for &(value, weight) in points {
        let value = if value.is_nan() { 0.0 } else { value };
        let weight = if weight > 0.0 { weight } else { 0.0 };
        let mut block = Block { weight, weighted_sum: weight * value, plain_sum: value, len: 1 };
        // Pool backwards while the previous run sits above the new one; afterwards the stack of
        // run means is non-decreasing again.
        while let Some(previous) = blocks.pop_if(|previous| previous.mean() > block.mean()) {
            block = Block {
                weight: previous.weight + block.weight,
                weighted_sum: previous.weighted_sum + block.weighted_sum,
                plain_sum: previous.plain_sum + block.plain_sum,
                len: previous.len + block.len,
            };
        }
        blocks.push(block);
    }
    blocks.iter().flat_map(|block| std::iter::repeat_n(block.mean(), block.len)).collect()
}

/// Fits the calibration curve from reviewed detections: `(raw confidence, confirmed)` pairs,
/// where `confirmed` is true for a confirmed detection and false for a rejected one.
///
/// Returns all [`BUCKETS`] buckets, or `None` with fewer than [`MIN_SAMPLES`] reviews. Reviews
/// of only one kind are fine: the curve is then all 1.0 or all 0.0.
pub fn fit(samples: &[(f64, bool)]) -> Option<Vec<Bucket>> {
    if samples.len() < MIN_SAMPLES {
        return None;
    }
    let mut counts = [0usize; BUCKETS];
    let mut confirmed = [0usize; BUCKETS];
    for &(confidence, is_confirmed) in samples {
        let index = bucket_of(confidence);
        counts[index] += 1;
        confirmed[index] += usize::from(is_confirmed);
    }

    let filled: Vec<usize> = (0..BUCKETS).filter(|&i| counts[i] > 0).collect();
    let points: Vec<(f64, f64)> =
        filled.iter().map(|&i| (confirmed[i] as f64 / counts[i] as f64, counts[i] as f64)).collect();
    let mut values: [Option<f64>; BUCKETS] = [None; BUCKETS];
    for (&i, value) in filled.iter().zip(pav(&points)) {
        values[i] = Some(value);
    }

    // Carry the last measured value upwards; buckets below the first measured one take that.
    let first = values.iter().flatten().next().copied()?;
    let mut carried = first;
    let curve = (0..BUCKETS)
        .map(|index| {
            carried = values[index].unwrap_or(carried);
            Bucket {
                index,
                lower: index as f64 * BUCKET_WIDTH,
                upper: (index + 1) as f64 * BUCKET_WIDTH,
                calibrated: carried,
                samples: u32::try_from(counts[index]).unwrap_or(u32::MAX),
            }
        })
        .collect();
    Some(curve)
}

/// The calibrated value for a raw confidence, or `None` if `curve` is not a full
/// [`BUCKETS`]-bucket curve as [`fit`] makes.
pub fn calibrate(curve: &[Bucket], confidence: f64) -> Option<f64> {
    if curve.len() != BUCKETS {
        return None;
    }
    curve.get(bucket_of(confidence)).map(|bucket| bucket.calibrated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn weighted_error(points: &[(f64, f64)], fitted: &[f64]) -> f64 {
        points.iter().zip(fitted).map(|(&(value, weight), f)| weight * (value - f).powi(2)).sum()
    }

    fn assert_close(actual: &[f64], expected: &[f64]) {
        assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
        for (a, e) in actual.iter().zip(expected) {
            assert!((a - e).abs() < 1e-12, "{actual:?} vs {expected:?}");
        }
    }

    #[test]
    fn monotone_input_is_left_alone() {
        let points = [(0.1, 1.0), (0.1, 3.0), (0.4, 2.0), (0.9, 0.5)];
        assert_close(&pav(&points), &[0.1, 0.1, 0.4, 0.9]);
        assert!(pav(&[]).is_empty());
    }

    #[test]
    fn a_violation_is_pooled_to_the_weighted_mean() {
        assert_close(&pav(&[(0.2, 1.0), (0.8, 1.0), (0.4, 1.0)]), &[0.2, 0.6, 0.6]);
        // Three times the weight on 0.4 pulls the pool to (0.8 + 3 * 0.4) / 4.
        assert_close(&pav(&[(0.2, 1.0), (0.8, 1.0), (0.4, 3.0)]), &[0.2, 0.5, 0.5]);
        // A late low value can pool several earlier runs at once.
        assert_close(&pav(&[(0.5, 1.0), (0.6, 1.0), (0.7, 1.0), (0.0, 3.0)]), &[0.3; 4]);
    }

    #[test]
    fn bucket_edges() {
        assert_eq!(bucket_of(0.0), 0);
        assert_eq!(bucket_of(0.049), 0);
        assert_eq!(bucket_of(0.05), 1);
        assert_eq!(bucket_of(0.35), 7);
        assert_eq!(bucket_of(0.999), 19);
        assert_eq!(bucket_of(1.0), 19);
        assert_eq!(bucket_of(-0.1), 0);
        assert_eq!(bucket_of(1.5), 19);
        assert_eq!(bucket_of(f64::NAN), 0);
        for index in 0..BUCKETS {
            assert_eq!(bucket_of(index as f64 * BUCKET_WIDTH), index, "lower edge of bucket {index}");
        }
    }

    #[test]
    fn too_few_reviews_give_no_curve() {
        let nine = vec![(0.7, true); MIN_SAMPLES - 1];
        assert_eq!(fit(&nine), None);
        assert_eq!(fit(&[]), None);
        assert!(fit(&[(0.7, true); MIN_SAMPLES]).is_some());
    }

    #[test]
    fn one_kind_of_review_gives_a_flat_curve() {
        let all_right = fit(&[(0.3, true); 12]).unwrap_or_default();
        assert!(all_right.len() == BUCKETS && all_right.iter().all(|b| b.calibrated == 1.0));
        let all_wrong = fit(&[(0.9, false); 12]).unwrap_or_default();
        assert!(all_wrong.len() == BUCKETS && all_wrong.iter().all(|b| b.calibrated == 0.0));
    }

    #[test]
    fn empty_buckets_are_filled_from_below_then_above() {
        // Bucket 4 (0.2..0.25): 1 of 4 confirmed; bucket 10 (0.5..0.55): 5 of 6 confirmed.
        let mut samples = vec![(0.22, true), (0.22, false), (0.22, false), (0.22, false)];
        samples.extend([(0.52, true); 5]);
        samples.push((0.52, false));
        let curve = fit(&samples).unwrap_or_default();
        assert_eq!(curve.len(), BUCKETS);
        assert_eq!((curve[4].samples, curve[10].samples, curve[0].samples), (4, 6, 0));
        assert_eq!(curve[0].calibrated, 0.25, "below the first measured bucket: filled from above");
        assert_eq!(curve[7].calibrated, 0.25, "between measured buckets: filled from below");
        assert!((curve[19].calibrated - 5.0 / 6.0).abs() < 1e-12);
        assert_eq!((curve[19].lower, curve[19].upper), (19.0 * BUCKET_WIDTH, 1.0));
        assert_eq!(calibrate(&curve, 0.23), Some(0.25));
        assert_eq!(calibrate(&curve, 1.0), Some(curve[19].calibrated));
        assert_eq!(calibrate(&curve[..5], 0.23), None);
        assert_eq!(calibrate(&[], 0.23), None);
    }

    #[test]
    fn buckets_serialise_in_camel_case() -> Result<(), serde_json::Error> {
        let bucket = Bucket { index: 3, lower: 0.15, upper: 0.2, calibrated: 0.5, samples: 2 };
        let json = serde_json::to_value(&bucket)?;
        assert_eq!(json, serde_json::json!({"index": 3, "lower": 0.15, "upper": 0.2, "calibrated": 0.5, "samples": 2}));
        Ok(())
    }

    fn weighted_points() -> impl Strategy<Value = Vec<(f64, f64)>> {
        prop::collection::vec((0.0f64..=1.0, 0.1f64..=10.0), 1..60)
    }

    proptest! {
        #[test]
        fn pav_output_never_decreases(points in weighted_points()) {
            let fitted = pav(&points);
            prop_assert_eq!(fitted.len(), points.len());
            prop_assert!(fitted.windows(2).all(|pair| pair[0] <= pair[1]), "{:?}", fitted);
        }

        #[test]
        fn pav_beats_every_other_monotone_fit(points in weighted_points(), mut other in prop::collection::vec(0.0f64..=1.0, 60)) {
            let fitted = pav(&points);
            let error = weighted_error(&points, &fitted);
            let tolerance = 1e-9;

            let total_weight: f64 = points.iter().map(|p| p.1).sum();
            let mean = points.iter().map(|p| p.0 * p.1).sum::<f64>() / total_weight;
            prop_assert!(error <= weighted_error(&points, &vec![mean; points.len()]) + tolerance);

            other.truncate(points.len());
            other.sort_by(f64::total_cmp);
            prop_assert!(error <= weighted_error(&points, &other) + tolerance);

            // A random monotone fit is usually far off; a small step from PAV's answer towards it
            // is also monotone and probes whether PAV really sits at the minimum.
            let nudged: Vec<f64> = fitted.iter().zip(&other).map(|(f, o)| 0.99 * f + 0.01 * o).collect();
            prop_assert!(error <= weighted_error(&points, &nudged) + tolerance);
        }

        #[test]
        fn fit_always_gives_a_full_monotone_curve(samples in prop::collection::vec((-0.2f64..=1.2, any::<bool>()), MIN_SAMPLES..200)) {
            let curve = fit(&samples);
            prop_assert!(curve.is_some());
            let curve = curve.unwrap_or_default();
            prop_assert_eq!(curve.len(), BUCKETS);
            prop_assert!(curve.iter().all(|b| (0.0..=1.0).contains(&b.calibrated)));
            prop_assert!(curve.windows(2).all(|pair| pair[0].calibrated <= pair[1].calibrated));
            prop_assert_eq!(curve.iter().map(|b| b.samples as usize).sum::<usize>(), samples.len());
        }
    }
}
