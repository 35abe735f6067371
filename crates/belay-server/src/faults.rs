//! Injected faults: what the demo's fault panel and the tests switch on.
//!
//! Each fault reproduces one way a real deployment fails while the sockets
//! look fine, so clients can be measured against it.

use std::time::{Duration, Instant};

/// The faults in force. Cheap to clone; published through a `watch`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Faults {
    /// Sockets stay open, but nothing is read or written.
    pub freeze: bool,
    /// Pings continue; subscriptions are dropped with `unsubscribed`,
    /// subscribes are refused, requests go unanswered.
    pub service_down: bool,
    /// Every request is answered this much later.
    pub slow_replies: Option<Duration>,
    /// Every session is dropped (no close frame) this long after `welcome`.
    pub flapping: Option<Duration>,
    /// Upgrades are refused until then (a restart in progress).
    pub refuse_until: Option<Instant>,
}

impl Faults {
    /// Whether upgrades are refused at `now`.
    pub fn refusing(&self, now: Instant) -> bool {
        self.refuse_until.is_some_and(|until| now < until)
    }
}
