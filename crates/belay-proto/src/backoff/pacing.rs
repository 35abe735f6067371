//! What the server tells a client about when to come back.
//!
//! Two kinds of information, both turned into absolute [`Instant`]s on the
//! client's clock as soon as they arrive so that later arithmetic never has
//! to know when the message was received:
//!
//! * [`PacingSlots`]: a standing grid of reconnect instants, advertised in
//!   `welcome` while the connection is healthy. Spreading clients over the
//!   grid keeps a mass reconnect after a server restart from arriving at once.
//! * [`RetryWindow`]: a one-shot hint sent before a planned close ("come back
//!   after a random delay in `[min, max)`"). The session builds it when the
//!   advised connection actually closes, so the window counts from the close.

use std::time::Duration;

use super::formula::whole_ms;
use crate::time::Instant;

/// The longest pacing period a server may advertise; longer ones are clamped.
///
/// Bounds the delay [`PacingSlots::next_slot_after`] can produce, and so
/// [`BackoffPolicy::max_delay`](super::BackoffPolicy::max_delay) of a
/// server-paced policy: a hostile or buggy server can make a client wait at
/// most one hour for its slot, never forever.
///
/// One hour, because a fleet is paced only while its period `N / (0.95 R)`
/// fits (one attempt per client per period): up to 3,420 s of admissions,
/// 1.71 million clients at 500 admissions per second, 17 million at 5,000.
/// It was 300 s until issue 44, which left any fleet over 285 s of
/// admissions unpaced (docs/SIMULATION.md, "Fleets past five minutes").
pub const MAX_PACING_PERIOD: Duration = Duration::from_secs(3_600);

/// The longest delay a [`RetryWindow`] may ask for; longer ones are clamped,
/// so a misbehaving server cannot park a client forever.
///
/// The same hour as [`MAX_PACING_PERIOD`]: a planned restart's advice
/// spreads a fleet over as long as its slots would (`FleetPacing::restart_advice`).
pub const MAX_HINT_DELAY: Duration = MAX_PACING_PERIOD;

/// A grid of reconnect instants `anchor + phase + k × period`, for every
/// integer `k` (negative too: the grid extends before the anchor).
///
/// The server measures `phase` from the moment it sent `welcome`; the client
/// uses the instant it *received* `welcome` as `anchor`. The one-way latency
/// therefore shifts every client's grid by its own latency, which is harmless:
/// the point is to spread clients, not to synchronise them.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacingSlots {
    period: Duration,
    phase: Duration,
    anchor: Instant,
}

impl PacingSlots {
    /// A grid with the given period, phase and anchor.
    ///
    /// `period` is truncated to whole milliseconds and clamped to
    /// `[1 ms, MAX_PACING_PERIOD]` (zero would make every instant a slot;
    /// a huge one would park the client). `phase` is truncated to whole
    /// milliseconds and taken modulo the clamped period.
    pub fn new(period: Duration, phase: Duration, anchor: Instant) -> Self {
        let period_ms = whole_ms(period).clamp(1, whole_ms(MAX_PACING_PERIOD));
        let phase_ms = whole_ms(phase) % period_ms;
        PacingSlots {
            period: Duration::from_millis(period_ms),
            phase: Duration::from_millis(phase_ms),
            anchor,
        }
    }

    /// The (clamped) period between slots.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// The phase, already reduced modulo [`period`](Self::period).
    pub fn phase(&self) -> Duration {
        self.phase
    }

    /// The instant `welcome` was received.
    pub fn anchor(&self) -> Instant {
        self.anchor
    }

    /// The smallest slot instant strictly after `now`.
    ///
    /// Computed in integer microseconds, so the result is exact for any `now`
    /// (also before the anchor). It saturates at [`Instant::MAX`], which is
    /// the only case where it is not strictly after `now`.
    pub fn next_slot_after(&self, now: Instant) -> Instant {
        let period_us = self.period.as_micros().try_into().unwrap_or(u64::MAX);
        let origin = self.anchor.saturating_add(self.phase);
        if now < origin {
            // Slots before the origin are origin − j·P; the earliest one
            // still after `now` has the largest j with j·P < origin − now.
            let before = origin.as_micros() - now.as_micros();
            let steps_back = (before - 1) / period_us * period_us;
            Instant::from_micros(origin.as_micros() - steps_back)
        } else {
            let into_period = (now.as_micros() - origin.as_micros()) % period_us;
            Instant::from_micros(now.as_micros().saturating_add(period_us - into_period))
        }
    }
}

/// A one-shot server hint: reconnect at a random instant in
/// `[earliest, latest)`.
///
/// Stored as absolute instants so it stays correct however late the client
/// gets round to using it; if both instants have passed the hint yields an
/// immediate reconnect.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryWindow {
    earliest: Instant,
    latest: Instant,
}

impl RetryWindow {
    /// The window `[now + min, now + max)` for advice applied at `now`.
    ///
    /// Both delays are truncated to whole milliseconds and clamped to
    /// [`MAX_HINT_DELAY`]. If `min > max`, `max` is raised to `min` (rather
    /// than swapping the two): `min` is the server's "not before", which is
    /// what protects it, so it is the bound that is honoured.
    pub fn from_advice(now: Instant, min: Duration, max: Duration) -> Self {
        let limit = whole_ms(MAX_HINT_DELAY);
        let min_ms = whole_ms(min).min(limit);
        let max_ms = whole_ms(max).min(limit).max(min_ms);
        RetryWindow {
            earliest: now.saturating_add(Duration::from_millis(min_ms)),
            latest: now.saturating_add(Duration::from_millis(max_ms)),
        }
    }

    /// The earliest instant the server wants the client back.
    pub fn earliest(&self) -> Instant {
        self.earliest
    }

    /// The end (exclusive) of the window.
    pub fn latest(&self) -> Instant {
        self.latest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn at(s: u64) -> Instant {
        Instant::from_millis(s * 1000)
    }

    fn reference_grid() -> PacingSlots {
        PacingSlots::new(secs(20), secs(3), at(100))
    }

    #[test]
    fn next_slot_is_on_the_grid_after_now() {
        assert_eq!(reference_grid().next_slot_after(at(150)), at(163));
    }

    #[test]
    fn now_exactly_on_a_slot_gives_the_following_slot() {
        assert_eq!(reference_grid().next_slot_after(at(163)), at(183));
    }

    #[test]
    fn slots_between_anchor_and_first_phase_lead_to_the_origin() {
        assert_eq!(reference_grid().next_slot_after(at(100)), at(103));
        assert_eq!(reference_grid().next_slot_after(at(103)), at(123));
    }

    #[test]
    fn slots_extend_before_the_anchor() {
        let grid = reference_grid();
        assert_eq!(grid.next_slot_after(at(50)), at(63));
        assert_eq!(grid.next_slot_after(at(63)), at(83));
        assert_eq!(grid.next_slot_after(Instant::ZERO), at(3));
    }

    #[test]
    fn sub_millisecond_now_still_lands_exactly_on_a_slot() {
        let now = Instant::from_micros(150_000_250);
        assert_eq!(reference_grid().next_slot_after(now), at(163));
    }

    #[test]
    fn next_slot_saturates_at_the_end_of_time() {
        assert_eq!(reference_grid().next_slot_after(Instant::MAX), Instant::MAX);
        let late = PacingSlots::new(secs(20), secs(3), Instant::MAX);
        let slot = late.next_slot_after(at(7));
        assert!(slot > at(7) && slot - at(7) <= secs(20), "{slot:?}");
    }

    #[test]
    fn period_is_clamped_and_phase_reduced() {
        let zero = PacingSlots::new(Duration::ZERO, secs(5), at(0));
        assert_eq!(zero.period(), Duration::from_millis(1));
        assert_eq!(zero.phase(), Duration::ZERO);
        let huge = PacingSlots::new(secs(100_000), secs(3_601), at(0));
        assert_eq!(huge.period(), MAX_PACING_PERIOD);
        assert_eq!(huge.phase(), secs(1));
        let long = PacingSlots::new(secs(2_105), secs(7), at(0));
        assert_eq!(long.period(), secs(2_105), "a million clients at 500/s");
        let odd = PacingSlots::new(secs(20), secs(45), at(0));
        assert_eq!(odd.phase(), secs(5));
    }

    #[test]
    fn retry_window_is_relative_to_the_advice_instant() {
        let window = RetryWindow::from_advice(at(10), secs(2), secs(5));
        assert_eq!((window.earliest(), window.latest()), (at(12), at(15)));
    }

    #[test]
    fn retry_window_is_clamped_to_the_hint_limit() {
        let window = RetryWindow::from_advice(at(0), secs(10_000), Duration::MAX);
        assert_eq!(window.earliest(), at(3_600));
        assert_eq!(window.latest(), at(3_600));
        let window = RetryWindow::from_advice(at(0), secs(1000), secs(2000));
        assert_eq!((window.earliest(), window.latest()), (at(1000), at(2000)));
    }

    #[test]
    fn inverted_retry_window_honours_the_minimum() {
        let window = RetryWindow::from_advice(at(0), secs(9), secs(4));
        assert_eq!((window.earliest(), window.latest()), (at(9), at(9)));
    }
}
