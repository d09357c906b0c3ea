//! Diversity and overlap maths behind `/stats/biodiversity` and `/stats/compare` (SPEC 4.8).
//! Pure functions over plain counts and species codes; the use case fetches the counts.
//!
//! For one community with per-species detection counts n_1..n_S (zeros dropped), N = Σ n_i
//! detections and proportions p_i = n_i / N:
//!
//! - **Richness** S: the number of species with at least one detection.
//! - **Shannon index** H' = -Σ p_i ln p_i, with the natural log (so the unit is nats). It is 0 for
//!   one species and grows with both richness and evenness.
//! - **Simpson's diversity** 1 - D, with D = Σ n_i (n_i - 1) / (N (N - 1)): the chance that two
//!   detections drawn without replacement are of different species. 0 when N < 2.
//! - **Pielou's evenness** J' = H' / ln S (natural log again): how close H' comes to its maximum
//!   for that many species, from 0 (one species dominates) to 1 (all equal). Undefined when S < 2.
//!
//! For two species sets A and B, the **Jaccard index** is |A ∩ B| / |A ∪ B|: 1 for the same
//! species, 0 for none in common, undefined when both sets are empty.

use std::collections::BTreeSet;

/// Diversity of one community from its per-species counts (zeros are ignored).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Diversity {
    /// Richness S: species with a count above zero.
    pub species: u32,
    /// N: the sum of the counts (detections).
    pub individuals: u64,
    /// Shannon H' = -Σ p_i ln p_i; 0 when S <= 1.
    pub shannon: f64,
    /// Simpson 1 - D with the unbiased D = Σ n_i(n_i - 1) / (N(N - 1)); 0 when N < 2.
    pub simpson: f64,
    /// Pielou J' = H' / ln S; `None` when S < 2, where it has no meaning.
    pub evenness: Option<f64>,
}

/// Richness, Shannon, Simpson and Pielou evenness of one community.
///
/// Simpson uses the unbiased form Σ n_i(n_i - 1) / (N(N - 1)) rather than the plain Σ p_i²:
/// a satellite often has only a handful of detections in the chosen window, and Σ p_i² is biased
/// upwards by about (1 - Σ p_i²) / N, so small samples would look less diverse than large ones
/// from the same place. The extreme case is [1, 1]: plain 1 - Σ p_i² = 0.5, unbiased 1.0.
pub fn diversity(counts: &[u64]) -> Diversity {
    let present: Vec<u64> = counts.iter().copied().filter(|&n| n > 0).collect();
    // A u128 sum cannot overflow for any u64 counts.
    let total: u128 = present.iter().map(|&n| u128::from(n)).sum();
    let species = u32::try_from(present.len()).unwrap_or(u32::MAX);
    let individuals = u64::try_from(total).unwrap_or(u64::MAX);

    // With one species p = 1 and -1 · ln 1 is -0.0; return a plain 0 instead.
    let shannon = if present.len() < 2 {
        0.0
    } else {
        let n = total as f64;
        -present
            .iter()
            .map(|&count| {
                let p = count as f64 / n;
                p * p.ln()
            })
            .sum::<f64>()
    };

    let simpson = if total < 2 {
        0.0
    } else {
        // In f64 so huge counts cannot overflow; it is still exact while N(N - 1) < 2^53
        // (N below about 94 million detections). The clamp absorbs rounding beyond that.
        let same: f64 = present.iter().map(|&count| count as f64 * (count - 1) as f64).sum();
        let pairs = total as f64 * (total - 1) as f64;
        (1.0 - same / pairs).clamp(0.0, 1.0)
    };

    // J' cannot exceed 1, but rounding can put equal counts a hair above it (five equal species
    // give 1.0000000000000002), which would show in the JSON; clamp it.
    let evenness = (present.len() >= 2).then(|| (shannon / (present.len() as f64).ln()).min(1.0));

    Diversity { species, individuals, shannon, simpson, evenness }
}

/// Overlap of two species sets (any iterables of species codes).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Overlap {
    /// Species in both sets, sorted.
    pub shared: Vec<String>,
    /// Species only in the first set, sorted.
    pub only_a: Vec<String>,
    /// Species only in the second set, sorted.
    pub only_b: Vec<String>,
    /// |A ∩ B| / |A ∪ B|; `None` when both sets are empty.
    pub jaccard: Option<f64>,
}

/// Shared and exclusive species of two sets, and their Jaccard index. Repeated codes count once.
pub fn overlap<'a>(a: impl IntoIterator<Item = &'a str>, b: impl IntoIterator<Item = &'a str>) -> Overlap {
    let a: BTreeSet<&str> = a.into_iter().collect();
    let b: BTreeSet<&str> = b.into_iter().collect();
    Overlap {
        shared: a.intersection(&b).map(|code| code.to_string()).collect(),
        only_a: a.difference(&b).map(|code| code.to_string()).collect(),
        only_b: b.difference(&a).map(|code| code.to_string()).collect(),
        jaccard: jaccard(&a, &b),
    }
}

/// Jaccard index for more than two sets, pairwise: for n sets, the n*(n-1)/2 pairs in order (i<j).
pub fn pairwise_jaccard(sets: &[Vec<String>]) -> Vec<(usize, usize, Option<f64>)> {
    let sets: Vec<BTreeSet<&str>> = sets.iter().map(|set| set.iter().map(String::as_str).collect()).collect();
    let mut pairs = Vec::with_capacity(sets.len() * sets.len().saturating_sub(1) / 2);
    for (i, a) in sets.iter().enumerate() {
        for (j, b) in sets.iter().enumerate().skip(i + 1) {
            pairs.push((i, j, jaccard(a, b)));
        }
    }
    pairs
}

fn jaccard(a: &BTreeSet<&str>, b: &BTreeSet<&str>) -> Option<f64> {
    let shared = a.intersection(b).count();
    let union = a.len() + b.len() - shared;
    (union > 0).then(|| shared as f64 / union as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TOLERANCE: f64 = 1e-6;

    fn assert_near(actual: f64, expected: f64, what: &str) {
        assert!((actual - expected).abs() < TOLERANCE, "{what}: {actual} vs {expected}");
    }

    #[test]
    fn two_equal_species() {
        // p = 10/20 = 0.5 each.
        // H' = -(0.5 ln 0.5 + 0.5 ln 0.5) = -ln 0.5 = ln 2 = 0.693147...
        // J' = ln 2 / ln 2 = 1.
        // D = (10·9 + 10·9) / (20·19) = 180/380, so 1 - D = 200/380 = 0.526315...
        let d = diversity(&[10, 10]);
        assert_eq!((d.species, d.individuals), (2, 20));
        assert_near(d.shannon, std::f64::consts::LN_2, "shannon");
        assert_near(d.simpson, 0.526_315, "simpson");
        assert_eq!(d.evenness, Some(1.0));
    }

    #[test]
    fn three_uneven_species() {
        // p = 5/10, 3/10, 2/10 = 0.5, 0.3, 0.2.
        // -p ln p: 0.5 · 0.693147 = 0.346574; 0.3 · 1.203973 = 0.361192; 0.2 · 1.609438 = 0.321888.
        // H' = 0.346574 + 0.361192 + 0.321888 = 1.029653...
        // D = (5·4 + 3·2 + 2·1) / (10·9) = (20 + 6 + 2) / 90 = 28/90, so 1 - D = 62/90 = 0.688888...
        // J' = 1.029653 / ln 3 = 1.029653 / 1.098612 = 0.937231...
        let d = diversity(&[5, 3, 2]);
        assert_eq!((d.species, d.individuals), (3, 10));
        assert_near(d.shannon, 1.029_653, "shannon");
        assert_near(d.simpson, 0.688_888, "simpson");
        assert_near(d.evenness.unwrap_or(f64::NAN), 0.937_231, "evenness");
    }

    #[test]
    fn one_detection_per_species_is_fully_diverse() {
        // D = (1·0 + 1·0 + 1·0) / (3·2) = 0, so 1 - D = 1: any two detections differ.
        // H' = 3 · (1/3) ln 3 = ln 3 = 1.098612..., so J' = ln 3 / ln 3 = 1.
        let d = diversity(&[1, 1, 1]);
        assert_eq!(d.simpson, 1.0);
        assert_near(d.shannon, 1.098_612, "shannon");
        assert_near(d.evenness.unwrap_or(f64::NAN), 1.0, "evenness");
        // Five equal species: ln 5 / ln 5 = 1, which rounds to 1.0000000000000002 unless clamped.
        for equal in [[1; 5], [3; 5]] {
            let j = diversity(&equal).evenness.unwrap_or(f64::NAN);
            assert!(j <= 1.0, "{equal:?}: {j}");
            assert_near(j, 1.0, "evenness");
        }
    }

    #[test]
    fn a_single_species_has_no_diversity() {
        // p = 1: H' = -1 · ln 1 = 0; D = 7·6 / (7·6) = 1, so 1 - D = 0; J' needs S >= 2.
        let d = diversity(&[7]);
        assert_eq!(d, Diversity { species: 1, individuals: 7, shannon: 0.0, simpson: 0.0, evenness: None });
        assert!(d.shannon.is_sign_positive(), "no -0.0 in the JSON");
        // N = 1: N(N-1) = 0, Simpson is defined as 0.
        assert_eq!(diversity(&[1]).simpson, 0.0);
    }

    #[test]
    fn no_detections_is_all_zero() {
        let zero = Diversity { species: 0, individuals: 0, shannon: 0.0, simpson: 0.0, evenness: None };
        assert_eq!(diversity(&[]), zero);
        assert_eq!(diversity(&[0, 0]), zero);
    }

    #[test]
    fn zero_counts_are_ignored() {
        assert_eq!(diversity(&[4, 0, 4]), diversity(&[4, 4]));
        assert_eq!(diversity(&[0, 5, 3, 0, 2]), diversity(&[5, 3, 2]));
    }

    #[test]
    fn huge_counts_do_not_overflow() {
        let d = diversity(&[u64::MAX, u64::MAX]);
        assert_eq!((d.species, d.individuals), (2, u64::MAX));
        assert_near(d.simpson, 0.5, "simpson");
        assert_eq!(d.evenness, Some(1.0));
    }

    #[test]
    fn overlap_of_two_sets() {
        // A ∩ B = {b, c}, A ∪ B = {a, b, c, d}: J = 2/4 = 0.5.
        let o = overlap(["c", "a", "b"], ["d", "b", "c"]);
        assert_eq!(o.shared, ["b", "c"]);
        assert_eq!(o.only_a, ["a"]);
        assert_eq!(o.only_b, ["d"]);
        assert_near(o.jaccard.unwrap_or(f64::NAN), 0.5, "jaccard");
    }

    #[test]
    fn overlap_edge_cases() {
        let empty = overlap([], []);
        assert_eq!(empty, Overlap { shared: vec![], only_a: vec![], only_b: vec![], jaccard: None });
        assert_eq!(overlap(["b", "a"], ["a", "b"]).jaccard, Some(1.0));
        // One side empty: 0/2 = 0, defined.
        assert_eq!(overlap(["a", "b"], []).jaccard, Some(0.0));
        // Repeats count once: {a, c} vs {a}, J = 1/2.
        let repeated = overlap(["c", "a", "c"], ["a", "a"]);
        assert_eq!((repeated.shared, repeated.only_a), (vec!["a".to_string()], vec!["c".to_string()]));
        assert_eq!(repeated.jaccard, Some(0.5));
    }

    #[test]
    fn pairwise_jaccard_covers_each_pair_once() {
        let set = |codes: &[&str]| codes.iter().map(|code| code.to_string()).collect::<Vec<_>>();
        let sets = [set(&["a", "b", "c"]), set(&["b", "c", "d"]), set(&["a"]), set(&[])];
        // 0-1: 2/4; 0-2: {a} / {a, b, c} = 1/3; 0-3: 0/3; 1-2: 0/4; 1-3: 0/3; 2-3: 0/1.
        let expected = [(0, 1, 0.5), (0, 2, 1.0 / 3.0), (0, 3, 0.0), (1, 2, 0.0), (1, 3, 0.0), (2, 3, 0.0)];
        let pairs = pairwise_jaccard(&sets);
        assert_eq!(pairs.len(), 4 * 3 / 2);
        for ((i, j, actual), (ei, ej, e)) in pairs.into_iter().zip(expected) {
            assert_eq!((i, j), (ei, ej));
            assert_near(actual.unwrap_or(f64::NAN), e, "jaccard");
        }
        assert_eq!(pairwise_jaccard(&[set(&[]), set(&[])]), [(0, 1, None)]);
        assert!(pairwise_jaccard(&[set(&["a"])]).is_empty());
        assert!(pairwise_jaccard(&[]).is_empty());
    }

    #[test]
    fn results_serialise_in_camel_case() -> Result<(), serde_json::Error> {
        let d = serde_json::to_value(diversity(&[7]))?;
        assert_eq!(
            d,
            serde_json::json!({"species": 1, "individuals": 7, "shannon": 0.0, "simpson": 0.0, "evenness": null})
        );
        let o = serde_json::to_value(overlap(["a"], ["b"]))?;
        assert_eq!(o, serde_json::json!({"shared": [], "onlyA": ["a"], "onlyB": ["b"], "jaccard": 0.0}));
        Ok(())
    }

    fn species_set() -> impl Strategy<Value = Vec<String>> {
        prop::collection::vec("[a-f]", 0..8)
    }

    proptest! {
        #[test]
        fn indices_stay_in_range(counts in prop::collection::vec(0u64..1_000, 1..30)) {
            let d = diversity(&counts);
            prop_assert!((0.0..=1.0).contains(&d.simpson), "{:?}", d);
            prop_assert!(d.shannon >= 0.0, "{:?}", d);
            if let Some(j) = d.evenness {
                prop_assert!((0.0..=1.0 + 1e-9).contains(&j), "{:?}", d);
            }
        }

        #[test]
        fn jaccard_is_symmetric_and_in_range(a in species_set(), b in species_set()) {
            let ab = overlap(a.iter().map(String::as_str), b.iter().map(String::as_str));
            let ba = overlap(b.iter().map(String::as_str), a.iter().map(String::as_str));
            prop_assert_eq!(ab.jaccard, ba.jaccard);
            prop_assert_eq!(&ab.shared, &ba.shared);
            prop_assert_eq!(&ab.only_a, &ba.only_b);
            if let Some(j) = ab.jaccard {
                prop_assert!((0.0..=1.0).contains(&j));
            }
            prop_assert_eq!(pairwise_jaccard(&[a, b]), vec![(0, 1, ab.jaccard)]);
        }
    }
}
