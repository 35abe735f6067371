//! What the toxics in force do to one connection: which toxics it drew
//! (toxicity), what each direction does to bytes ([`Plan`]), and when the
//! whole connection is closed or reset ([`next_timer`]).

use std::time::Duration;

use belay_proto::rng::{RandomSource, SplitMix64};
use tokio::time::Instant;

use crate::fault::Direction;
use crate::state::{Active, State};
use crate::toxic::ToxicKind;

/// One connection as the toxics see it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Conn {
    /// Seeds this connection's draws (from the proxy's seeded source).
    pub(crate) seed: u64,
    pub(crate) started: Instant,
}

impl Conn {
    /// Whether `active` applies to this connection: a draw against its
    /// toxicity, fixed by the connection's seed and the toxic's id.
    pub(crate) fn chosen(&self, active: &Active) -> bool {
        chosen(self.seed, active)
    }

    /// When `active` took effect on this connection.
    pub(crate) fn since(&self, active: &Active) -> Instant {
        active.added.max(self.started)
    }

    /// This connection's draws for `direction` (jitter, slice sizes).
    pub(crate) fn rng(&self, direction: Direction) -> SplitMix64 {
        let salt = match direction {
            Direction::ClientToServer => 0x5555_5555_5555_5555,
            Direction::ServerToClient => 0xAAAA_AAAA_AAAA_AAAA,
        };
        SplitMix64::new(self.seed ^ salt)
    }

    /// The toxics in `state` acting on `direction` of this connection.
    pub(crate) fn toxics<'a>(
        &'a self,
        state: &'a State,
        direction: Direction,
    ) -> impl Iterator<Item = &'a Active> + 'a {
        state
            .toxics
            .iter()
            .filter(move |a| a.toxic.stream.covers(direction) && self.chosen(a))
    }
}

/// Whether the toxic `active` applies to the connection seeded `seed`.
pub(crate) fn chosen(seed: u64, active: &Active) -> bool {
    let toxicity = active.toxic.toxicity;
    if toxicity >= 1.0 {
        return true;
    }
    let mut draw = SplitMix64::new(seed ^ active.id.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    draw.next_unit() < toxicity
}

/// A slicer's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Slicer {
    average: u64,
    variation: u64,
    pub(crate) pause: Duration,
}

impl Slicer {
    /// The next slice's length: `average ± variation`, uniform, at least 1.
    pub(crate) fn next_len(&self, rng: &mut impl RandomSource) -> usize {
        let span = 2 * self.variation + 1;
        let offset = (rng.next_unit() * span as f64) as u64;
        let len = (self.average - self.variation + offset.min(span - 1)).max(1);
        usize::try_from(len).unwrap_or(usize::MAX)
    }
}

/// What the toxics in force do to one direction of one connection.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Plan {
    /// Stop reading and writing; bytes and FIN wait (blackhole, timeout).
    pub(crate) hold: bool,
    /// Read and throw away; withhold the FIN (discard).
    pub(crate) discard: bool,
    latency_ms: u64,
    jitter_ms: u64,
    /// The lowest bandwidth cap.
    pub(crate) bytes_per_sec: Option<u64>,
    /// The first slicer.
    pub(crate) slicer: Option<Slicer>,
    /// The longest slow close.
    pub(crate) slow_close: Duration,
    /// Data limits: toxic id and bytes allowed after it took effect.
    pub(crate) limits: Vec<(u64, u64)>,
}

impl Plan {
    /// The plan for `direction` of `conn` under `state`.
    pub(crate) fn of(state: &State, conn: &Conn, direction: Direction) -> Plan {
        let mut plan = Plan::default();
        for active in conn.toxics(state, direction) {
            match active.toxic.kind {
                ToxicKind::Blackhole | ToxicKind::Timeout { .. } => plan.hold = true,
                ToxicKind::Discard => plan.discard = true,
                ToxicKind::Latency {
                    latency_ms,
                    jitter_ms,
                } => {
                    plan.latency_ms += latency_ms;
                    plan.jitter_ms += jitter_ms;
                }
                ToxicKind::Bandwidth { bytes_per_sec } => {
                    plan.bytes_per_sec = Some(
                        plan.bytes_per_sec
                            .map_or(bytes_per_sec, |b| b.min(bytes_per_sec)),
                    );
                }
                ToxicKind::Slicer {
                    average_size,
                    size_variation,
                    delay_us,
                } => {
                    plan.slicer.get_or_insert(Slicer {
                        average: average_size,
                        variation: size_variation.min(average_size.saturating_sub(1)),
                        pause: Duration::from_micros(delay_us),
                    });
                }
                ToxicKind::SlowClose { delay_ms } => {
                    plan.slow_close = plan.slow_close.max(Duration::from_millis(delay_ms));
                }
                ToxicKind::LimitData { bytes } => plan.limits.push((active.id, bytes)),
                ToxicKind::ResetPeer { .. }
                | ToxicKind::Refuse { .. }
                | ToxicKind::RefuseUpgrades
                | ToxicKind::AcceptRate { .. } => {}
            }
        }
        plan
    }

    /// The delay of the next chunk: the latencies plus a uniform draw of
    /// up to the jitters either way, never below zero.
    pub(crate) fn delay(&self, rng: &mut impl RandomSource) -> Duration {
        if self.jitter_ms == 0 {
            return Duration::from_millis(self.latency_ms);
        }
        let jitter = self.jitter_ms as f64;
        let ms = self.latency_ms as f64 + (2.0 * rng.next_unit() - 1.0) * jitter;
        Duration::from_secs_f64(ms.max(0.0) / 1000.0)
    }
}

/// What a connection-wide timer does when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timer {
    /// Close both sockets (timeout).
    Close,
    /// Reset both sockets (reset_peer).
    Reset,
}

/// The earliest connection-wide timer of `conn` under `state`, if any.
pub(crate) fn next_timer(state: &State, conn: &Conn) -> Option<(Instant, Timer)> {
    state
        .toxics
        .iter()
        .filter(|a| conn.chosen(a))
        .filter_map(|a| match a.toxic.kind {
            ToxicKind::Timeout { timeout_ms } if timeout_ms > 0 => Some((
                conn.since(a) + Duration::from_millis(timeout_ms),
                Timer::Close,
            )),
            ToxicKind::ResetPeer { timeout_ms } => Some((
                conn.since(a) + Duration::from_millis(timeout_ms),
                Timer::Reset,
            )),
            _ => None,
        })
        .min_by_key(|(at, _)| *at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toxic::{Stream, Toxic};

    fn state_with(toxics: Vec<Toxic>) -> State {
        let mut state = State::default();
        let now = Instant::now();
        for toxic in toxics {
            state.add(toxic, now).unwrap();
        }
        state
    }

    fn conn(seed: u64) -> Conn {
        Conn {
            seed,
            started: Instant::now(),
        }
    }

    #[test]
    fn stacked_toxics_combine_per_direction() {
        let state = state_with(vec![
            Toxic::new(ToxicKind::Latency {
                latency_ms: 100,
                jitter_ms: 0,
            })
            .named("a"),
            Toxic::new(ToxicKind::Latency {
                latency_ms: 50,
                jitter_ms: 0,
            })
            .named("b")
            .on(Stream::Downstream),
            Toxic::new(ToxicKind::Bandwidth { bytes_per_sec: 9 }).on(Stream::Upstream),
            Toxic::new(ToxicKind::Bandwidth { bytes_per_sec: 5 }).named("c"),
        ]);
        let c = conn(1);
        let mut rng = c.rng(Direction::ServerToClient);
        let down = Plan::of(&state, &c, Direction::ServerToClient);
        assert_eq!(down.delay(&mut rng), Duration::from_millis(150));
        assert_eq!(down.bytes_per_sec, Some(5));
        let up = Plan::of(&state, &c, Direction::ClientToServer);
        assert_eq!(up.delay(&mut rng), Duration::from_millis(100));
        assert_eq!(up.bytes_per_sec, Some(5));
    }

    #[test]
    fn jitter_stays_in_bounds_and_repeats_for_a_seed() {
        let plan = Plan {
            latency_ms: 100,
            jitter_ms: 40,
            ..Plan::default()
        };
        let draws = |seed| {
            let mut rng = conn(seed).rng(Direction::ClientToServer);
            (0..200).map(|_| plan.delay(&mut rng)).collect::<Vec<_>>()
        };
        let first = draws(7);
        assert_eq!(first, draws(7), "same seed, same delays");
        assert_ne!(first, draws(8));
        assert!(first.iter().all(|d| (60..=140).contains(&d.as_millis())));
        assert!(first.iter().any(|d| d.as_millis() < 90));
        assert!(first.iter().any(|d| d.as_millis() > 110));
    }

    #[test]
    fn slice_lengths_stay_in_bounds() {
        let slicer = Slicer {
            average: 10,
            variation: 3,
            pause: Duration::ZERO,
        };
        let mut rng = SplitMix64::new(3);
        let lens: Vec<usize> = (0..1000).map(|_| slicer.next_len(&mut rng)).collect();
        assert!(lens.iter().all(|l| (7..=13).contains(l)));
        assert!(lens.contains(&7) && lens.contains(&13));
    }

    #[test]
    fn toxicity_draws_are_fixed_by_seed_and_roughly_fair() {
        let state = state_with(vec![Toxic::new(ToxicKind::Blackhole).with_toxicity(0.3)]);
        let active = &state.toxics[0];
        let picks = |base: u64| (0..1000).filter(|s| chosen(base + s, active)).count();
        assert_eq!(picks(0), picks(0));
        let n = picks(0);
        assert!((200..400).contains(&n), "{n} of 1000 at toxicity 0.3");
    }

    #[test]
    fn timers_count_from_the_later_of_toxic_and_connection() {
        let state = state_with(vec![
            Toxic::new(ToxicKind::Timeout { timeout_ms: 500 }),
            Toxic::new(ToxicKind::ResetPeer { timeout_ms: 200 }),
            Toxic::new(ToxicKind::Timeout { timeout_ms: 0 }).named("forever"),
        ]);
        let c = conn(1);
        let (at, timer) = next_timer(&state, &c).unwrap();
        assert_eq!(timer, Timer::Reset);
        assert_eq!(
            at,
            c.started.max(state.toxics[1].added) + Duration::from_millis(200)
        );
    }
}
