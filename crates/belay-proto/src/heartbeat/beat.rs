//! The fleet's beat: when an idle connection is probed.
//!
//! Left to itself, an idle client probes `interval` after its last frame,
//! so a fleet's probes fall wherever its clients happened to connect, and
//! after a silent server death its notices arrive however they fall: in
//! bunches if many connected together, and with no regard for the slots
//! the clients then wait for. A server that sends its plan's origin
//! (`pacing.origin_ms`) gives every client one reference instant, and each
//! client already has its slots in the plan, spread evenly over the fleet.
//! Two beats follow from them:
//!
//! * [`Beat::for_probes`]: a client's own probes, **set on its slots**, one
//!   beat just before each slot and none more than `interval` apart. A
//!   silent death is then noticed before the client's first slot after it,
//!   wherever it fell, so a fleet that waits for its slots is back within
//!   one period of the return (docs/SIMULATION.md, "Detection spread").
//! * [`Beat::from_pacing`]: a pinging server's pings, at the client's place
//!   in the plan on a beat of the ping interval, so the last frames a silent
//!   death leaves the fleet, and its notices, are spread evenly over it.
//! * [`Beat::for_pings`]: the pings a server actually sends: the above
//!   while its interval spreads the fleet no faster than it admits, else
//!   **set on the client's slots** (`ping_beat.rs`).

use std::num::{NonZeroU32, NonZeroU64};
use std::time::Duration;

use crate::backoff::{PacingSlots, MAX_PACING_PERIOD};
use crate::message::Pacing;
use crate::time::Instant;

/// The instants `first + k × period + ⌈j × span / per_period⌉`, for every
/// integer `k` and `j` in `[0, per_period]`, where `span = period − rest`:
/// `per_period` evenly spaced gaps over the span, then a rest until the
/// next period (with no rest, `j = per_period` is the next period's first
/// beat: `per_period` beats in each period). As evenly spaced as whole
/// microseconds allow and never drifting from the period's grid.
///
/// Three words: a connection holds one (the server's connection futures are
/// kept inside an allocator size class, see belay-server's `task_size`).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Beat {
    first: Instant,
    period_us: NonZeroU64,
    per_period: NonZeroU32,
    /// The rest at the end of each period, in whole ms (below the period).
    rest_ms: u32,
}

impl Beat {
    /// This client's beat for a probe `interval`, from the pacing of the
    /// `welcome` received at `anchor`: one beat per `interval`, at its place
    /// in the plan. `None` if the pacing carries no origin (an older server)
    /// or the interval is under a millisecond.
    ///
    /// In whole milliseconds: the period is clamped to `[1 ms, MAX_PACING_PERIOD]` as
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
        let period = clamped_period_ms(pacing);
        let offset = (u128::from(pacing.phase_ms) % period + origin % period) % period;
        let place = offset * interval_ms / period;
        let phase = (place + interval_ms - origin % interval_ms) % interval_ms;
        Beat::new(
            anchor.saturating_add(Duration::from_millis(u64::try_from(phase).unwrap_or(0))),
            interval_ms * 1_000,
            1,
        )
    }

    /// The beat a client that probes every `interval` and gives a probe
    /// `timeout` follows while idle, **set on its reconnect `slots`** (from
    /// a `welcome` whose pacing carries the plan's origin). `None` for an
    /// interval under a millisecond.
    ///
    /// One beat falls `timeout + 250 ms` before a slot, and the others are
    /// spaced so that none is more than `interval` after the last:
    /// `m = ⌈period / interval⌉` evenly spaced beats in each period
    /// (`interval` under the period), or one every `f = ⌊interval / period⌋`
    /// periods. An idle client probes on each. So when the server dies
    /// silently the client notices at the latest 250 ms before its first
    /// slot after the death (`interval` under the period), or 250 ms before
    /// the slot it then attempts in (`interval` at least the period): no
    /// client finds its slot in the returning server's first period already
    /// passed when it notices, wherever the death fell, and the fleet's
    /// notices are spread over the beat in the order of its slots
    /// (docs/SIMULATION.md, "Detection spread").
    pub fn for_probes(slots: &PacingSlots, interval: Duration, timeout: Duration) -> Option<Beat> {
        let interval_us = interval.as_millis() * 1_000;
        if interval_us == 0 {
            return None;
        }
        // The slots' period is already clamped and whole milliseconds.
        let period_us = slots.period().as_micros();
        let lead_us = (timeout.as_micros() + SLOT_MARGIN.as_micros()) % period_us;
        let first_us = (slots.phase().as_micros() + period_us - lead_us) % period_us;
        Beat::new(
            slots
                .anchor()
                .saturating_add(Duration::from_micros(u64::try_from(first_us).unwrap_or(0))),
            period_us * (interval_us / period_us).max(1),
            u32::try_from(period_us.div_ceil(interval_us)).unwrap_or(u32::MAX),
        )
    }

    fn new(first: Instant, period_us: u128, per_period: u32) -> Option<Beat> {
        Beat::spread(first, period_us, per_period, 0)
    }

    /// `per_period` gaps spread over each period less a rest of `rest_ms`
    /// at its end; a rest that is not below the period is none.
    pub(super) fn spread(
        first: Instant,
        period_us: u128,
        per_period: u32,
        rest_ms: u128,
    ) -> Option<Beat> {
        let period_us = NonZeroU64::new(u64::try_from(period_us).unwrap_or(u64::MAX))?;
        let rest_ms = u32::try_from(rest_ms)
            .ok()
            .filter(|&ms| u64::from(ms) * 1_000 < period_us.get())
            .unwrap_or(0);
        Some(Beat {
            first,
            period_us,
            per_period: NonZeroU32::new(per_period)?,
            rest_ms,
        })
    }

    /// One of the beat's instants.
    pub fn first(&self) -> Instant {
        self.first
    }

    /// The time between beats (the shortest, to the microsecond).
    pub fn interval(&self) -> Duration {
        let rest_us = u64::from(self.rest_ms) * 1_000;
        let spread = (self.period_us.get() - rest_us) / u64::from(self.per_period.get());
        Duration::from_micros(if rest_us == 0 {
            spread
        } else {
            spread.min(rest_us)
        })
    }

    /// The latest beat instant at or before `t` (saturating at
    /// [`Instant::ZERO`]).
    pub fn last_at_or_before(&self, t: Instant) -> Instant {
        self.beat_after_index(t, 0)
    }

    /// The earliest beat instant strictly after `t`.
    pub fn next_after(&self, t: Instant) -> Instant {
        self.beat_after_index(t, 1)
    }

    /// The beat `steps` after the last one at or before `t`.
    fn beat_after_index(&self, t: Instant, steps: i128) -> Instant {
        let period = i128::from(self.period_us.get());
        let per_period = i128::from(self.per_period.get());
        // The gaps are spread over the span; the rest (if any) follows.
        let span = period - i128::from(self.rest_ms) * 1_000;
        let t = i128::from(t.as_micros());
        // The start of the period holding `t` (perhaps before zero), the
        // index of the last beat in it at or before `t` (the span's last,
        // `per_period`, during the rest), then `steps` on: past the span's
        // last beat comes the next period's first.
        let start = t - (t - i128::from(self.first.as_micros())).rem_euclid(period);
        let j = ((t - start) * per_period / span).min(per_period) + steps;
        let at = if j > per_period {
            start + period
        } else {
            start + (j * span + per_period - 1).div_euclid(per_period)
        };
        Instant::from_micros(u64::try_from(at.max(0)).unwrap_or(u64::MAX))
    }
}

/// How long before its slot a client set on its slots notices a silent
/// death at the latest: room for a driver's timer firing late.
pub(super) const SLOT_MARGIN: Duration = Duration::from_millis(250);

pub(super) fn clamped_period_ms(pacing: &Pacing) -> u128 {
    u128::from(pacing.period_ms).clamp(1, MAX_PACING_PERIOD.as_millis())
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
    #[test]
    fn a_beat_longer_than_the_period_falls_on_every_fth_slot() {
        // Slots at 57 000 + k × 20 000; a 45 s interval and a 4 750 ms
        // timeout: one beat every ⌊45 / 20⌋ = 2 periods, 4 750 + 250 ms
        // before a slot: 52 000 + k × 40 000.
        // Slots at 50 000 + 7 000 + k × 20 000.
        let slots = PacingSlots::new(secs(20), Duration::from_millis(7_000), at(50_000));
        let timeout = Duration::from_millis(4_750);
        let beat = Beat::for_probes(&slots, secs(45), timeout).unwrap();
        assert_eq!(beat.interval(), secs(40));
        assert_eq!(beat.last_at_or_before(at(91_999)), at(52_000));
        assert_eq!(beat.last_at_or_before(at(92_000)), at(92_000));
        assert_eq!(beat.next_after(at(52_000)), at(92_000));
        // As long as the period: one beat per slot.
        let beat = Beat::for_probes(&slots, secs(20), timeout).unwrap();
        assert_eq!(beat.interval(), secs(20));
        assert_eq!(beat.last_at_or_before(at(72_000)), at(72_000));
        assert_eq!(beat.last_at_or_before(at(71_999)), at(52_000));
        assert_eq!(beat.next_after(at(71_999)), at(72_000));
    }

    #[test]
    fn a_short_beat_is_set_on_the_slots_and_never_drifts() {
        // Slots at 57 000 + k × 20 000 ms; a 7 s interval gives
        // ⌈20 / 7⌉ = 3 beats per period, ⌈j × 20 000 000 / 3⌉ µs into it,
        // the first 4 750 + 250 ms before a slot: 52 s, 58.666667 s,
        // 65.333334 s, 72 s, …
        let us = Instant::from_micros;
        // Slots at 50 000 + 7 000 + k × 20 000.
        let slots = PacingSlots::new(secs(20), Duration::from_millis(7_000), at(50_000));
        let timeout = Duration::from_millis(4_750);
        let beat = Beat::for_probes(&slots, secs(7), timeout).unwrap();
        assert_eq!(beat.interval(), Duration::from_micros(6_666_666));
        assert_eq!(beat.last_at_or_before(us(58_666_666)), at(52_000));
        assert_eq!(beat.last_at_or_before(us(58_666_667)), us(58_666_667));
        assert_eq!(beat.last_at_or_before(at(72_000)), at(72_000));
        assert_eq!(beat.last_at_or_before(at(71_999)), us(65_333_334));
        assert_eq!(beat.next_after(at(52_000)), us(58_666_667));
        assert_eq!(beat.next_after(us(65_333_334)), at(72_000));
        // A million periods later, still on the same grid.
        let later = 72_000 + 20_000 * 1_000_000;
        assert_eq!(beat.last_at_or_before(at(later)), at(later));
        assert_eq!(
            beat.last_at_or_before(at(later - 1)),
            us((later - 20_000) * 1_000 + 13_333_334)
        );
        // Before the anchor, and before zero, the grid extends backwards.
        assert_eq!(beat.last_at_or_before(at(50_000)), us(45_333_334));
        assert_eq!(beat.last_at_or_before(at(0)), at(0));
        assert_eq!(beat.next_after(at(0)), us(5_333_334));
    }
}
