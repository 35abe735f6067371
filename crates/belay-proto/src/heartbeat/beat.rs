//! The fleet's beat: when an idle connection sends its probes.
//!
//! Left to itself, an idle client probes `interval` after its last frame,
//! so a fleet's probes fall wherever its clients happened to connect, and
//! after a silent server death its notices arrive however they fall: in
//! bunches if many connected together. A server that sends its plan's
//! origin (`pacing.origin_ms`) gives every client one reference instant, and
//! each client already has its own place in the plan (its slot's offset,
//! `g × period` with `g` in `[0, 1)`, spread evenly over the fleet). A
//! client that probes at `origin + g × interval + k × interval` therefore
//! probes at its own place in a fleet-wide beat: the fleet's probes, and
//! its notices of a silent death, are spread evenly over `interval`
//! (docs/SIMULATION.md, "Detection spread").

use std::num::NonZeroU64;
use std::time::Duration;

use crate::backoff::MAX_PACING_PERIOD;
use crate::message::Pacing;
use crate::time::Instant;

/// The instants `first + k × interval`, for every integer `k`.
///
/// Two words: a connection holds one (the server's connection futures are
/// kept inside an allocator size class, see belay-server's `task_size`).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Beat {
    first: Instant,
    interval_us: NonZeroU64,
}

impl Beat {
    /// This client's beat for a probe `interval`, from the pacing of the
    /// `welcome` received at `anchor`. `None` if the pacing carries no
    /// origin (an older server) or the interval is under a millisecond.
    ///
    /// In whole milliseconds: the period is clamped to `[1 ms, 300 s]` as
    /// for the slots; the client's offset in the plan is
    /// `(phase + origin) mod period`; its place on the beat is
    /// `floor(offset × interval / period)` after the origin; the first beat
    /// is that place measured from `anchor`, reduced modulo `interval`.
    pub fn from_pacing(pacing: &Pacing, interval: Duration, anchor: Instant) -> Option<Beat> {
        let origin = u128::from(pacing.origin_ms?);
        let interval_ms = interval.as_millis();
        if interval_ms == 0 {
            return None;
        }
        let period = u128::from(pacing.period_ms).clamp(1, MAX_PACING_PERIOD.as_millis());
        let offset = (u128::from(pacing.phase_ms) % period + origin % period) % period;
        let place = offset * interval_ms / period;
        let phase = (place + interval_ms - origin % interval_ms) % interval_ms;
        let interval_us = u64::try_from(interval_ms * 1_000).unwrap_or(u64::MAX);
        Some(Beat {
            first: anchor.saturating_add(Duration::from_millis(u64::try_from(phase).unwrap_or(0))),
            interval_us: NonZeroU64::new(interval_us)?,
        })
    }

    /// The beat with an instant `first` every `interval`; `None` for an
    /// interval under a microsecond.
    pub(super) fn at(first: Instant, interval: Duration) -> Option<Beat> {
        let interval_us = u64::try_from(interval.as_micros()).unwrap_or(u64::MAX);
        Some(Beat {
            first,
            interval_us: NonZeroU64::new(interval_us)?,
        })
    }

    /// One of the beat's instants.
    pub fn first(&self) -> Instant {
        self.first
    }

    /// The time between beats.
    pub fn interval(&self) -> Duration {
        Duration::from_micros(self.interval_us.get())
    }

    /// The latest beat instant at or before `t` (saturating at
    /// [`Instant::ZERO`]).
    pub fn last_at_or_before(&self, t: Instant) -> Instant {
        let interval = u128::from(self.interval_us.get());
        let first = u128::from(self.first.as_micros());
        let t = u128::from(t.as_micros());
        let at = if t >= first {
            t - (t - first) % interval
        } else {
            let back = (first - t).div_ceil(interval) * interval;
            first.saturating_sub(back)
        };
        Instant::from_micros(u64::try_from(at).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pacing(period_ms: u64, phase_ms: u64, origin_ms: Option<u64>) -> Pacing {
        Pacing {
            period_ms,
            phase_ms,
            origin_ms,
        }
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn no_origin_no_beat() {
        assert_eq!(
            Beat::from_pacing(&pacing(20_000, 5_000, None), secs(10), at(0)),
            None
        );
    }

    #[test]
    fn the_place_in_the_plan_becomes_the_place_on_the_beat() {
        // Plan origin 3 000 ms before the welcome at 50 000: origin 47 000.
        // Slot offset (5 000 + 3 000) mod 20 000 = 8 000, a place of 0.4:
        // beats at 47 000 + 4 000 + k × 10 000, i.e. 1 000 after the anchor.
        let beat =
            Beat::from_pacing(&pacing(20_000, 5_000, Some(3_000)), secs(10), at(50_000)).unwrap();
        assert_eq!(beat.last_at_or_before(at(51_500)), at(51_000));
        assert_eq!(beat.last_at_or_before(at(64_000)), at(61_000));
        assert_eq!(beat.last_at_or_before(at(61_000)), at(61_000));
        assert_eq!(beat.last_at_or_before(at(50_500)), at(41_000));
    }

    #[test]
    fn clients_of_one_plan_share_the_beat_whenever_they_connected() {
        // Two clients with the same place in the plan (offset 8 000 of
        // 20 000), welcomed at different moments of a plan that began at 0.
        let early = Beat::from_pacing(&pacing(20_000, 8_000, Some(0)), secs(10), at(0)).unwrap();
        let late = Beat::from_pacing(&pacing(20_000, 5_000, Some(123_000)), secs(10), at(123_000))
            .unwrap();
        for t in [200_000, 345_678, 999_999] {
            assert_eq!(
                early.last_at_or_before(at(t)),
                late.last_at_or_before(at(t))
            );
        }
        assert_eq!(early.last_at_or_before(at(200_000)), at(194_000));
    }

    #[test]
    fn a_zero_interval_has_no_beat_and_extremes_do_not_panic() {
        assert_eq!(
            Beat::from_pacing(&pacing(20_000, 0, Some(1)), Duration::ZERO, at(0)),
            None
        );
        let beat = Beat::from_pacing(
            &pacing(u64::MAX, u64::MAX, Some(u64::MAX)),
            Duration::MAX,
            Instant::MAX,
        )
        .unwrap();
        let _ = beat.last_at_or_before(Instant::ZERO);
        let _ = beat.last_at_or_before(Instant::MAX);
    }
}
