//! The per-session backoff state machine.

use std::time::Duration;

use super::formula::{draw_jitter_ms, whole_ms};
use super::pacing::{PacingSlots, RetryWindow, MAX_HINT_DELAY};
use super::policy::BackoffPolicy;
pub use super::rules::Loss;
use super::rules::PolicyState;
use crate::rng::RandomSource;
use crate::time::Instant;

/// One session's reconnect backoff: a [`BackoffPolicy`] plus what it has
/// handed out since the last [`reset`](Self::reset), the server's pacing
/// slots and any pending retry advice.
///
/// It never reads a clock or a global random source: `now` and the
/// [`RandomSource`] are passed to [`next_delay`](Self::next_delay), so two
/// `Backoff`s fed the same times and draws produce the same delays.
#[derive(Clone, Debug)]
pub struct Backoff {
    policy: BackoffPolicy,
    state: PolicyState,
    attempt: u32,
    slots: Option<PacingSlots>,
    advice: Option<RetryWindow>,
}

impl Backoff {
    /// A fresh backoff following `policy`, with no slots and no advice.
    pub fn new(policy: BackoffPolicy) -> Self {
        Backoff {
            policy,
            state: PolicyState::default(),
            attempt: 0,
            slots: None,
            advice: None,
        }
    }

    /// The delay before the next reconnect attempt, asked at `now`.
    ///
    /// Pending retry advice takes precedence over any policy and is consumed:
    /// the delay is `jit(earliest − now, latest − now)` (differences
    /// saturating at zero, truncated to whole ms; one draw). Otherwise the
    /// policy's rule applies. Either way the attempt counter goes up by one
    /// (saturating), so advice counts as an attempt of the policy's sequence.
    pub fn next_delay(&mut self, now: Instant, rng: &mut dyn RandomSource) -> Duration {
        self.next_delay_after(Loss::Noticed, now, rng)
    }

    /// The next delay after a loss of the given kind, at `now`: the same as
    /// [`next_delay`](Self::next_delay), except that after a
    /// [`Loss::Silent`] a server-paced policy skips its fast path while the
    /// server's slots are known (see [`Loss`]).
    pub fn next_delay_after(
        &mut self,
        loss: Loss,
        now: Instant,
        rng: &mut dyn RandomSource,
    ) -> Duration {
        let delay = match self.advice.take() {
            Some(window) => {
                let lo = whole_ms(window.earliest().saturating_duration_since(now));
                let hi = whole_ms(window.latest().saturating_duration_since(now));
                Duration::from_millis(draw_jitter_ms(lo, hi, rng))
            }
            None => {
                let slots = self.slots.as_ref();
                self.state
                    .next_delay(&self.policy, self.attempt, now, slots, loss, rng)
            }
        };
        self.attempt = self.attempt.saturating_add(1);
        delay
    }

    /// Delays handed out since the last reset (0 before the first).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Start over after a successful connection: clears the attempt counter
    /// and every policy's memory (previous delay, drawn start, gRPC current,
    /// the fallback's state).
    ///
    /// Pacing slots and pending advice are kept: they are facts the server
    /// stated, not escalation, and stay valid until the server replaces them.
    pub fn reset(&mut self) {
        self.attempt = 0;
        self.state = PolicyState::default();
    }

    /// The policy being followed.
    pub fn policy(&self) -> &BackoffPolicy {
        &self.policy
    }

    /// Install (or, with `None`, forget) the server's pacing slots. Only
    /// server-paced policies use them.
    pub fn set_slots(&mut self, slots: Option<PacingSlots>) {
        self.slots = slots;
    }

    /// The current pacing slots, if any.
    pub fn slots(&self) -> Option<&PacingSlots> {
        self.slots.as_ref()
    }

    /// Follow `window` for the next delay only, whatever the policy. A newer
    /// advice replaces a pending one.
    pub fn advise(&mut self, window: RetryWindow) {
        self.advice = Some(window);
    }

    /// The advice the next delay will follow, if any.
    pub fn pending_advice(&self) -> Option<&RetryWindow> {
        self.advice.as_ref()
    }

    /// The largest delay [`next_delay`](Self::next_delay) can return from
    /// now on: the policy's [`max_delay`](BackoffPolicy::max_delay), or
    /// [`MAX_HINT_DELAY`] if that is larger and advice is pending. This
    /// assumes `now` never decreases between `advise` and `next_delay` (the
    /// session clamps time to guarantee it).
    pub fn max_delay(&self) -> Duration {
        let policy = self.policy.max_delay();
        match self.advice {
            Some(_) => policy.max(MAX_HINT_DELAY),
            None => policy,
        }
    }
}

impl Default for Backoff {
    /// A backoff following Belay's default policy.
    fn default() -> Self {
        Backoff::new(BackoffPolicy::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{RecordedDraws, SplitMix64};

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    fn sequence(backoff: &mut Backoff, rng: &mut dyn RandomSource, count: usize) -> Vec<Duration> {
        (0..count)
            .map(|_| backoff.next_delay(Instant::ZERO, rng))
            .collect()
    }

    #[test]
    fn every_delay_counts_as_an_attempt() {
        let mut backoff = Backoff::default();
        let mut rng = RecordedDraws::default();
        assert_eq!(backoff.attempt(), 0);
        sequence(&mut backoff, &mut rng, 3);
        assert_eq!(backoff.attempt(), 3);
    }

    #[test]
    fn seventy_delays_stay_at_the_cap() {
        let mut backoff = Backoff::new(BackoffPolicy::exponential(s(1), s(30)));
        let got = sequence(&mut backoff, &mut RecordedDraws::default(), 70);
        assert_eq!(got[69], s(30));
        assert_eq!(backoff.attempt(), 70);
    }

    #[test]
    fn reset_restores_the_first_delay() {
        for policy in BackoffPolicy::all_reference() {
            let mut backoff = Backoff::new(policy.clone());
            let mut rng = RecordedDraws::new(vec![0.3]);
            let first = sequence(&mut backoff, &mut rng, 5);
            backoff.reset();
            assert_eq!(backoff.attempt(), 0);
            assert_eq!(sequence(&mut backoff, &mut rng, 5), first, "{policy:?}");
        }
    }

    #[test]
    fn reset_keeps_slots_and_advice() {
        let mut backoff = Backoff::default();
        let slots = PacingSlots::new(s(20), s(3), Instant::ZERO);
        let window = RetryWindow::from_advice(Instant::ZERO, s(1), s(2));
        backoff.set_slots(Some(slots));
        backoff.advise(window);
        backoff.reset();
        assert_eq!(backoff.slots(), Some(&slots));
        assert_eq!(backoff.pending_advice(), Some(&window));
    }

    #[test]
    fn same_seed_gives_the_same_sequence() {
        let run = |seed| {
            let mut backoff = Backoff::default();
            sequence(&mut backoff, &mut SplitMix64::new(seed), 100)
        };
        assert_eq!(run(7), run(7));
    }

    #[test]
    fn different_seeds_give_different_sequences() {
        let run = |seed| {
            let mut backoff = Backoff::default();
            sequence(&mut backoff, &mut SplitMix64::new(seed), 100)
        };
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn no_delay_exceeds_max_delay() {
        for policy in BackoffPolicy::all_reference() {
            let mut backoff = Backoff::new(policy.clone());
            let mut rng = SplitMix64::new(2024);
            let max = backoff.max_delay();
            for i in 0..10_000u64 {
                let delay = backoff.next_delay(Instant::from_millis(i * 997), &mut rng);
                assert!(delay <= max, "{policy:?}: {delay:?} > {max:?}");
            }
        }
    }

    #[test]
    fn slot_delays_never_exceed_max_delay() {
        let mut backoff = Backoff::default();
        backoff.set_slots(Some(PacingSlots::new(s(1000), s(7), Instant::ZERO)));
        let mut rng = SplitMix64::new(1);
        for i in 0..1000u64 {
            let delay = backoff.next_delay(Instant::from_millis(i * 12_345), &mut rng);
            assert!(delay <= backoff.max_delay());
        }
    }

    #[test]
    fn advice_overrides_the_policy_once() {
        let mut backoff = Backoff::new(BackoffPolicy::fixed(s(1)));
        let now = Instant::from_millis(10_000);
        backoff.advise(RetryWindow::from_advice(now, s(4), s(8)));
        let mut rng = RecordedDraws::new(vec![0.5]);
        assert_eq!(backoff.next_delay(now, &mut rng), s(6));
        assert_eq!(backoff.pending_advice(), None);
        assert_eq!(backoff.next_delay(now, &mut rng), s(1));
        assert_eq!(backoff.attempt(), 2);
    }

    #[test]
    fn advice_takes_one_draw_even_for_a_policy_without_draws() {
        let mut backoff = Backoff::new(BackoffPolicy::fixed(s(1)));
        backoff.advise(RetryWindow::from_advice(Instant::ZERO, s(3), s(3)));
        let mut rng = RecordedDraws::new(vec![0.5]);
        assert_eq!(backoff.next_delay(Instant::ZERO, &mut rng), s(3));
        assert_eq!(rng.taken(), 1);
    }

    #[test]
    fn advice_is_measured_from_the_time_of_asking() {
        let mut backoff = Backoff::default();
        backoff.advise(RetryWindow::from_advice(Instant::ZERO, s(10), s(20)));
        let mut rng = RecordedDraws::new(vec![0.0]);
        assert_eq!(
            backoff.next_delay(Instant::from_millis(4000), &mut rng),
            s(6)
        );
    }

    #[test]
    fn expired_advice_gives_an_immediate_reconnect() {
        let mut backoff = Backoff::default();
        backoff.advise(RetryWindow::from_advice(Instant::ZERO, s(1), s(2)));
        let mut rng = RecordedDraws::new(vec![0.9]);
        assert_eq!(
            backoff.next_delay(Instant::from_millis(5000), &mut rng),
            Duration::ZERO
        );
    }

    #[test]
    fn pending_advice_raises_max_delay_to_the_hint_limit() {
        let mut backoff = Backoff::new(BackoffPolicy::fixed(s(1)));
        assert_eq!(backoff.max_delay(), s(1));
        backoff.advise(RetryWindow::from_advice(Instant::ZERO, s(1), s(2)));
        assert_eq!(backoff.max_delay(), MAX_HINT_DELAY);
    }
}
