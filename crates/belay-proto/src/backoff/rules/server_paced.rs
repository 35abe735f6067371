//! The server-paced policy: how the way a connection was lost and the
//! server's slots shape the delay (spec §6.4).

use std::time::Duration;

use super::super::formula::{draw_jitter_ms, whole_ms};
use super::super::pacing::{PacingSlots, MAX_PACING_PERIOD};
use super::super::policy::BackoffPolicy;
use super::PolicyState;
use crate::rng::RandomSource;
use crate::time::Instant;

/// How the connection before this delay was lost, as far as the backoff
/// cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Loss {
    /// The loss was reported (a close, a reset, a refused attempt): it may
    /// be this client's alone, so a server-paced policy takes its fast path.
    Noticed,
    /// The connection went silent and the session's own heartbeat declared
    /// it dead. A server that froze or vanished is lost this way by its
    /// whole fleet, noticed spread over the heartbeat's window: fast
    /// attempts would land on top of the slot traffic of those who noticed
    /// earlier (docs/SIMULATION.md, "Detection spread"), so a server-paced
    /// policy that knows its slots waits for its next one instead. The
    /// client has already spent the heartbeat's timeout noticing, so the
    /// wait (at most one period) is a smaller share of its time away.
    Silent,
    /// Silent, and the last frame was the server's ping on the fleet's beat
    /// ([`Beat::from_pacing`](crate::heartbeat::Beat::from_pacing)): a fleet
    /// that lost its server this way notices it spread evenly over the
    /// beat's `interval`, the server's ping interval. (A death our own
    /// probes notice is [`Loss::Silent`]: their beat is set on the slots,
    /// so the next slot comes right after the notice.) When
    /// that is at least 0.95 of the slot period, the notices
    /// themselves arrive no faster than the slots would bring the fleet
    /// back, so a server-paced policy attempts at once and, while that
    /// fails, one period (or one beat, if longer) later each time: the
    /// fleet's attempts keep the notices' even spacing, and those who
    /// noticed while the server was down come back after the last notice.
    /// With a shorter beat, as after [`Loss::Silent`].
    Beat {
        /// The beat's interval.
        interval: Duration,
    },
}

/// Whether notices spread over a beat of `interval` come no faster than the
/// server admits: `interval ≥ 0.95 × period`, the time the whole fleet takes
/// at the admission rate when the plan keeps the default headroom (0.95).
fn beat_spreads_the_fleet(interval: Duration, period: Duration) -> bool {
    interval.as_micros().saturating_mul(20) >= period.as_micros().saturating_mul(19)
}

impl PolicyState {
    /// The delay for attempt `n` of `server_paced { first_window, fallback }`.
    // `next_delay`'s arguments, plus the two fields of the policy.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn server_paced_delay(
        &mut self,
        first_window: Duration,
        fallback: &BackoffPolicy,
        n: u32,
        now: Instant,
        slots: Option<&PacingSlots>,
        loss: Loss,
        rng: &mut dyn RandomSource,
    ) -> Duration {
        let window = whole_ms(first_window);
        if let (Some(interval), Some(slots)) = (self.on_beat, slots) {
            // Noticed on a spreading beat: one period after the last
            // attempt, or one beat if that is longer (then every
            // retry comes after the last notice), no draw.
            return slots.period().max(interval).min(MAX_PACING_PERIOD);
        }
        if n == 0 && window > 0 {
            match (loss, slots) {
                (Loss::Beat { interval }, Some(slots))
                    if beat_spreads_the_fleet(interval, slots.period()) =>
                {
                    // The notice is the fleet's spread: at once.
                    self.on_beat = Some(interval);
                    return Duration::ZERO;
                }
                (Loss::Silent | Loss::Beat { .. }, Some(slots)) => {
                    // No fast path after a silent loss: the next
                    // slot, no draw. The fallback then starts at its
                    // attempt 0 on our attempt 1, as after the fast
                    // path.
                    return slots.next_slot_after(now).saturating_duration_since(now);
                }
                _ => {}
            }
            Duration::from_millis(draw_jitter_ms(0, window, rng))
        } else {
            // The fast path used attempt 0, so the fallback starts at
            // its own attempt 0 on our attempt 1; without a fast path
            // the numbering is shared.
            let m = if window > 0 { n.saturating_sub(1) } else { n };
            let state = self.fallback.get_or_insert_with(Box::default);
            let delay = state.next_delay(fallback, m, now, None, Loss::Noticed, rng);
            match slots {
                // The fallback still escalates; its delay is snapped
                // forward onto the server's grid so the fleet stays
                // spread. Exact to the microsecond: the only
                // non-whole-ms delay.
                Some(slots) => slots
                    .next_slot_after(now + delay)
                    .saturating_duration_since(now),
                None => delay,
            }
        }
    }
}
