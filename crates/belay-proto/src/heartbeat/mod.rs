//! Liveness: is the peer still sending us anything?
//!
//! Two checks run side by side, and both treat **every inbound frame as proof
//! of life**, not only pongs:
//!
//! * [`decide`] is the client probe policy as a pure function of timestamps.
//!   A probe (`ping`) is sent only after the connection has been quiet for the
//!   interval; its deadline is fixed when it is sent and is never extended.
//!   A busy connection sends no probes at all.
//! * [`ServerPingWatchdog`] covers the other model: the server pings at an
//!   interval it advertises, and the client gives up after two intervals
//!   without any frame.
//!
//! [`Heartbeat`] wraps both into a small state machine with the core's
//! `handle_*`/`poll_*` shape. It is evaluated at exact deadlines rather than
//! on a coarse tick, so the worst case from the last frame to the close
//! decision is `interval + timeout` (a driver that ticks every `interval`
//! instead sees `2 × interval + timeout`; the pure function gives the same
//! answers either way). An idle connection (its last frame the answer to our
//! own probe, or the `welcome`) that knows the fleet's [`Beat`] probes on it:
//! at the first beat instant after the last frame, never later than without
//! one (beats are at most `interval` apart).

use std::time::Duration;

use crate::time::Instant;

mod beat;

pub use beat::Beat;

/// What the probe policy says to do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum HeartbeatAction {
    /// Nothing to do yet.
    Wait,
    /// The connection has been quiet for the interval: send a probe now.
    Probe,
    /// A probe went unanswered for the timeout: the connection is dead.
    Close,
}

/// The probe policy as a pure function.
///
/// * `last_received_at`: when the last frame of any kind arrived (or the
///   transport opened, if nothing arrived yet).
/// * `pending_probe_at`: when the outstanding probe was sent; `None` if no
///   probe is outstanding (any inbound frame clears it).
///
/// Comparisons are `>=`: with a strict `>` a coarse clock can cost a whole
/// tick. A pending probe is judged only by its own send time, so ticks never
/// extend its deadline and a second probe is never sent while one is pending.
pub fn decide(
    last_received_at: Instant,
    pending_probe_at: Option<Instant>,
    now: Instant,
    interval: Duration,
    timeout: Duration,
) -> HeartbeatAction {
    match pending_probe_at {
        Some(sent_at) if now.saturating_duration_since(sent_at) >= timeout => {
            HeartbeatAction::Close
        }
        Some(_) => HeartbeatAction::Wait,
        None if now.saturating_duration_since(last_received_at) >= interval => {
            HeartbeatAction::Probe
        }
        None => HeartbeatAction::Wait,
    }
}

/// Watchdog for server-sent pings: closes after `2 × interval` without any frame.
///
/// The server advertises its ping interval in `welcome`, so it can change
/// the rate without a client release. Two intervals tolerate one lost or late
/// ping without a false alarm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerPingWatchdog {
    interval: Duration,
}

impl ServerPingWatchdog {
    /// A watchdog for a server that pings every `interval`.
    pub fn new(interval: Duration) -> Self {
        ServerPingWatchdog { interval }
    }

    /// The advertised interval.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The instant at which the connection is declared dead if nothing
    /// arrives after `last_received_at`.
    pub fn deadline(&self, last_received_at: Instant) -> Instant {
        last_received_at.saturating_add(self.interval.saturating_mul(2))
    }

    /// Whether the connection is dead at `now`.
    pub fn expired(&self, last_received_at: Instant, now: Instant) -> bool {
        now >= self.deadline(last_received_at)
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Why a [`Heartbeat`] declared the connection dead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LivenessFailure {
    /// Our probe was not answered (nor was anything else received) in time.
    ProbeUnanswered,
    /// The server's advertised pings stopped arriving.
    ServerPingsMissing,
}

/// Liveness of one transport: the probe policy plus the server-ping watchdog.
///
/// As small as it was before the beat (80 B): every server connection holds
/// one, and belay-server keeps a connection's task inside an allocator size
/// class (its `task_size` test).
#[derive(Debug, Clone)]
pub struct Heartbeat {
    /// The probe interval in µs.
    interval_us: u64,
    /// The probe timeout in µs.
    timeout_us: u64,
    last_received_at: Instant,
    /// When the outstanding probe was sent; meaningful while `pending`.
    pending_at: Instant,
    /// The server-ping watchdog's interval in µs; 0: none.
    watchdog_us: u64,
    probes_sent: u64,
    /// The fleet's beat, followed while idle.
    beat: Option<Beat>,
    pending: bool,
    /// The last frame was the answer to our probe (or the `welcome`): the
    /// connection is idle and probes on the beat, if it knows one.
    idle: bool,
    /// The server pings idle connections on the fleet's beat, at the
    /// watchdog's interval.
    server_beat: bool,
    /// The last frame was the server's ping.
    last_was_ping: bool,
}

impl Heartbeat {
    /// Start watching a transport that opened (or last spoke) at `now`.
    pub fn new(now: Instant, interval: Duration, timeout: Duration) -> Self {
        Heartbeat {
            interval_us: micros(interval),
            timeout_us: micros(timeout),
            last_received_at: now,
            pending_at: now,
            watchdog_us: 0,
            probes_sent: 0,
            beat: None,
            pending: false,
            idle: true,
            server_beat: false,
            last_was_ping: false,
        }
    }

    /// Whether the server pings this connection on the fleet's beat while it
    /// is idle, at the interval of [`set_server_ping_interval`](Self::set_server_ping_interval).
    pub fn set_server_beat(&mut self, on: bool) {
        self.server_beat = on;
    }

    /// Probe on the fleet's beat while idle (or, with `None`, `interval`
    /// after the last frame, always): at the first beat instant after the
    /// last frame. Build it for this heartbeat's interval
    /// ([`Beat::for_probes`], [`Beat::from_pacing`]), so that beats are at
    /// most `interval` apart.
    pub fn set_beat(&mut self, beat: Option<Beat>) {
        self.beat = beat;
    }

    /// The beat this heartbeat follows while idle, if any.
    pub fn beat(&self) -> Option<Beat> {
        self.beat
    }

    fn interval(&self) -> Duration {
        Duration::from_micros(self.interval_us)
    }

    fn timeout(&self) -> Duration {
        Duration::from_micros(self.timeout_us)
    }

    /// Arm (or with `None`, disarm) the server-ping watchdog.
    pub fn set_server_ping_interval(&mut self, interval: Option<Duration>) {
        self.watchdog_us = interval.map_or(0, |i| micros(i).max(1));
    }

    fn watchdog(&self) -> Option<ServerPingWatchdog> {
        (self.watchdog_us > 0)
            .then(|| ServerPingWatchdog::new(Duration::from_micros(self.watchdog_us)))
    }

    /// Any frame from the peer: proof of life.
    pub fn handle_frame(&mut self, now: Instant) {
        self.last_received_at = self.last_received_at.max(now);
        self.pending = false;
        self.idle = false;
        self.last_was_ping = false;
    }

    /// The server's ping: proof of life, and (if the server pings on the
    /// beat) the last frame a silent death would leave on the beat.
    pub fn handle_ping(&mut self, now: Instant) {
        self.handle_frame(now);
        self.last_was_ping = true;
    }

    /// The answer to our probe: proof of life, and the connection is idle.
    pub fn handle_pong(&mut self, now: Instant) {
        self.handle_frame(now);
        self.idle = true;
    }

    /// When the next probe is due if nothing arrives: `interval` after the
    /// last frame, or, on an idle connection that knows its beat, the first
    /// beat instant after the last frame (never later: beats are at most
    /// `interval` apart), so an idle connection probes on every beat.
    pub fn probe_due_at(&self) -> Instant {
        match (self.beat, self.idle) {
            (Some(beat), true) => beat.next_after(self.last_received_at),
            _ => self.last_received_at.saturating_add(self.interval()),
        }
    }

    /// If the connection was declared dead at `now` by the heartbeat and
    /// its last sign of life was the server's ping on the server's beat: the
    /// server's ping interval, over which a fleet that lost its server this
    /// way notices it, evenly spread. (A death noticed by our own probes on
    /// a beat set on the slots is a plain silent loss: the next slot is
    /// right after the notice.)
    pub fn noticed_on_beat(&self, now: Instant) -> Option<Duration> {
        let watchdog = self.watchdog()?;
        let probe_expired = self
            .pending_probe_at()
            .is_some_and(|sent| now.saturating_duration_since(sent) >= self.timeout());
        let watchdog_expired = watchdog.expired(self.last_received_at, now);
        (self.server_beat && self.last_was_ping && (probe_expired || watchdog_expired))
            .then_some(watchdog.interval())
    }

    /// When the last frame arrived.
    pub fn last_received_at(&self) -> Instant {
        self.last_received_at
    }

    /// When the outstanding probe was sent, if one is outstanding.
    pub fn pending_probe_at(&self) -> Option<Instant> {
        self.pending.then_some(self.pending_at)
    }

    /// Probes sent over the life of this heartbeat.
    pub fn probes_sent(&self) -> u64 {
        self.probes_sent
    }

    /// Evaluate at `now`. Returns `Probe` at most once per quiet period (the
    /// caller must send the probe), and `Close` with its cause once the
    /// peer is considered dead. Calling early is a harmless `Wait`.
    pub fn handle_timeout(&mut self, now: Instant) -> Result<HeartbeatAction, LivenessFailure> {
        if let Some(watchdog) = self.watchdog() {
            if watchdog.expired(self.last_received_at, now) {
                return Err(LivenessFailure::ServerPingsMissing);
            }
        }
        // `decide`, with the probe due on the beat when there is one.
        let action = match self.pending_probe_at() {
            Some(sent) => decide(
                self.last_received_at,
                Some(sent),
                now,
                self.interval(),
                self.timeout(),
            ),
            None if now >= self.probe_due_at() => HeartbeatAction::Probe,
            None => HeartbeatAction::Wait,
        };
        match action {
            HeartbeatAction::Close => Err(LivenessFailure::ProbeUnanswered),
            HeartbeatAction::Probe => {
                self.pending = true;
                self.pending_at = now;
                self.probes_sent = self.probes_sent.saturating_add(1);
                Ok(HeartbeatAction::Probe)
            }
            HeartbeatAction::Wait => Ok(HeartbeatAction::Wait),
        }
    }

    /// The next instant at which [`Heartbeat::handle_timeout`] can change anything.
    pub fn poll_timeout(&self) -> Instant {
        let probe_or_close = match self.pending_probe_at() {
            Some(sent_at) => sent_at.saturating_add(self.timeout()),
            None => self.probe_due_at(),
        };
        match self.watchdog() {
            Some(w) => probe_or_close.min(w.deadline(self.last_received_at)),
            None => probe_or_close,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const I: Duration = Duration::from_secs(10);
    const T: Duration = Duration::from_secs(25);

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    #[test]
    fn probe_sent_at_20s_closes_at_exactly_45s_and_not_before() {
        let received = ms(1);
        assert_eq!(
            decide(received, None, ms(10_000), I, T),
            HeartbeatAction::Wait
        );
        assert_eq!(
            decide(received, None, ms(20_000), I, T),
            HeartbeatAction::Probe
        );
        let probe = Some(ms(20_000));
        for now in [30_000, 40_000, 44_999] {
            assert_eq!(
                decide(received, probe, ms(now), I, T),
                HeartbeatAction::Wait
            );
        }
        let just_before = ms(45_000) - Duration::from_micros(1);
        assert_eq!(
            decide(received, probe, just_before, I, T),
            HeartbeatAction::Wait
        );
        assert_eq!(
            decide(received, probe, ms(45_000), I, T),
            HeartbeatAction::Close
        );
    }

    #[test]
    fn quiet_for_exactly_the_interval_probes() {
        assert_eq!(
            decide(ms(0), None, ms(10_000), I, T),
            HeartbeatAction::Probe
        );
        assert_eq!(decide(ms(0), None, ms(9_999), I, T), HeartbeatAction::Wait);
    }

    #[test]
    fn frames_faster_than_the_interval_produce_zero_probes() {
        let mut hb = Heartbeat::new(ms(0), I, T);
        let mut now = 0;
        while now < 600_000 {
            now += 9_000;
            assert_eq!(hb.handle_timeout(ms(now)), Ok(HeartbeatAction::Wait));
            hb.handle_frame(ms(now));
        }
        assert_eq!(hb.probes_sent(), 0);
    }

    #[test]
    fn late_pong_after_the_deadline_but_before_the_next_tick_saves_the_connection() {
        let received = ms(1);
        let probe = Some(ms(20_000));
        // The pong arrives at 46 s, after the 45 s deadline; the next tick is at 50 s.
        let received_after_pong = ms(46_000);
        let pending_after_pong = None;
        assert_eq!(
            decide(received, probe, ms(45_000), I, T),
            HeartbeatAction::Close
        );
        assert_eq!(
            decide(received_after_pong, pending_after_pong, ms(50_000), I, T),
            HeartbeatAction::Wait
        );

        let mut hb = Heartbeat::new(ms(0), I, T);
        assert_eq!(hb.handle_timeout(ms(20_000)), Ok(HeartbeatAction::Probe));
        hb.handle_frame(ms(46_000));
        assert_eq!(hb.handle_timeout(ms(50_000)), Ok(HeartbeatAction::Wait));
        assert_eq!(hb.pending_probe_at(), None);
    }

    #[test]
    fn tick_after_a_long_suspend_closes_at_once() {
        let mut hb = Heartbeat::new(ms(0), I, T);
        assert_eq!(hb.handle_timeout(ms(10_000)), Ok(HeartbeatAction::Probe));
        // The device slept for an hour; the first tick after resume finds the old probe.
        assert_eq!(
            hb.handle_timeout(ms(3_610_000)),
            Err(LivenessFailure::ProbeUnanswered)
        );
    }

    #[test]
    fn later_ticks_never_extend_a_pending_probe_or_send_a_second() {
        let mut hb = Heartbeat::new(ms(0), I, T);
        assert_eq!(hb.handle_timeout(ms(10_000)), Ok(HeartbeatAction::Probe));
        for now in [20_000, 30_000, 34_999] {
            assert_eq!(hb.handle_timeout(ms(now)), Ok(HeartbeatAction::Wait));
        }
        assert_eq!(hb.probes_sent(), 1);
        assert_eq!(hb.poll_timeout(), ms(35_000));
        assert_eq!(
            hb.handle_timeout(ms(35_000)),
            Err(LivenessFailure::ProbeUnanswered)
        );
    }

    #[test]
    fn exact_deadline_evaluation_closes_within_interval_plus_timeout() {
        let mut hb = Heartbeat::new(ms(0), I, T);
        hb.handle_frame(ms(1));
        let mut now = hb.poll_timeout();
        assert_eq!(now, ms(10_001));
        assert_eq!(hb.handle_timeout(now), Ok(HeartbeatAction::Probe));
        now = hb.poll_timeout();
        assert_eq!(now, ms(35_001));
        assert_eq!(
            hb.handle_timeout(now),
            Err(LivenessFailure::ProbeUnanswered)
        );
    }

    #[test]
    fn server_ping_watchdog_closes_after_two_intervals_of_silence() {
        let mut hb = Heartbeat::new(ms(0), Duration::from_secs(60), Duration::from_secs(60));
        hb.set_server_ping_interval(Some(Duration::from_secs(25)));
        hb.handle_frame(ms(25_000));
        assert_eq!(hb.poll_timeout(), ms(75_000));
        assert_eq!(hb.handle_timeout(ms(74_999)), Ok(HeartbeatAction::Wait));
        assert_eq!(
            hb.handle_timeout(ms(75_000)),
            Err(LivenessFailure::ServerPingsMissing)
        );
    }

    #[test]
    fn a_frame_from_the_past_never_moves_the_quiet_timer_backwards() {
        let mut hb = Heartbeat::new(ms(5_000), I, T);
        hb.handle_frame(ms(1_000));
        assert_eq!(hb.last_received_at(), ms(5_000));
    }

    /// A heartbeat (10 s interval, 5 s timeout) started by a `welcome` at
    /// 1 s whose pacing puts this client at place 0.5 of a plan that began
    /// at -2 s: beats at 3 s + k × 10 s.
    fn on_a_beat_at_3s() -> Heartbeat {
        use crate::message::Pacing;
        let pacing = Pacing {
            period_ms: 20_000,
            phase_ms: 7_000,
            origin_ms: Some(3_000),
        };
        let mut hb = Heartbeat::new(ms(1_000), I, Duration::from_secs(5));
        hb.set_beat(Beat::from_pacing(&pacing, I, ms(1_000)));
        hb
    }

    #[test]
    fn an_idle_connection_probes_on_the_beat_and_a_busy_one_after_the_interval() {
        let mut hb = on_a_beat_at_3s();
        assert_eq!(hb.poll_timeout(), ms(3_000));
        assert_eq!(hb.handle_timeout(ms(3_000)), Ok(HeartbeatAction::Probe));
        hb.handle_pong(ms(3_200));
        assert_eq!(hb.poll_timeout(), ms(13_000));
        hb.handle_frame(ms(4_000));
        assert_eq!(hb.poll_timeout(), ms(14_000));
    }

    #[test]
    fn only_the_servers_beat_ping_makes_a_loss_noticed_on_the_beat() {
        // Our own probe on the beat, unanswered: a plain silent loss.
        let mut hb = on_a_beat_at_3s();
        assert_eq!(hb.handle_timeout(ms(3_000)), Ok(HeartbeatAction::Probe));
        assert_eq!(
            hb.handle_timeout(ms(8_000)),
            Err(LivenessFailure::ProbeUnanswered)
        );
        assert_eq!(hb.noticed_on_beat(ms(8_000)), None);

        // The server pings on its beat every 20 s: its ping the last frame.
        let mut pinged = Heartbeat::new(ms(1_000), Duration::from_secs(30), T);
        pinged.set_server_ping_interval(Some(Duration::from_secs(20)));
        pinged.set_server_beat(true);
        pinged.handle_ping(ms(8_000));
        assert_eq!(pinged.noticed_on_beat(ms(47_999)), None);
        assert_eq!(
            pinged.handle_timeout(ms(48_000)),
            Err(LivenessFailure::ServerPingsMissing)
        );
        assert_eq!(
            pinged.noticed_on_beat(ms(48_000)),
            Some(Duration::from_secs(20))
        );
    }

    #[test]
    fn the_heartbeat_is_no_larger_than_before_the_beat() {
        assert!(std::mem::size_of::<Heartbeat>() <= 80);
    }

    #[test]
    fn whenever_the_death_falls_an_idle_client_on_its_beat_notices_before_its_slot() {
        use crate::backoff::PacingSlots;
        use crate::message::Pacing;
        let timeout = Duration::from_secs(5);
        let margin = Duration::from_millis(250);
        let anchor = ms(50_000);
        let cases = [
            (20_000, 10),
            (21_053, 15),
            (21_053, 7),
            (60_000, 25),
            (20_000, 20),
            (21_053, 25),
            (20_000, 45),
        ];
        for (period_ms, interval_s) in cases {
            let interval = Duration::from_secs(interval_s);
            let pacing = Pacing {
                period_ms,
                phase_ms: 7_000,
                origin_ms: Some(3_000),
            };
            let beat = Beat::for_probes(&pacing, interval, timeout, anchor);
            let phase = Duration::from_millis(7_000);
            let slots = PacingSlots::new(Duration::from_millis(period_ms), phase, anchor);
            let mut death = 60_000_u64;
            while death < 60_000 + 3 * period_ms {
                // Idle: its last probe before the death was answered at once.
                let mut hb = Heartbeat::new(anchor, interval, timeout);
                hb.set_beat(beat);
                hb.handle_pong(beat.unwrap().last_at_or_before(ms(death)));
                let noticed = hb.probe_due_at().saturating_add(timeout);
                let next = slots.next_slot_after(noticed);
                let what = format!("P {period_ms}, I {interval_s} s, death {death}: {noticed:?}");
                if interval_s * 1_000 < period_ms {
                    // Before its first slot after the death, except those
                    // under the margin after the earliest possible notice,
                    // which no client can reach.
                    assert_eq!(
                        next,
                        slots.next_slot_after(ms(death) + timeout + margin),
                        "{what}"
                    );
                } else {
                    // On a beat before one of its slots.
                    assert_eq!(next, noticed + margin, "{what}");
                }
                death += 137;
            }
        }
    }
}
