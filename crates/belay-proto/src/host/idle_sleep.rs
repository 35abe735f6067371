//! The host's half: whether to hold the Belay session, decided at every
//! control-plane heartbeat.
//!
//! The heartbeat's answer is tri-state. Only an explicit `needed: false`
//! lets the host sleep: an older relay that never sends the field, and a
//! heartbeat that failed, both mean "stay connected" (a failure is no
//! evidence that nobody needs the host). After a wake the host stays up
//! for at least [`IdleSleepConfig::min_awake`], so a `needed` that flips at
//! every heartbeat does not connect and disconnect at every heartbeat.

use std::time::Duration;

use crate::time::Instant;

/// How the host sleeps.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IdleSleepConfig {
    /// After a wake, the least time the session stays up before a
    /// `needed: false` may end it. Default 60 s (four default heartbeats).
    pub min_awake: Duration,
}

impl Default for IdleSleepConfig {
    fn default() -> Self {
        IdleSleepConfig {
            min_awake: Duration::from_secs(60),
        }
    }
}

impl IdleSleepConfig {
    /// With `min_awake` as the least time up after a wake.
    pub fn with_min_awake(mut self, min_awake: Duration) -> Self {
        self.min_awake = min_awake;
        self
    }
}

/// The outcome of one control-plane heartbeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Beat {
    /// The control plane answered; `needed` is `None` when the reply has
    /// no such field (a relay from before idle sleep).
    Answered {
        /// Whether anyone needs the host now, if the relay said.
        needed: Option<bool>,
    },
    /// No usable answer: the call failed, timed out, or was refused.
    Failed,
}

impl Beat {
    /// Whether this outcome asks for the session: everything but an
    /// explicit `needed: false`.
    pub fn wants_session(self) -> bool {
        !matches!(
            self,
            Beat::Answered {
                needed: Some(false)
            }
        )
    }
}

/// What the host's driver should do with its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostAction {
    /// Start the Belay session.
    Connect,
    /// Stop the session and wait until every task of it has ended.
    Disconnect,
}

/// What happened so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IdleSleepStats {
    /// Heartbeat outcomes handled.
    pub beats: u64,
    /// Sessions started.
    pub starts: u64,
    /// Sessions stopped by a decision (sleep, or [`IdleSleep::stop`]).
    pub stops: u64,
    /// Sessions that ended on their own (restarted at the next beat that
    /// wants one).
    pub ended: u64,
    /// `needed: false` answers that did not stop the session because it
    /// had not been up for the minimum awake time.
    pub damped: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SessionState {
    Down,
    Up { since: Instant },
    Stopped,
}

/// The host's sleep decision (see the [module docs](crate::host)).
///
/// Inputs are [`handle_beat`](Self::handle_beat) and
/// [`handle_session_ended`](Self::handle_session_ended); drain
/// [`poll_action`](Self::poll_action) after each. It has no timer of its
/// own: decisions are made at heartbeats, which the driver runs at the
/// relay's interval.
#[derive(Debug, Clone)]
pub struct IdleSleep {
    config: IdleSleepConfig,
    session: SessionState,
    action: Option<HostAction>,
    stats: IdleSleepStats,
}

impl IdleSleep {
    /// A host that is not connected yet.
    pub fn new(config: IdleSleepConfig) -> Self {
        IdleSleep {
            config,
            session: SessionState::Down,
            action: None,
            stats: IdleSleepStats::default(),
        }
    }

    /// A heartbeat's outcome at `now`.
    pub fn handle_beat(&mut self, now: Instant, beat: Beat) {
        self.stats.beats += 1;
        match (self.session, beat.wants_session()) {
            (SessionState::Stopped, _) => {}
            (SessionState::Down, true) => {
                self.session = SessionState::Up { since: now };
                self.stats.starts += 1;
                self.action = Some(HostAction::Connect);
            }
            (SessionState::Up { since }, false) => {
                if now.saturating_duration_since(since) >= self.config.min_awake {
                    self.take_down();
                } else {
                    self.stats.damped += 1;
                }
            }
            (SessionState::Down, false) | (SessionState::Up { .. }, true) => {}
        }
    }

    /// The session ended without being asked to (its client gave up, or it
    /// was closed by the relay): the next beat that wants a session starts
    /// one. A pending `Connect` not yet taken is withdrawn.
    pub fn handle_session_ended(&mut self, now: Instant) {
        let _ = now;
        if let SessionState::Up { .. } = self.session {
            self.session = SessionState::Down;
            self.stats.ended += 1;
            if self.action == Some(HostAction::Connect) {
                self.action = None;
            }
        }
    }

    /// The host is shutting down: disconnect if connected; later beats are
    /// ignored.
    pub fn stop(&mut self, now: Instant) {
        let _ = now;
        if let SessionState::Up { .. } = self.session {
            self.take_down();
        }
        self.session = SessionState::Stopped;
    }

    /// The next thing to do, once.
    #[must_use]
    pub fn poll_action(&mut self) -> Option<HostAction> {
        self.action.take()
    }

    /// Whether the session should be up now.
    pub fn is_awake(&self) -> bool {
        matches!(self.session, SessionState::Up { .. })
    }

    /// Counters since [`new`](Self::new).
    pub fn stats(&self) -> IdleSleepStats {
        self.stats
    }

    fn take_down(&mut self) {
        self.session = SessionState::Down;
        self.stats.stops += 1;
        // A `Connect` nobody took yet and this `Disconnect` cancel out.
        self.action = match self.action {
            Some(HostAction::Connect) => None,
            _ => Some(HostAction::Disconnect),
        };
    }
}
