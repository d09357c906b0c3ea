//! `(x)^e` over a slice of non-negative values, without `powf`: `2^(e·log2 x)` from a short
//! series each way, written so the compiler can vectorise the loop (no calls, no branches).
//! Relative error under 1e-6 for normal inputs; zeros and subnormals give 0.

/// 2 / ln 2: turns the atanh series into log2.
const TWO_OVER_LN2: f32 = 2.0 / std::f32::consts::LN_2;
const LN2: f32 = std::f32::consts::LN_2;
/// Adding and subtracting 1.5 * 2^23 rounds an f32 of magnitude below 2^22 to an integer.
const ROUNDER: f32 = 12_582_912.0;

/// Replaces every `x` in `values` by `x^exponent` (`x >= 0`).
#[inline(always)]
pub fn pow_in_place(values: &mut [f32], exponent: f32) {
    for v in values.iter_mut() {
        *v = pow1(*v, exponent);
    }
}

#[inline(always)]
fn pow1(x: f32, exponent: f32) -> f32 {
    // log2(x): split x = 2^k * m with m in [sqrt(1/2), sqrt(2)), then
    // ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172.
    let bits = x.to_bits();
    let k = (bits.wrapping_sub(0x3f35_04f3) as i32) >> 23;
    let m = f32::from_bits(bits.wrapping_sub((k as u32) << 23));
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let series = s * (1.0 + s2 * (1.0 / 3.0 + s2 * (1.0 / 5.0 + s2 * (1.0 / 7.0 + s2 * (1.0 / 9.0)))));
    let log2 = k as f32 + TWO_OVER_LN2 * series;
    // 2^z: z = n + f with n an integer and |f| <= 1/2; 2^f = e^(f ln 2) by its Taylor series.
    // Adding ROUNDER leaves n in the low bits of the sum's mantissa; shifting it (+ the bias)
    // into the exponent field gives 2^n. Integer operations only, so the loop vectorises.
    let z = exponent * log2;
    let z = z.clamp(-126.0, 126.0);
    let rounded = z + ROUNDER;
    let n = rounded - ROUNDER;
    let t = (z - n) * LN2;
    let p = 1.0
        + t * (1.0
            + t * (1.0 / 2.0
                + t * (1.0 / 6.0 + t * (1.0 / 24.0 + t * (1.0 / 120.0 + t * (1.0 / 720.0 + t * (1.0 / 5040.0)))))));
    let scale = f32::from_bits((rounded.to_bits().wrapping_sub(ROUNDER.to_bits()).wrapping_add(127)) << 23);
    if x >= f32::MIN_POSITIVE { p * scale } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_powf_over_the_spectrogram_range() {
        let mut worst = 0.0f32;
        for exponent in [0.190_527_3f32, 0.229_524_1, 0.5] {
            let mut x = 1e-30f32;
            while x < 1e12 {
                let got = pow1(x, exponent);
                let want = (x as f64).powf(exponent as f64) as f32;
                worst = worst.max(((got - want) / want).abs());
                x *= 1.013;
            }
        }
        assert!(worst < 2e-6, "relative error {worst}");
    }

    #[test]
    fn zero_and_subnormals_give_zero() {
        let mut v = [0.0, 1e-40, f32::MIN_POSITIVE / 2.0, 1.0];
        pow_in_place(&mut v, 0.23);
        assert_eq!(v, [0.0, 0.0, 0.0, 1.0]);
    }
}
