//! The integer-millisecond arithmetic every policy is built from.
//!
//! These are the only two formulas with rounding in them; the policies only
//! combine them with saturating integer `min`, `+` and `*`. See the module
//! docs of [`crate::backoff`] for the full specification.

use std::time::Duration;

use crate::rng::{clamp_unit, RandomSource};

/// `C(n) = min(cap, base × 2^n)` in whole milliseconds, saturating.
///
/// `2^n` is taken as `u64::MAX` for `n >= 63` (and the product saturates at
/// `u64::MAX`), so any attempt counter, up to `u32::MAX`, gives `cap` for a
/// non-zero `base` instead of overflowing.
pub fn capped_exponential_ms(base_ms: u64, cap_ms: u64, n: u32) -> u64 {
    let factor = if n >= 63 { u64::MAX } else { 1u64 << n };
    base_ms.saturating_mul(factor).min(cap_ms)
}

/// `jit(lo, hi) = lo + floor(u × (hi − lo))`: a whole number of milliseconds
/// in `[lo, hi)`, or exactly `lo` when `hi <= lo`.
///
/// The multiply and the floor are done in `f64` (the span converted from
/// `u64` first), the addition in integers, so a port doing the same `f64`
/// operations gets the same result for spans below 2^53 ms. `u` is clamped
/// into `[0, 1)` first (NaN becomes 0). For spans of 2^53 ms and more, where
/// `f64` rounding could reach `hi`, the offset is clamped to `hi − lo − 1`
/// so the result stays below `hi`.
pub fn jitter_ms(lo_ms: u64, hi_ms: u64, u: f64) -> u64 {
    if hi_ms <= lo_ms {
        return lo_ms;
    }
    let span = hi_ms - lo_ms;
    // `as` from f64 saturates, so this cannot wrap.
    let offset = (clamp_unit(u) * span as f64).floor() as u64;
    lo_ms.saturating_add(offset.min(span - 1))
}

/// Take exactly one draw from `rng` and apply [`jitter_ms`], even when the
/// interval is empty, so the number of draws per call never depends on the
/// values involved.
pub(crate) fn draw_jitter_ms(lo_ms: u64, hi_ms: u64, rng: &mut dyn RandomSource) -> u64 {
    let u = rng.next_unit();
    jitter_ms(lo_ms, hi_ms, u)
}

/// A duration truncated to whole milliseconds, saturating at `u64::MAX`.
pub(crate) fn whole_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::RecordedDraws;

    #[test]
    fn capped_exponential_doubles_until_the_cap() {
        let got: Vec<u64> = (0..7)
            .map(|n| capped_exponential_ms(1000, 30_000, n))
            .collect();
        assert_eq!(got, [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
    }

    #[test]
    fn capped_exponential_saturates_for_huge_exponents() {
        assert_eq!(capped_exponential_ms(1, u64::MAX, 62), 1 << 62);
        for n in [63, 64, 1000, u32::MAX] {
            assert_eq!(capped_exponential_ms(1, u64::MAX, n), u64::MAX, "n = {n}");
            assert_eq!(capped_exponential_ms(1000, 30_000, n), 30_000, "n = {n}");
            assert_eq!(capped_exponential_ms(0, 30_000, n), 0, "n = {n}");
        }
    }

    #[test]
    fn jitter_floors_the_scaled_span() {
        assert_eq!(jitter_ms(0, 1000, 0.0), 0);
        assert_eq!(jitter_ms(0, 1000, 0.5), 500);
        assert_eq!(jitter_ms(250, 500, 0.999_999), 499);
        assert_eq!(jitter_ms(1000, 3000, 0.3), 1600);
    }

    #[test]
    fn jitter_of_an_empty_interval_is_its_lower_end() {
        assert_eq!(jitter_ms(700, 700, 0.9), 700);
        assert_eq!(jitter_ms(700, 100, 0.9), 700);
    }

    #[test]
    fn jitter_stays_below_the_upper_end_for_any_draw() {
        for u in [f64::NAN, -1.0, 0.999_999_999_999, 1.0, 7.0, f64::INFINITY] {
            assert!(jitter_ms(10, 20, u) < 20, "u = {u}");
            assert!(jitter_ms(0, u64::MAX, u) < u64::MAX, "u = {u}");
        }
    }

    #[test]
    fn drawing_jitter_takes_one_draw_even_for_an_empty_interval() {
        let mut rng = RecordedDraws::new(vec![0.5]);
        assert_eq!(draw_jitter_ms(5, 5, &mut rng), 5);
        assert_eq!(rng.taken(), 1);
    }

    #[test]
    fn whole_ms_truncates_and_saturates() {
        assert_eq!(whole_ms(Duration::from_micros(1999)), 1);
        assert_eq!(whole_ms(Duration::MAX), u64::MAX);
    }
}
