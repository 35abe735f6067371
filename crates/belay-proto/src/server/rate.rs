//! [`RateLimiter`]: a connection's inbound message rate, with the flood rule.

use std::time::Duration;

use super::TokenBucket;
use crate::time::Instant;

/// What to do with one inbound frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RateDecision {
    /// Within the limit: process the frame.
    Allow,
    /// Over the limit: do not process it; answer `rate_limited` with
    /// `retry_after` (the time until one message is allowed again).
    Refuse {
        /// Until the next message is allowed.
        retry_after: Duration,
    },
    /// A sustained flood: advise and close with 4029. `retry_after` is how
    /// long the bucket takes to refill completely (`burst / messages_per_sec`).
    Close {
        /// Until the client's whole burst would be back.
        retry_after: Duration,
    },
}

/// The inbound message rate of one connection.
///
/// Every inbound frame takes a token from a [`TokenBucket`] refilling at
/// `messages_per_sec` up to `burst`. A frame over the limit is refused with
/// a `rate_limited` reply and the connection stays open
/// ([`Violation::RateLimited`](super::Violation::RateLimited)). A client that
/// keeps flooding is closed with 4029 and `reconnect` advice
/// ([`Violation::Flood`](super::Violation::Flood)).
///
/// **The flood rule.** The connection is closed when more than `tolerance`
/// frames (by default `burst`) have been refused since the bucket was last
/// full. A client that bursts now and then gets its bucket back, and its
/// count of refusals with it, after `burst / messages_per_sec` of calm
/// (2 s with the defaults); a client that sends steadily above the limit
/// never refills its bucket, so its refusals add up until it is closed,
/// however slightly it exceeds the limit. With the defaults (100/s, burst
/// 200) a client sending 1 000/s empties its burst in about 0.22 s and is
/// closed about 0.22 s later; one sending 110/s is closed after about 40 s.
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimiter {
    bucket: TokenBucket,
    tolerance: u32,
    refused: u32,
}

impl RateLimiter {
    /// A limiter for a connection opened at `now`, allowing `burst` frames at
    /// once and `messages_per_sec` on average, and tolerating `burst` refused
    /// frames since the bucket was last full. Values are sanitized as in
    /// [`TokenBucket::new`].
    pub fn new(messages_per_sec: f64, burst: u32, now: Instant) -> Self {
        RateLimiter {
            bucket: TokenBucket::new(messages_per_sec, f64::from(burst), now, true),
            tolerance: burst,
            refused: 0,
        }
    }

    /// Close after more than `tolerance` refusals since the bucket was last
    /// full (0: close at the first refusal).
    pub fn set_tolerance(&mut self, tolerance: u32) -> &mut Self {
        self.tolerance = tolerance;
        self
    }

    /// A frame arrived at `now`.
    pub fn check(&mut self, now: Instant) -> RateDecision {
        if self.bucket.is_full(now) {
            self.refused = 0;
        }
        match self.bucket.try_take(now) {
            Ok(()) => RateDecision::Allow,
            Err(retry_after) => {
                self.refused = self.refused.saturating_add(1);
                if self.refused > self.tolerance {
                    RateDecision::Close {
                        retry_after: self.time_to_refill(),
                    }
                } else {
                    RateDecision::Refuse { retry_after }
                }
            }
        }
    }

    /// Frames refused since the bucket was last full.
    pub fn refused(&self) -> u32 {
        self.refused
    }

    /// The underlying bucket.
    pub fn bucket(&self) -> &TokenBucket {
        &self.bucket
    }

    fn time_to_refill(&self) -> Duration {
        let rate = self.bucket.rate_per_sec();
        if rate <= 0.0 {
            return Duration::MAX;
        }
        Duration::try_from_secs_f64(self.bucket.capacity() / rate).unwrap_or(Duration::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    #[test]
    fn a_burst_within_the_limit_is_allowed() {
        let mut limiter = RateLimiter::new(100.0, 200, ms(0));
        for _ in 0..200 {
            assert_eq!(limiter.check(ms(0)), RateDecision::Allow);
        }
    }

    #[test]
    fn a_frame_over_the_limit_is_refused_with_the_time_to_the_next_token() {
        let mut limiter = RateLimiter::new(100.0, 200, ms(0));
        for _ in 0..200 {
            limiter.check(ms(0));
        }
        assert_eq!(
            limiter.check(ms(0)),
            RateDecision::Refuse {
                retry_after: Duration::from_millis(10)
            }
        );
        assert_eq!(limiter.refused(), 1);
    }

    #[test]
    fn a_sustained_flood_is_closed_after_more_than_burst_refusals() {
        let mut limiter = RateLimiter::new(100.0, 200, ms(0));
        let mut now = ms(0);
        let mut refused = 0;
        // 1 000 frames per second: one every millisecond.
        let close = loop {
            match limiter.check(now) {
                RateDecision::Allow => {}
                RateDecision::Refuse { .. } => refused += 1,
                RateDecision::Close { retry_after } => break retry_after,
            }
            now = now + Duration::from_millis(1);
        };
        assert_eq!(refused, 200);
        assert_eq!(close, Duration::from_secs(2));
        assert!(now > ms(400) && now < ms(500), "{now:?}");
    }

    #[test]
    fn a_client_slightly_over_the_limit_is_closed_eventually() {
        let mut limiter = RateLimiter::new(100.0, 200, ms(0));
        // 110 frames per second.
        let mut closed_at = None;
        for i in 0..100_000u64 {
            let now = Instant::from_micros(i * 1_000_000 / 110);
            if let RateDecision::Close { .. } = limiter.check(now) {
                closed_at = Some(now);
                break;
            }
        }
        let closed_at = closed_at.expect("a steady excess is a flood");
        assert!(closed_at > ms(20_000), "{closed_at:?}");
    }

    #[test]
    fn occasional_bursts_are_forgiven_once_the_bucket_refills() {
        let mut limiter = RateLimiter::new(100.0, 200, ms(0));
        for round in 0..10u64 {
            let start = ms(round * 3_000);
            // 300 frames at once: 200 allowed, 100 refused, never closed.
            for _ in 0..300 {
                let decision = limiter.check(start);
                assert!(
                    !matches!(decision, RateDecision::Close { .. }),
                    "round {round}"
                );
            }
        }
    }

    #[test]
    fn zero_tolerance_closes_at_the_first_refusal() {
        let mut limiter = RateLimiter::new(1.0, 1, ms(0));
        limiter.set_tolerance(0);
        assert_eq!(limiter.check(ms(0)), RateDecision::Allow);
        assert_eq!(
            limiter.check(ms(0)),
            RateDecision::Close {
                retry_after: Duration::from_secs(1)
            }
        );
    }

    #[test]
    fn a_zero_rate_never_refills_and_never_panics() {
        let mut limiter = RateLimiter::new(0.0, 0, ms(0));
        assert_eq!(limiter.check(ms(0)), RateDecision::Allow);
        assert_eq!(
            limiter.check(Instant::MAX),
            RateDecision::Close {
                retry_after: Duration::MAX
            }
        );
    }
}
