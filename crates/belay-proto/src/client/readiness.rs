//! Readiness: three levels, one answer.
//!
//! ```text
//!   transport ──▶ protocol ──▶ service        ready = all three up
//!   (socket open)  (welcome +    (every subscription
//!                   heartbeat)    confirmed)
//! ```
//!
//! Dependencies go one way: when the transport goes down, protocol and service
//! go down with it; when the service level drops (a subscription is lost),
//! transport and protocol are untouched. A level can only be raised when the
//! level it depends on is up. Changes are edge-triggered: [`Readiness`]
//! reports a change only when the aggregate or a level actually moves.

use serde::{Deserialize, Serialize};

/// One of the three readiness levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Level {
    /// The socket is open.
    Transport,
    /// The peer is alive right now: the handshake completed and heartbeats arrive.
    Protocol,
    /// The service behind the connection serves us: every subscription is confirmed.
    Service,
}

/// A snapshot of the three levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Readiness {
    /// Transport level.
    pub transport: bool,
    /// Protocol level.
    pub protocol: bool,
    /// Service level.
    pub service: bool,
}

impl Readiness {
    /// The aggregate: all three levels are up. This is what a UI looks at.
    pub fn ready(&self) -> bool {
        self.transport && self.protocol && self.service
    }

    /// Whether `level` is up.
    pub fn level(&self, level: Level) -> bool {
        match level {
            Level::Transport => self.transport,
            Level::Protocol => self.protocol,
            Level::Service => self.service,
        }
    }

    /// Set `level` to `up`, keeping the one-way dependencies, and return
    /// whether anything changed.
    ///
    /// Raising a level whose dependency is down is refused (returns `false`).
    /// Lowering a level lowers every level that depends on it, never the ones
    /// it depends on.
    pub fn set(&mut self, level: Level, up: bool) -> bool {
        let before = *self;
        match (level, up) {
            (Level::Transport, true) => self.transport = true,
            (Level::Transport, false) => *self = Readiness::default(),
            (Level::Protocol, true) => self.protocol = self.transport,
            (Level::Protocol, false) => {
                self.protocol = false;
                self.service = false;
            }
            (Level::Service, true) => self.service = self.protocol,
            (Level::Service, false) => self.service = false,
        }
        *self != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_up() -> Readiness {
        let mut r = Readiness::default();
        r.set(Level::Transport, true);
        r.set(Level::Protocol, true);
        r.set(Level::Service, true);
        r
    }

    #[test]
    fn ready_only_when_all_three_levels_are_up() {
        let mut r = Readiness::default();
        assert!(!r.ready());
        r.set(Level::Transport, true);
        r.set(Level::Protocol, true);
        assert!(!r.ready());
        r.set(Level::Service, true);
        assert!(r.ready());
    }

    #[test]
    fn transport_down_resets_protocol_and_service() {
        let mut r = all_up();
        assert!(r.set(Level::Transport, false));
        assert_eq!(r, Readiness::default());
    }

    #[test]
    fn service_loss_touches_neither_transport_nor_protocol() {
        let mut r = all_up();
        assert!(r.set(Level::Service, false));
        assert!(r.transport && r.protocol && !r.service);
        assert!(!r.ready());
    }

    #[test]
    fn a_level_cannot_rise_above_a_lower_level_that_is_down() {
        let mut r = Readiness::default();
        assert!(!r.set(Level::Protocol, true));
        assert!(!r.set(Level::Service, true));
        assert_eq!(r, Readiness::default());
    }

    #[test]
    fn setting_a_level_to_its_current_value_reports_no_change() {
        let mut r = all_up();
        assert!(!r.set(Level::Service, true));
        assert!(!r.set(Level::Transport, true));
        let mut down = Readiness::default();
        assert!(!down.set(Level::Transport, false));
    }
}
