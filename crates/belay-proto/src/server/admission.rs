//! [`TokenBucket`]: a continuous-refill rate limiter driven by explicit time.

use std::time::Duration;

use crate::time::Instant;

/// Tolerance when deciding whether a whole token is available. Refill is
/// computed in `f64`; without it, waiting exactly the duration
/// [`TokenBucket::try_take`] asked for could leave the bucket at
/// 0.999 999 999 9 tokens and refuse again. It admits at most a billionth of
/// a token early.
const EPSILON: f64 = 1e-9;

/// A token bucket with continuous refill and fractional tokens.
///
/// The bucket holds up to `capacity` tokens and gains `rate_per_sec` tokens
/// per second, continuously: half a second at 100/s adds exactly 50 tokens,
/// and fractions are kept. Each admitted action takes one whole token. The
/// server uses one bucket for connection admission (the accept rate) and one
/// per connection for its message rate ([`Limits::rate_limiter`](super::Limits::rate_limiter)).
///
/// ```text
///  tokens
///  capacity ┤━━━━┓          ╱━━━━━━━━      refill: rate_per_sec, capped at capacity
///           │    ┗┓       ╱                take:   −1 per admitted action
///           │     ┗┓    ╱                  refuse: Err(time until 1 whole token)
///         0 ┤      ┗━━╱
///           └──────────────────────▶ now
/// ```
///
/// Nothing here panics on any input: a NaN or negative rate means "no refill",
/// an infinite rate means "always full", a NaN, negative or sub-one capacity
/// is raised to one token (a bucket that can never hold a whole token would
/// refuse everything forever), and an instant earlier than one already seen is
/// treated as that instant (time never moves backwards).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenBucket {
    rate_per_sec: f64,
    capacity: f64,
    tokens: f64,
    updated_at: Instant,
}

impl TokenBucket {
    /// A bucket refilling at `rate_per_sec` up to `capacity` tokens, created
    /// at `now`, full if `start_full` (a burst is allowed at once), else empty.
    ///
    /// Out-of-range values are sanitized as described in the
    /// [`TokenBucket`] docs.
    pub fn new(rate_per_sec: f64, capacity: f64, now: Instant, start_full: bool) -> Self {
        let capacity = sanitize_capacity(capacity);
        TokenBucket {
            rate_per_sec: sanitize_rate(rate_per_sec),
            capacity,
            tokens: if start_full { capacity } else { 0.0 },
            updated_at: now,
        }
    }

    /// Take one token at `now`.
    ///
    /// `Err(wait)` refuses the action and takes nothing: `wait` is how long
    /// until one whole token is available (rounded up to the microsecond, so
    /// a call at `now + wait` succeeds if nothing else took a token), the
    /// value for a `Retry-After` or `retry_after_ms` hint. With a zero rate
    /// an empty bucket never refills and `wait` is [`Duration::MAX`].
    pub fn try_take(&mut self, now: Instant) -> Result<(), Duration> {
        self.refill(now);
        if self.tokens + EPSILON >= 1.0 {
            self.tokens = (self.tokens - 1.0).max(0.0);
            Ok(())
        } else {
            Err(self.wait_for_one())
        }
    }

    /// Tokens available at `now` (fractional), without taking any.
    pub fn available(&self, now: Instant) -> f64 {
        self.refilled(now)
    }

    /// Whether the bucket is full at `now`: the client has been calm for
    /// long enough to have its whole burst back.
    pub fn is_full(&self, now: Instant) -> bool {
        self.refilled(now) >= self.capacity
    }

    /// Change the refill rate from `now` on. Tokens earned until `now` are
    /// counted at the old rate first.
    pub fn set_rate(&mut self, now: Instant, rate_per_sec: f64) {
        self.refill(now);
        self.rate_per_sec = sanitize_rate(rate_per_sec);
    }

    /// Change the capacity from `now` on; tokens above the new capacity are
    /// dropped.
    pub fn set_capacity(&mut self, now: Instant, capacity: f64) {
        self.refill(now);
        self.capacity = sanitize_capacity(capacity);
        self.tokens = self.tokens.min(self.capacity);
    }

    /// Set the tokens held at `now`, clamped to `[0, capacity]` (NaN counts
    /// as zero). Tokens earned until `now` are replaced, not added to: a
    /// bucket that should start with part of its burst (neither full nor
    /// empty), or a model that charges a refused attempt some of the bucket
    /// (`set_tokens(now, available(now) - cost)`), sets its state here.
    pub fn set_tokens(&mut self, now: Instant, tokens: f64) {
        self.refill(now);
        self.tokens = if tokens.is_nan() {
            0.0
        } else {
            tokens.clamp(0.0, self.capacity)
        };
    }

    /// The (sanitized) refill rate in tokens per second.
    pub fn rate_per_sec(&self) -> f64 {
        self.rate_per_sec
    }

    /// The (sanitized) capacity in tokens.
    pub fn capacity(&self) -> f64 {
        self.capacity
    }

    /// Time until one whole token is available, given the current tokens:
    /// the smallest whole number of microseconds after which the refill
    /// formula (the same `f64` arithmetic as [`try_take`](Self::try_take))
    /// yields a whole token.
    fn wait_for_one(&self) -> Duration {
        if self.rate_per_sec <= 0.0 {
            return Duration::MAX;
        }
        let deficit = (1.0 - self.tokens).max(0.0);
        // Shave a nanosecond off before rounding up, so float noise such as
        // 1000.000 000 000 000 9 µs does not cost a whole microsecond; the
        // loop below adds it back where it is really needed. `as` saturates
        // (huge waits) and maps NaN to 0, so this never panics.
        let exact = deficit / self.rate_per_sec * 1e6;
        let mut micros = (exact - 1e-3).ceil().max(0.0) as u64;
        for _ in 0..4 {
            let earned = Duration::from_micros(micros).as_secs_f64() * self.rate_per_sec;
            if self.tokens + earned + EPSILON >= 1.0 {
                break;
            }
            micros = micros.saturating_add(1);
        }
        Duration::from_micros(micros)
    }

    fn refill(&mut self, now: Instant) {
        self.tokens = self.refilled(now);
        self.updated_at = self.updated_at.max(now);
    }

    fn refilled(&self, now: Instant) -> f64 {
        if self.rate_per_sec.is_infinite() {
            return self.capacity;
        }
        // An earlier `now` saturates to zero elapsed time.
        let elapsed = now.saturating_duration_since(self.updated_at).as_secs_f64();
        if elapsed == 0.0 || self.rate_per_sec == 0.0 {
            return self.tokens;
        }
        (self.tokens + elapsed * self.rate_per_sec).min(self.capacity)
    }
}

/// NaN and negative rates mean "no refill"; `+inf` is kept ("always full").
fn sanitize_rate(rate: f64) -> f64 {
    if rate.is_nan() || rate <= 0.0 {
        0.0
    } else {
        rate
    }
}

/// At least one whole token; NaN counts as one, `+inf` is kept.
fn sanitize_capacity(capacity: f64) -> f64 {
    if capacity.is_nan() {
        1.0
    } else {
        capacity.max(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    #[test]
    fn a_full_bucket_admits_its_whole_burst_at_once_then_refuses() {
        let mut bucket = TokenBucket::new(10.0, 5.0, ms(0), true);
        for _ in 0..5 {
            assert_eq!(bucket.try_take(ms(0)), Ok(()));
        }
        assert_eq!(bucket.try_take(ms(0)), Err(Duration::from_millis(100)));
    }

    #[test]
    fn an_empty_bucket_admits_nothing_until_the_first_token_refills() {
        let mut bucket = TokenBucket::new(2.0, 5.0, ms(0), false);
        assert_eq!(bucket.try_take(ms(0)), Err(Duration::from_millis(500)));
        assert_eq!(bucket.try_take(ms(499)), Err(Duration::from_millis(1)));
        assert_eq!(bucket.try_take(ms(500)), Ok(()));
    }

    #[test]
    fn refill_is_continuous_and_keeps_fractions() {
        let bucket = TokenBucket::new(100.0, 1_000.0, ms(0), false);
        assert!((bucket.available(ms(15)) - 1.5).abs() < 1e-9);
        assert!((bucket.available(Instant::from_micros(12_345)) - 1.2345).abs() < 1e-9);
    }

    #[test]
    fn refill_stops_at_capacity() {
        let mut bucket = TokenBucket::new(100.0, 3.0, ms(0), false);
        assert_eq!(bucket.available(ms(60_000)), 3.0);
        assert!(bucket.is_full(ms(60_000)));
        for _ in 0..3 {
            assert_eq!(bucket.try_take(ms(60_000)), Ok(()));
        }
        assert!(bucket.try_take(ms(60_000)).is_err());
    }

    #[test]
    fn waiting_exactly_the_advised_duration_always_succeeds() {
        for rate in [0.3, 1.0, 3.0, 7.0, 33.3, 100.0, 999.0, 123_456.7] {
            let mut bucket = TokenBucket::new(rate, 1.0, ms(1_000), true);
            let mut now = ms(1_000);
            for _ in 0..50 {
                match bucket.try_take(now) {
                    Ok(()) => {}
                    Err(wait) => {
                        now = now + wait;
                        assert_eq!(bucket.try_take(now), Ok(()), "rate {rate} at {now:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_refusal_takes_nothing() {
        let mut bucket = TokenBucket::new(1.0, 1.0, ms(0), false);
        assert!(bucket.try_take(ms(400)).is_err());
        assert!(bucket.try_take(ms(800)).is_err());
        assert_eq!(bucket.try_take(ms(1_000)), Ok(()));
    }

    #[test]
    fn time_going_backwards_is_clamped_and_earns_nothing() {
        let mut bucket = TokenBucket::new(1.0, 10.0, ms(10_000), false);
        assert!((bucket.available(ms(12_000)) - 2.0).abs() < 1e-9);
        assert_eq!(bucket.try_take(ms(12_000)), Ok(()));
        // A stale `now` neither refills nor rewinds the clock.
        assert!((bucket.available(ms(5_000)) - 1.0).abs() < 1e-9);
        assert_eq!(bucket.try_take(ms(5_000)), Ok(()));
        assert!(bucket.try_take(ms(5_000)).is_err());
        assert!((bucket.available(ms(13_000)) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn set_rate_counts_earned_tokens_at_the_old_rate() {
        let mut bucket = TokenBucket::new(1.0, 100.0, ms(0), false);
        bucket.set_rate(ms(10_000), 10.0);
        // 10 tokens from the first 10 s at 1/s, then 10/s.
        assert!((bucket.available(ms(11_000)) - 20.0).abs() < 1e-9);
        assert_eq!(bucket.rate_per_sec(), 10.0);
    }

    #[test]
    fn set_capacity_drops_tokens_above_the_new_capacity() {
        let mut bucket = TokenBucket::new(1.0, 100.0, ms(0), true);
        bucket.set_capacity(ms(0), 2.0);
        assert_eq!(bucket.available(ms(0)), 2.0);
        assert_eq!(bucket.capacity(), 2.0);
    }

    #[test]
    fn set_tokens_replaces_what_was_earned_and_stays_within_capacity() {
        let mut bucket = TokenBucket::new(10.0, 5.0, ms(0), false);
        bucket.set_tokens(ms(0), 2.5);
        assert_eq!(bucket.available(ms(0)), 2.5);
        // 1 s at 10/s would fill it; setting at 1 s replaces that.
        bucket.set_tokens(ms(1_000), 0.25);
        assert_eq!(bucket.available(ms(1_000)), 0.25);
        assert_eq!(bucket.try_take(ms(1_000)), Err(Duration::from_millis(75)));
        assert_eq!(bucket.try_take(ms(1_075)), Ok(()));
        for (tokens, held) in [
            (9.0, 5.0),
            (-1.0, 0.0),
            (f64::NAN, 0.0),
            (f64::INFINITY, 5.0),
        ] {
            bucket.set_tokens(ms(2_000), tokens);
            assert_eq!(bucket.available(ms(2_000)), held, "set to {tokens}");
        }
        // A stale `now` sets the tokens at the latest instant seen.
        bucket.set_tokens(ms(1_000), 1.0);
        assert_eq!(bucket.available(ms(2_000)), 1.0);
    }

    #[test]
    fn nan_and_negative_rates_never_refill_and_never_panic() {
        for rate in [f64::NAN, -5.0, 0.0, f64::NEG_INFINITY] {
            let mut bucket = TokenBucket::new(rate, 1.0, ms(0), true);
            assert_eq!(bucket.try_take(ms(0)), Ok(()));
            assert_eq!(bucket.try_take(Instant::MAX), Err(Duration::MAX));
            assert_eq!(bucket.rate_per_sec(), 0.0);
        }
    }

    #[test]
    fn an_infinite_rate_admits_everything() {
        let mut bucket = TokenBucket::new(f64::INFINITY, 2.0, ms(0), false);
        for _ in 0..1_000 {
            assert_eq!(bucket.try_take(ms(0)), Ok(()));
        }
    }

    #[test]
    fn silly_capacities_are_raised_to_one_token() {
        for capacity in [f64::NAN, -1.0, 0.0, 0.5] {
            let mut bucket = TokenBucket::new(1.0, capacity, ms(0), true);
            assert_eq!(bucket.capacity(), 1.0);
            assert_eq!(bucket.try_take(ms(0)), Ok(()));
            assert_eq!(bucket.try_take(ms(0)), Err(Duration::from_secs(1)));
        }
    }

    #[test]
    fn an_infinite_capacity_full_bucket_is_unlimited() {
        let mut bucket = TokenBucket::new(1.0, f64::INFINITY, ms(0), true);
        for _ in 0..1_000 {
            assert_eq!(bucket.try_take(Instant::MAX), Ok(()));
        }
    }

    #[test]
    fn extreme_times_and_tiny_rates_do_not_panic() {
        let mut bucket = TokenBucket::new(f64::MIN_POSITIVE, 1.0, Instant::ZERO, false);
        assert!(bucket.try_take(Instant::ZERO).is_err());
        let mut bucket = TokenBucket::new(f64::MAX, f64::MAX, Instant::ZERO, false);
        assert_eq!(bucket.try_take(Instant::MAX), Ok(()));
    }
}
