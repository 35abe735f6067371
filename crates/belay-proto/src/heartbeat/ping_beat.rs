//! The beat of a pinging server's pings.
//!
//! A client of a server that pings notices a silent death a fixed time
//! after the last ping it got ([`notice_after_ping`]). Where that last ping
//! falls decides when the fleet notices, and whether each client notices
//! before its slot:
//!
//! * With a ping interval `I` of at least 0.95 of the slot period `P`, a
//!   client that notices on the server's beat attempts at once (spec §6.4):
//!   the notices themselves are the fleet's spread, so the pings only need
//!   to be spread evenly over the interval, at each client's place in the
//!   plan ([`Beat::from_pacing`]).
//! * With a shorter interval (a fleet of more than `0.95 × I` of
//!   admissions: 12,500 clients at 500/s on a 25 s ping) the client waits
//!   for its next slot after it notices. The pings are then **set on its
//!   slots**: one ping `notice + 250 ms` before each slot (the lead ping),
//!   the next `I + 250 ms` after it (the rest; for a period under
//!   `I + 250 ms` the margin shrinks to `P − I`), and the rest of the period
//!   covered by `⌈(P − I − 250 ms) / I⌉` evenly spaced pings. A death in the
//!   rest is noticed 250 ms before that slot; a death anywhere else before
//!   the next lead ping, so before the slot after it. Either way each client
//!   attempts at its first slot strictly after `death + notice − I`, the
//!   fleet's first notice: every client attempts once, in the one period
//!   that follows that first notice, and none finds its slot passed
//!   (docs/SIMULATION.md, "With belay-server's own pings").
//!
//! The rest is the one gap longer than `I`, by 250 ms (room for a timer
//! that fires late, as for the probes' beat): far inside the client's
//! watchdog (`2 × I`) and its own probe (`1.5 × I`). The server cannot know
//! each client's probe settings; the lead assumes the defaults (spec §2.6:
//! probe interval and timeout 10 s). A client with other settings notices
//! earlier or later by the difference and may wait one more period for its
//! slot; it is never refused for it.

use std::time::Duration;

use super::beat::{clamped_period_ms, SLOT_MARGIN};
use super::Beat;
use crate::message::Pacing;
use crate::time::Instant;

/// The client's defaults (`client::Config::default()`, spec §2.6).
const DEFAULT_PROBE_INTERVAL_MS: u128 = 10_000;
const DEFAULT_PROBE_TIMEOUT_MS: u128 = 10_000;

/// The client's clamp of an advertised ping interval (spec §3.2,
/// `MIN_SERVER_PING_MS`, `MAX_SERVER_PING_MS`).
const PING_CLAMP_MS: (u128, u128) = (1_000, 120_000);

/// How long after the last ping of a server pinging every `interval` a
/// client with the default probe settings declares a silent connection
/// dead (spec §3.3): its probe `max(10 s, 1.5 × I) + 10 s` after that ping,
/// or its watchdog `2 × I` after it, whichever comes first, with `I` the
/// interval as the client clamps it (`[1 s, 120 s]`). 47.5 s for 25 s
/// pings, 16 s (the watchdog) for 8 s.
pub fn notice_after_ping(interval: Duration) -> Duration {
    let ms = notice_after_ping_ms(interval.as_millis());
    Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
}

fn notice_after_ping_ms(interval_ms: u128) -> u128 {
    let i = interval_ms.clamp(PING_CLAMP_MS.0, PING_CLAMP_MS.1);
    let probe = DEFAULT_PROBE_INTERVAL_MS.max(i * 3 / 2) + DEFAULT_PROBE_TIMEOUT_MS;
    probe.min(2 * i)
}

impl Beat {
    /// The beat on which a server pinging every `interval` pings an idle
    /// connection, from the pacing of the `welcome` it sent at `anchor`.
    /// `None` if the pacing carries no origin or the interval is under a
    /// millisecond.
    ///
    /// In whole milliseconds, with `P` the clamped period and `I` the
    /// interval: if `20 × I ≥ 19 × P`, [`Beat::from_pacing`]. Otherwise,
    /// with `φ` the phase reduced modulo `P`, `n` =
    /// [`notice_after_ping`]`(I)`, the margin `g = min(250 ms, P − I)`, the
    /// rest `r = I + g` and `s = P − r`, every period holds the beats
    ///
    /// ```text
    /// first = anchor + (φ − n − g + r) mod P               the end of a rest
    /// beats = first + k × P + ⌈j × s / m⌉,  j in [0, m],  m = ⌈s / I⌉
    /// ```
    ///
    /// the last of which (`j = m`) is the lead beat, `n + g` before a slot,
    /// followed by the rest (with `s = 0`: one beat per period, the lead
    /// beat). See the module docs for why.
    pub fn for_pings(pacing: &Pacing, interval: Duration, anchor: Instant) -> Option<Beat> {
        let interval_ms = interval.as_millis();
        let period = clamped_period_ms(pacing);
        if pacing.origin_ms.is_none() || interval_ms == 0 || interval_ms * 20 >= period * 19 {
            return Beat::from_pacing(pacing, interval, anchor);
        }
        // Here I < 0.95 P. The margin is room for a timer that fires late,
        // at most what the period leaves after one interval: the rest must
        // fit in the period for every death to be noticed in time.
        let margin = SLOT_MARGIN.as_millis().min(period - interval_ms);
        let lead = (notice_after_ping_ms(interval_ms) + margin) % period;
        let rest = interval_ms + margin;
        let phase = u128::from(pacing.phase_ms) % period;
        let first = (phase + period - lead + rest) % period;
        let span = period - rest;
        let at = anchor.saturating_add(Duration::from_millis(u64::try_from(first).unwrap_or(0)));
        if span == 0 {
            return Beat::spread(at, period * 1_000, 1, 0);
        }
        let per_period = u32::try_from(span.div_ceil(interval_ms)).unwrap_or(u32::MAX);
        Beat::spread(at, period * 1_000, per_period, rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pacing(period_ms: u64, phase_ms: u64) -> Pacing {
        Pacing {
            period_ms,
            phase_ms,
            origin_ms: Some(0),
        }
    }

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn the_notice_is_the_probe_or_the_watchdog_whichever_first() {
        assert_eq!(notice_after_ping(secs(25)), Duration::from_millis(47_500));
        assert_eq!(notice_after_ping(secs(8)), secs(16));
        assert_eq!(notice_after_ping(Duration::from_millis(10)), secs(2));
        assert_eq!(notice_after_ping(secs(1_000)), secs(190));
    }

    #[test]
    fn a_beat_long_enough_for_the_fleet_stays_at_the_place_in_the_plan() {
        let p = pacing(20_000, 5_000);
        for interval in [secs(19), secs(25)] {
            assert_eq!(
                Beat::for_pings(&p, interval, at(50_000)),
                Beat::from_pacing(&p, interval, at(50_000))
            );
        }
        let no_origin = Pacing {
            origin_ms: None,
            ..p
        };
        assert_eq!(Beat::for_pings(&no_origin, secs(8), at(0)), None);
    }

    #[test]
    fn a_short_beat_leads_each_slot_by_the_notice_then_rests() {
        // Slots at 50 000 + 12 000 + k × 42 000; 25 s pings are noticed
        // 47.5 s after the last: the lead beat of the slot at 104 000 is at
        // 56 250 (and 42 s later at 98 250), the next beat 25.25 s after it
        // (81 500), and ⌈16 750 / 25 000⌉ = 1 gap of 16.75 s to the next
        // lead beat.
        let beat = Beat::for_pings(&pacing(42_000, 12_000), secs(25), at(50_000)).unwrap();
        assert_eq!(beat.last_at_or_before(at(81_499)), at(56_250));
        assert_eq!(beat.next_after(at(56_250)), at(81_500));
        assert_eq!(beat.next_after(at(81_500)), at(98_250));
        assert_eq!(beat.next_after(at(98_250)), at(123_500));
        assert_eq!(beat.interval(), Duration::from_millis(16_750));
        // Wherever the death falls, the last ping plus the notice comes
        // before the client's first slot after the fleet's first notice
        // (the death + 47.5 s − 25 s), and no ping is more than the rest
        // after the one before.
        for death in (50_000..200_000).step_by(125) {
            let last_ping = beat.last_at_or_before(at(death)).as_millis();
            let noticed = last_ping + 47_500;
            let first_notice = death + 22_500;
            let slot = 62_000 + ((first_notice - 62_000) / 42_000 + 1) * 42_000;
            assert!(
                noticed < slot,
                "death {death}: noticed {noticed}, slot {slot}"
            );
            assert!(noticed + 42_000 > slot, "death {death}: not a period early");
            assert!(death - last_ping <= 25_250, "death {death}");
        }
    }

    #[test]
    fn every_client_notices_within_the_period_before_its_slot() {
        // For any period the interval does not spread, any phase and any
        // moment of the death: the last ping plus the notice falls in the
        // period before the client's first slot strictly after
        // `death + notice − I`, so it attempts in that slot. Pings never
        // more than the rest apart.
        let cases = [
            (42_000, 25_000),
            (30_000, 25_000), // the lead is longer than the period
            (21_052, 8_000),
            (100_000, 8_000),
            (5_000, 2_000),
            (2_200, 2_000), // one ping per period
            (9_001, 3_000),
            (3_600_000, 120_000),
        ];
        for (period, interval) in cases {
            let notice = notice_after_ping(Duration::from_millis(interval)).as_millis() as u64;
            for phase in [0, 1, period / 3, period - 1] {
                let anchor = 1_000_000;
                let beat = Beat::for_pings(
                    &pacing(period, phase),
                    Duration::from_millis(interval),
                    at(anchor),
                )
                .unwrap();
                let first_slot = anchor + phase;
                let step = (period / 97).max(1);
                let mut death = anchor + 10 * period;
                while death < anchor + 13 * period {
                    let last = beat.last_at_or_before(at(death)).as_millis();
                    assert!(
                        death - last <= interval + 250,
                        "{period}/{interval}: {death}"
                    );
                    let noticed = last + notice;
                    let from = death + notice - interval;
                    let slot = first_slot + ((from - first_slot) / period + 1) * period;
                    assert!(
                        noticed < slot && noticed + period > slot,
                        "{period}/{interval}/{phase}: death {death}, noticed {noticed}, slot {slot}"
                    );
                    death += step;
                }
            }
        }
    }

    #[test]
    fn a_long_period_gets_evenly_spaced_pings_after_the_rest() {
        // 8 s pings (noticed after 16 s: lead 16 250) on a 2 105 263 ms
        // period: a rest of 8 250 ms, then ⌈2 097 013 / 8 000⌉ = 263 gaps.
        let beat = Beat::for_pings(&pacing(2_105_263, 1_000_000), secs(8), at(0)).unwrap();
        let lead = at(1_000_000 - 16_250);
        assert_eq!(beat.last_at_or_before(lead), lead);
        assert_eq!(beat.next_after(lead), at(1_000_000 - 8_000));
        let gap = beat.interval();
        assert!(
            gap < secs(8) && gap > Duration::from_millis(7_970),
            "{gap:?}"
        );
        let mut t = beat.next_after(lead);
        for _ in 0..263 {
            let next = beat.next_after(t);
            assert!(next - t <= secs(8), "{t:?} → {next:?}");
            t = next;
        }
        assert_eq!(t, at(lead.as_millis() + 2_105_263));
    }

    #[test]
    fn a_period_within_the_rest_gets_one_ping_per_period() {
        // 2 s pings on a 2 200 ms period: 20 × 2 000 < 19 × 2 200, and the
        // period leaves 200 ms after an interval: the margin, and a rest of
        // the whole period, the lead beat alone.
        let beat = Beat::for_pings(&pacing(2_200, 1_000), secs(2), at(0)).unwrap();
        assert_eq!(beat.interval(), Duration::from_millis(2_200));
        // Noticed 4 s after the ping (the watchdog): lead 4 200, i.e.
        // 1 000 − 4 200 mod 2 200 = 1 200.
        assert_eq!(beat.last_at_or_before(at(1_200)), at(1_200));
        assert_eq!(beat.next_after(at(1_200)), at(3_400));
    }

    #[test]
    fn extremes_do_not_panic() {
        let p = Pacing {
            period_ms: u64::MAX,
            phase_ms: u64::MAX,
            origin_ms: Some(u64::MAX),
        };
        let beat = Beat::for_pings(&p, Duration::from_millis(1), Instant::MAX).unwrap();
        let _ = beat.next_after(Instant::ZERO);
        let _ = beat.last_at_or_before(Instant::MAX);
        assert_eq!(Beat::for_pings(&p, Duration::ZERO, Instant::ZERO), None);
    }
}
