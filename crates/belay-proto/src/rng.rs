//! Seeded randomness.
//!
//! The core never touches a global random source. Every random choice (backoff
//! jitter, the delay after the network comes back) draws a uniform number in
//! `[0, 1)` from a [`RandomSource`] the session owns, seeded by the driver.
//!
//! The default source is [SplitMix64], specified exactly here so that the
//! TypeScript client and the conformance vectors reproduce the same draws
//! for the same seed:
//!
//! ```text
//! state = state + 0x9E3779B97F4A7C15            (wrapping, 64-bit)
//! z = state
//! z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9      (wrapping)
//! z = (z ^ (z >> 27)) * 0x94D049BB133111EB      (wrapping)
//! z = z ^ (z >> 31)
//! draw = (z >> 11) * 2^-53                      (53 bits, in [0, 1))
//! ```
//!
//! [SplitMix64]: https://prng.di.unimi.it/splitmix64.c

/// A source of uniform draws in `[0, 1)`.
pub trait RandomSource {
    /// The next draw, uniform in `[0, 1)`.
    fn next_unit(&mut self) -> f64;
}

/// SplitMix64: tiny, fast, and trivially portable to other languages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub const fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next raw 64-bit output.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl RandomSource for SplitMix64 {
    fn next_unit(&mut self) -> f64 {
        // 53 significant bits: every value is exactly representable and < 1.
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Replays recorded draws, then repeats the last one (or 0 if none were given).
///
/// Used by the conformance vectors: a backoff sequence is specified as
/// "these draws in, these delays out", independent of any generator.
#[derive(Debug, Clone, Default)]
pub struct RecordedDraws {
    draws: Vec<f64>,
    next: usize,
}

impl RecordedDraws {
    /// Replay `draws` in order. Values outside `[0, 1)` are clamped into it.
    pub fn new(draws: Vec<f64>) -> Self {
        RecordedDraws { draws, next: 0 }
    }

    /// How many draws have been taken so far.
    pub fn taken(&self) -> usize {
        self.next
    }
}

impl RandomSource for RecordedDraws {
    fn next_unit(&mut self) -> f64 {
        let value = self
            .draws
            .get(self.next)
            .or(self.draws.last())
            .copied()
            .unwrap_or(0.0);
        self.next = self.next.saturating_add(1);
        clamp_unit(value)
    }
}

/// Clamp a draw into `[0, 1)`; NaN becomes 0.
pub(crate) fn clamp_unit(value: f64) -> f64 {
    if (0.0..1.0).contains(&value) {
        value
    } else if value >= 1.0 {
        1.0 - f64::EPSILON / 2.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_the_reference_outputs() {
        // Reference values of splitmix64.c seeded with 1234567.
        let mut rng = SplitMix64::new(1234567);
        assert_eq!(rng.next_u64(), 6457827717110365317);
        assert_eq!(rng.next_u64(), 3203168211198807973);
        assert_eq!(rng.next_u64(), 9817491932198370423);
    }

    #[test]
    fn draws_stay_in_the_unit_interval() {
        let mut rng = SplitMix64::new(7);
        for _ in 0..10_000 {
            let d = rng.next_unit();
            assert!((0.0..1.0).contains(&d));
        }
    }

    #[test]
    fn recorded_draws_replay_then_repeat_and_clamp() {
        let mut draws = RecordedDraws::new(vec![0.25, 2.0, -1.0]);
        assert_eq!(draws.next_unit(), 0.25);
        assert!(draws.next_unit() < 1.0);
        assert_eq!(draws.next_unit(), 0.0);
        assert_eq!(draws.next_unit(), 0.0);
        assert_eq!(draws.taken(), 4);
        assert_eq!(RecordedDraws::default().next_unit(), 0.0);
    }
}
