//! Correlation maths behind `/stats/weather-correlation` (SPEC 4.8): Pearson's r between daily
//! detection counts and one weather variable, and a plain-words strength label for it.
//!
//! For n paired samples (x_i, y_i) with means x̄ and ȳ:
//!
//! r = Σ (x_i - x̄)(y_i - ȳ) / √( Σ (x_i - x̄)² · Σ (y_i - ȳ)² )
//!
//! r runs from -1 (one falls exactly as the other rises) through 0 (no linear relation) to 1.
//! It is `None` with fewer than [`MIN_PAIRS`] pairs (two points always lie on a line, so r would
//! be ±1 and say nothing) and when either series is constant (the denominator is zero).
//!
//! Strength by |r|: below 0.1 `none`, below 0.3 `weak`, below 0.5 `moderate`, otherwise
//! `strong` (Cohen's conventional thresholds for r). A label, not a significance test: with a
//! few days of data even a "strong" r can be chance.

use serde::Serialize;

/// Fewer pairs than this give no r.
pub const MIN_PAIRS: usize = 3;

/// How strongly two series move together, from |r|.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Strength {
    /// |r| < 0.1
    None,
    /// 0.1 <= |r| < 0.3
    Weak,
    /// 0.3 <= |r| < 0.5
    Moderate,
    /// |r| >= 0.5
    Strong,
}

impl Strength {
    pub fn of(r: f64) -> Self {
        match r.abs() {
            a if a < 0.1 => Self::None,
            a if a < 0.3 => Self::Weak,
            a if a < 0.5 => Self::Moderate,
            _ => Self::Strong,
        }
    }
}

/// Pearson's r of one pairing, with the number of pairs it rests on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Correlation {
    /// `None` with fewer than [`MIN_PAIRS`] pairs or a constant series.
    pub r: Option<f64>,
    /// Pairs used: the days that had both a count and this weather value.
    pub n: usize,
    /// `None` exactly when `r` is.
    pub strength: Option<Strength>,
}

/// Pearson's r over the pairs whose `y` is known; pairs with `None` (a day without weather) are
/// skipped, not counted as zero.
pub fn correlate(pairs: impl IntoIterator<Item = (f64, Option<f64>)>) -> Correlation {
    let known: Vec<(f64, f64)> = pairs.into_iter().filter_map(|(x, y)| Some((x, y?))).collect();
    let r = pearson(&known);
    Correlation { r, n: known.len(), strength: r.map(Strength::of) }
}

/// Pearson's r of `pairs`; `None` with fewer than [`MIN_PAIRS`] pairs, a constant series or a
/// value that is not finite.
pub fn pearson(pairs: &[(f64, f64)]) -> Option<f64> {
    if pairs.len() < MIN_PAIRS || pairs.iter().any(|(x, y)| !x.is_finite() || !y.is_finite()) {
        return None;
    }
    // Constant means zero variance. Tested exactly on the values: the two-pass sums below can
    // leave a rounding residue (three days of 0.1 mm have deviations of about 1e-17), which would
    // otherwise turn "no variation" into a meaningless r.
    let (x0, y0) = pairs[0];
    if pairs.iter().all(|(x, _)| *x == x0) || pairs.iter().all(|(_, y)| *y == y0) {
        return None;
    }
    let n = pairs.len() as f64;
    let mean_x = pairs.iter().map(|(x, _)| x).sum::<f64>() / n;
    let mean_y = pairs.iter().map(|(_, y)| y).sum::<f64>() / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in pairs {
        let (dx, dy) = (x - mean_x, y - mean_y);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    // Rounding can put a perfect relation a hair beyond ±1; r never is.
    Some((sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn a_hand_computed_r() {
        // x = 1 2 3 4 5, y = 1 3 2 5 4. Means 3 and 3.
        // dx = -2 -1 0 1 2, dy = -2 0 -1 2 1.
        // Σ dx·dy = 4 + 0 + 0 + 2 + 2 = 8; Σ dx² = 10; Σ dy² = 4 + 0 + 1 + 4 + 1 = 10.
        // r = 8 / √(10 · 10) = 0.8.
        let r = pearson(&[(1.0, 1.0), (2.0, 3.0), (3.0, 2.0), (4.0, 5.0), (5.0, 4.0)]).expect("r");
        assert!(close(r, 0.8), "{r}");
    }

    #[test]
    fn a_hand_computed_negative_r_with_fractional_means() {
        // x = 1 2 4 5, y = 0 2 1 0. Means 3 and 0.75.
        // dx = -2 -1 1 2, dy = -0.75 1.25 0.25 -0.75.
        // Σ dx·dy = 1.5 - 1.25 + 0.25 - 1.5 = -1; Σ dx² = 10;
        // Σ dy² = 0.5625 + 1.5625 + 0.0625 + 0.5625 = 2.75.
        // r = -1 / √27.5 = -0.190692517849...
        let r = pearson(&[(1.0, 0.0), (2.0, 2.0), (4.0, 1.0), (5.0, 0.0)]).expect("r");
        assert!(close(r, -1.0 / 27.5f64.sqrt()), "{r}");
        assert!(close(r, -0.190_692_517_849_118_5), "{r}");
    }

    #[test]
    fn perfect_relations_are_exactly_plus_and_minus_one() {
        // y = 2x + 7 and y = -0.5x: every point on a line.
        let up: Vec<(f64, f64)> = (0..10).map(|i| (f64::from(i), 2.0 * f64::from(i) + 7.0)).collect();
        let down: Vec<(f64, f64)> = (0..10).map(|i| (f64::from(i) * 0.1, -0.05 * f64::from(i))).collect();
        assert!(close(pearson(&up).expect("r"), 1.0));
        assert!(close(pearson(&down).expect("r"), -1.0));
        assert!(pearson(&up).expect("r") <= 1.0 && pearson(&down).expect("r") >= -1.0, "never beyond ±1");
    }

    #[test]
    fn r_ignores_scale_and_shift() {
        // r(x, y) = r(a·x + b, c·y + d) for a, c > 0: the 0.8 example in °F and in hundreds.
        let pairs: Vec<(f64, f64)> = [(1.0, 1.0), (2.0, 3.0), (3.0, 2.0), (4.0, 5.0), (5.0, 4.0)]
            .map(|(x, y)| (x * 100.0, y * 1.8 + 32.0))
            .into();
        assert!(close(pearson(&pairs).expect("r"), 0.8));
    }

    #[test]
    fn too_few_pairs_or_a_constant_series_give_no_r() {
        assert_eq!(pearson(&[]), None);
        assert_eq!(pearson(&[(1.0, 2.0), (2.0, 4.0)]), None, "two points always lie on a line");
        assert_eq!(pearson(&[(0.0, 1.0), (0.0, 2.0), (0.0, 3.0)]), None, "no detections at all");
        assert_eq!(pearson(&[(1.0, 0.1), (2.0, 0.1), (3.0, 0.1)]), None, "the same rain every day");
        assert_eq!(pearson(&[(1.0, 0.1), (2.0, f64::NAN), (3.0, 0.2)]), None);
    }

    #[test]
    fn days_without_weather_are_skipped_not_zero() {
        // The hand-computed -1/√27.5 above, with a fifth day (x = 3) that has no weather.
        let c = correlate([(1.0, Some(0.0)), (2.0, Some(2.0)), (3.0, None), (4.0, Some(1.0)), (5.0, Some(0.0))]);
        assert_eq!(c.n, 4);
        assert!(close(c.r.expect("r"), -1.0 / 27.5f64.sqrt()));
        assert_eq!(c.strength, Some(Strength::Weak));
        let none = correlate([(1.0, None), (2.0, Some(1.0)), (3.0, Some(2.0))]);
        assert_eq!((none.r, none.n, none.strength), (None, 2, None));
    }

    #[test]
    fn strength_thresholds() {
        let cases = [
            (0.0, Strength::None),
            (0.099, Strength::None),
            (-0.1, Strength::Weak),
            (0.299, Strength::Weak),
            (0.3, Strength::Moderate),
            (-0.49, Strength::Moderate),
            (0.5, Strength::Strong),
            (-1.0, Strength::Strong),
        ];
        for (r, want) in cases {
            assert_eq!(Strength::of(r), want, "r = {r}");
        }
    }
}
