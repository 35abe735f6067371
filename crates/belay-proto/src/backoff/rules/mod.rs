//! The delay rule of each policy, and the little state some of them keep.

use std::time::Duration;

use super::formula::{capped_exponential_ms, draw_jitter_ms, whole_ms};
use super::pacing::PacingSlots;
use super::policy::BackoffPolicy;
use crate::rng::{clamp_unit, RandomSource};
use crate::time::Instant;

mod server_paced;

pub use server_paced::Loss;

/// What a policy remembers between delays. `None` everywhere means "just
/// reset", so a reset is `PolicyState::default()`, and each field is only
/// used by the policies named on it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PolicyState {
    /// `Decorrelated*`: the previous delay; `None` stands for `base`.
    prev_ms: Option<u64>,
    /// `LinearRandomStart`: the start drawn after the last reset.
    start_ms: Option<u64>,
    /// `Grpc`: the un-jittered current delay; `None` stands for `initial`.
    current_ms: Option<u64>,
    /// `ServerPaced`: the fallback policy's own state.
    fallback: Option<Box<PolicyState>>,
    /// `ServerPaced`: the loss was noticed on a beat of this interval that
    /// spreads the fleet; later attempts come one period (or one beat, if
    /// longer) apart.
    on_beat: Option<Duration>,
}

impl PolicyState {
    /// The delay for attempt `n` (delays handed out since the reset) under
    /// `policy`, updating the state.
    pub(crate) fn next_delay(
        &mut self,
        policy: &BackoffPolicy,
        n: u32,
        now: Instant,
        slots: Option<&PacingSlots>,
        loss: Loss,
        rng: &mut dyn RandomSource,
    ) -> Duration {
        let ms = match policy {
            BackoffPolicy::Fixed { delay } => whole_ms(*delay),
            BackoffPolicy::Exponential { base, cap } => {
                capped_exponential_ms(whole_ms(*base), whole_ms(*cap), n)
            }
            BackoffPolicy::FullJitter { base, cap } => {
                let c = capped_exponential_ms(whole_ms(*base), whole_ms(*cap), n);
                draw_jitter_ms(0, c, rng)
            }
            BackoffPolicy::EqualJitter { base, cap } => {
                let c = capped_exponential_ms(whole_ms(*base), whole_ms(*cap), n);
                draw_jitter_ms(c / 2, c, rng)
            }
            BackoffPolicy::Decorrelated { base, cap } => {
                let base = whole_ms(*base);
                let prev = self.prev_ms.unwrap_or(base);
                let d = draw_jitter_ms(base, prev.saturating_mul(3), rng).min(whole_ms(*cap));
                *self.prev_ms.insert(d)
            }
            BackoffPolicy::DecorrelatedCapped { base, cap } => {
                let base = whole_ms(*base);
                let prev = self.prev_ms.unwrap_or(base);
                let hi = prev.saturating_mul(3).min(whole_ms(*cap));
                *self.prev_ms.insert(draw_jitter_ms(base, hi, rng))
            }
            BackoffPolicy::LinearRandomStart {
                start_window,
                step,
                cap,
            } => {
                let start = match self.start_ms {
                    Some(start) => start,
                    None => *self
                        .start_ms
                        .insert(draw_jitter_ms(0, whole_ms(*start_window), rng)),
                };
                let climbed = whole_ms(*step).saturating_mul(u64::from(n));
                start.saturating_add(climbed).min(whole_ms(*cap))
            }
            BackoffPolicy::Grpc {
                initial,
                multiplier,
                jitter,
                max,
            } => {
                let current = self.current_ms.unwrap_or_else(|| whole_ms(*initial));
                let u = clamp_unit(rng.next_unit());
                // `as` from f64 saturates and maps NaN to 0: max(0, …) for free.
                let d = (current as f64 * (1.0 + jitter * (2.0 * u - 1.0))).floor() as u64;
                let grown = (current as f64 * multiplier).floor() as u64;
                self.current_ms = Some(grown.min(whole_ms(*max)));
                d
            }
            BackoffPolicy::ServerPaced {
                first_window,
                fallback,
            } => {
                return self.server_paced_delay(*first_window, fallback, n, now, slots, loss, rng);
            }
        };
        Duration::from_millis(ms)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Backoff;
    use super::*;
    use crate::rng::{RecordedDraws, SplitMix64};

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    /// The first `count` delays, in ms, at `now = 0` with the given draws
    /// (the last one repeats).
    fn delays(policy: BackoffPolicy, draws: &[f64], count: usize) -> Vec<u64> {
        let mut backoff = Backoff::new(policy);
        let mut rng = RecordedDraws::new(draws.to_vec());
        (0..count)
            .map(|_| whole_ms(backoff.next_delay(Instant::ZERO, &mut rng)))
            .collect()
    }

    /// The number of draws each of the first `count` delays takes.
    fn draws_per_call(
        policy: BackoffPolicy,
        slots: Option<PacingSlots>,
        count: usize,
    ) -> Vec<usize> {
        let mut backoff = Backoff::new(policy);
        backoff.set_slots(slots);
        let mut rng = RecordedDraws::new(vec![0.5]);
        (0..count)
            .map(|_| {
                let before = rng.taken();
                backoff.next_delay(Instant::ZERO, &mut rng);
                rng.taken() - before
            })
            .collect()
    }

    #[test]
    fn fixed_repeats_its_delay() {
        assert_eq!(
            delays(BackoffPolicy::fixed(s(1)), &[0.7], 3),
            [1000, 1000, 1000]
        );
    }

    #[test]
    fn exponential_doubles_to_the_cap() {
        let got = delays(BackoffPolicy::exponential(s(1), s(30)), &[], 7);
        assert_eq!(got, [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
    }

    #[test]
    fn full_jitter_scales_the_capped_exponential() {
        let got = delays(BackoffPolicy::full_jitter(s(1), s(30)), &[0.5], 7);
        assert_eq!(got, [500, 1000, 2000, 4000, 8000, 15_000, 15_000]);
    }

    #[test]
    fn equal_jitter_with_draw_zero_gives_the_lower_halves() {
        let got = delays(BackoffPolicy::equal_jitter(ms(500), s(30)), &[0.0], 8);
        assert_eq!(got, [250, 500, 1000, 2000, 4000, 8000, 15_000, 15_000]);
    }

    #[test]
    fn equal_jitter_with_draw_near_one_stays_below_each_cap() {
        let got = delays(BackoffPolicy::equal_jitter(ms(500), s(30)), &[0.999_999], 8);
        assert_eq!(got, [499, 999, 1999, 3999, 7999, 15_999, 29_999, 29_999]);
    }

    #[test]
    fn full_jitter_survives_the_cap() {
        let policy = BackoffPolicy::full_jitter(s(1), s(30));
        let low = delays(policy.clone(), &[0.1], 21)[20];
        let high = delays(policy, &[0.9], 21)[20];
        assert_eq!((low, high), (3000, 27_000));
    }

    #[test]
    fn equal_jitter_survives_the_cap() {
        let policy = BackoffPolicy::equal_jitter(ms(500), s(30));
        let low = delays(policy.clone(), &[0.1], 21)[20];
        let high = delays(policy, &[0.9], 21)[20];
        assert_eq!((low, high), (16_500, 28_500));
    }

    #[test]
    fn decorrelated_grows_by_up_to_three_times_the_previous_delay() {
        // prev 1000 → 1000 + floor(0.5 × 2000) = 2000 → 1000 + floor(0.5 × 5000) …
        let got = delays(BackoffPolicy::decorrelated(s(1), s(30)), &[0.5], 6);
        assert_eq!(got, [2000, 3500, 5750, 9125, 14_187, 21_780]);
    }

    #[test]
    fn decorrelated_collapses_onto_the_cap() {
        // 1000 + floor(0.5 × 64 340) = 33 170 is clipped to 30 000, after which
        // jit(1000, 90 000) is above the cap for any draw above 1/3.
        let got = delays(BackoffPolicy::decorrelated(s(1), s(30)), &[0.5], 10);
        assert_eq!(got[6..], [30_000, 30_000, 30_000, 30_000]);
    }

    #[test]
    fn decorrelated_returns_exactly_the_cap_for_a_third_of_delays() {
        let mut backoff = Backoff::new(BackoffPolicy::decorrelated(s(1), s(30)));
        let mut rng = SplitMix64::new(42);
        let sample: Vec<Duration> = (0..1100)
            .map(|_| backoff.next_delay(Instant::ZERO, &mut rng))
            .skip(100)
            .collect();
        let at_cap = sample.iter().filter(|&&d| d == s(30)).count();
        // After a delay at the cap the next one is clipped with probability
        // 60 000 / 89 000; in steady state about a third sit exactly on it.
        assert!(at_cap > 300, "{at_cap} of 1000 at the cap");
    }

    #[test]
    fn decorrelated_capped_keeps_its_jitter_at_the_cap() {
        // Same draws as the collapse test: from 14 187 on the interval is
        // [1000, 30 000), so the draw 0.5 keeps giving 15 500.
        let got = delays(BackoffPolicy::decorrelated_capped(s(1), s(30)), &[0.5], 9);
        assert_eq!(
            got,
            [2000, 3500, 5750, 9125, 14_187, 15_500, 15_500, 15_500, 15_500]
        );
    }

    #[test]
    fn decorrelated_capped_stays_spread_over_base_to_cap() {
        let mut backoff = Backoff::new(BackoffPolicy::decorrelated_capped(s(1), s(30)));
        let mut rng = SplitMix64::new(42);
        let sample: Vec<u64> = (0..1100)
            .map(|_| whole_ms(backoff.next_delay(Instant::ZERO, &mut rng)))
            .skip(100)
            .collect();
        let (min, max) = (sample.iter().min().unwrap(), sample.iter().max().unwrap());
        let at_max = sample.iter().filter(|&d| d == max).count();
        assert!(at_max < 50, "{at_max} of 1000 equal to the max {max}");
        assert!(*max < 30_000);
        assert!(*min < 2000 && *max > 28_000, "spread {min}..{max}");
    }

    #[test]
    fn linear_random_start_steps_from_the_drawn_start() {
        let got = delays(
            BackoffPolicy::linear_random_start(s(1), s(1), s(30)),
            &[0.25],
            4,
        );
        assert_eq!(got, [250, 1250, 2250, 3250]);
    }

    #[test]
    fn linear_random_start_reaches_the_cap() {
        let got = delays(
            BackoffPolicy::linear_random_start(s(1), s(1), s(30)),
            &[0.25],
            32,
        );
        assert_eq!(got[29..], [29_250, 30_000, 30_000]);
    }

    #[test]
    fn grpc_without_jitter_multiplies_by_one_point_six_up_to_max() {
        // A draw of 0.5 makes the jitter factor exactly 1.
        let got = delays(BackoffPolicy::grpc(), &[0.5], 13);
        assert_eq!(
            got,
            [
                1000, 1600, 2560, 4096, 6553, 10_484, 16_774, 26_838, 42_940, 68_704, 109_926,
                120_000, 120_000
            ]
        );
    }

    #[test]
    fn grpc_jitters_by_twenty_percent_either_way() {
        assert_eq!(delays(BackoffPolicy::grpc(), &[0.0], 2), [800, 1280]);
        assert_eq!(delays(BackoffPolicy::grpc(), &[0.999_999], 2), [1199, 1919]);
    }

    #[test]
    fn grpc_jitter_can_exceed_max() {
        let got = delays(BackoffPolicy::grpc(), &[0.999_999], 20);
        assert_eq!(got[19], 143_999);
    }

    #[test]
    fn server_paced_first_delay_is_within_the_first_window() {
        assert_eq!(delays(BackoffPolicy::default(), &[0.0], 1), [0]);
        assert_eq!(delays(BackoffPolicy::default(), &[0.999_999], 1), [999]);
    }

    #[test]
    fn server_paced_without_slots_uses_the_fallback_from_its_first_attempt() {
        // Fallback equal jitter 1–30 s with draw 0: 500, 1000, 2000, …
        let got = delays(BackoffPolicy::default(), &[0.0], 4);
        assert_eq!(got, [0, 500, 1000, 2000]);
    }

    #[test]
    fn server_paced_without_fast_path_shares_the_attempt_numbering() {
        let policy =
            BackoffPolicy::server_paced(Duration::ZERO, BackoffPolicy::exponential(s(1), s(30)));
        assert_eq!(delays(policy, &[], 3), [1000, 2000, 4000]);
    }

    #[test]
    fn server_paced_later_delays_land_on_slot_instants() {
        let mut backoff = Backoff::new(BackoffPolicy::default());
        backoff.set_slots(Some(PacingSlots::new(
            s(20),
            s(3),
            Instant::from_millis(100_000),
        )));
        let mut rng = RecordedDraws::new(vec![0.5]);
        assert_eq!(
            backoff.next_delay(Instant::from_millis(150_000), &mut rng),
            ms(500)
        );
        assert_eq!(
            backoff.next_delay(Instant::from_millis(150_000), &mut rng),
            s(13)
        );
        assert_eq!(
            backoff.next_delay(Instant::from_millis(163_000), &mut rng),
            s(20)
        );
        let odd = Instant::from_micros(170_000_250);
        assert_eq!(
            odd + backoff.next_delay(odd, &mut rng),
            Instant::from_millis(183_000)
        );
    }

    #[test]
    fn fixed_and_exponential_take_no_draws() {
        assert_eq!(
            draws_per_call(BackoffPolicy::fixed(s(1)), None, 3),
            [0, 0, 0]
        );
        assert_eq!(
            draws_per_call(BackoffPolicy::exponential(s(1), s(30)), None, 3),
            [0, 0, 0]
        );
    }

    #[test]
    fn jittered_policies_take_one_draw_per_delay() {
        for policy in [
            BackoffPolicy::full_jitter(s(1), s(30)),
            BackoffPolicy::equal_jitter(ms(500), s(30)),
            BackoffPolicy::decorrelated(s(1), s(30)),
            BackoffPolicy::decorrelated_capped(s(1), s(30)),
            BackoffPolicy::grpc(),
        ] {
            assert_eq!(
                draws_per_call(policy.clone(), None, 40),
                [1; 40],
                "{policy:?}"
            );
        }
    }

    #[test]
    fn empty_jitter_intervals_still_take_their_draw() {
        let policy = BackoffPolicy::full_jitter(Duration::ZERO, Duration::ZERO);
        assert_eq!(draws_per_call(policy, None, 2), [1, 1]);
        let policy = BackoffPolicy::linear_random_start(Duration::ZERO, s(1), s(30));
        assert_eq!(draws_per_call(policy, None, 2), [1, 0]);
    }

    #[test]
    fn linear_random_start_draws_only_after_a_reset() {
        let policy = BackoffPolicy::linear_random_start(s(1), s(1), s(30));
        assert_eq!(draws_per_call(policy, None, 4), [1, 0, 0, 0]);
    }

    #[test]
    fn server_paced_with_slots_draws_for_the_fast_path_and_its_fallback() {
        let slots = PacingSlots::new(s(20), s(3), Instant::ZERO);
        assert_eq!(
            draws_per_call(BackoffPolicy::default(), Some(slots), 3),
            [1, 1, 1]
        );
        let fixed = BackoffPolicy::server_paced(s(1), BackoffPolicy::fixed(s(5)));
        assert_eq!(draws_per_call(fixed, Some(slots), 3), [1, 0, 0]);
    }

    #[test]
    fn server_paced_without_slots_draws_as_its_fallback_does() {
        assert_eq!(draws_per_call(BackoffPolicy::default(), None, 3), [1, 1, 1]);
        let quiet = BackoffPolicy::server_paced(s(1), BackoffPolicy::fixed(s(5)));
        assert_eq!(draws_per_call(quiet, None, 3), [1, 0, 0]);
    }

    #[test]
    fn extreme_parameters_never_panic() {
        let max = Duration::MAX;
        let policies = [
            BackoffPolicy::fixed(max),
            BackoffPolicy::exponential(max, max),
            BackoffPolicy::full_jitter(max, max),
            BackoffPolicy::equal_jitter(max, max),
            BackoffPolicy::decorrelated(max, max),
            BackoffPolicy::decorrelated_capped(max, max),
            BackoffPolicy::linear_random_start(max, max, max),
            BackoffPolicy::grpc_with(max, f64::MAX, f64::MAX, max),
            BackoffPolicy::grpc_with(max, f64::NAN, f64::NAN, max),
            BackoffPolicy::grpc_with(max, -1.0, -5.0, max),
            BackoffPolicy::server_paced(
                max,
                BackoffPolicy::grpc_with(max, f64::INFINITY, 1.0, max),
            ),
        ];
        for policy in policies {
            let mut backoff = Backoff::new(policy.clone());
            backoff.set_slots(Some(PacingSlots::new(max, max, Instant::MAX)));
            let mut rng = SplitMix64::new(3);
            for now in [Instant::ZERO, Instant::MAX, Instant::ZERO, Instant::MAX] {
                let delay = backoff.next_delay(now, &mut rng);
                assert!(delay <= backoff.max_delay(), "{policy:?}: {delay:?}");
            }
        }
    }
}
