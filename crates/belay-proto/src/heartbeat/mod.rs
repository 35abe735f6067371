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
//! one (beats are at most `interval` apart; the one rest of a server's ping
//! beat set on the slots, [`Beat::for_pings`], is 250 ms longer).

use std::time::Duration;

use crate::time::Instant;

mod beat;
mod ping_beat;

pub use beat::Beat;
pub use ping_beat::notice_after_ping;

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
    /// beat instant after the last frame (never later, but for the 250 ms of
    /// a ping beat's rest, [`Beat::for_pings`]: beats are at most
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
mod tests;
