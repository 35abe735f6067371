//! The state of an established session: its id, its credential's expiry,
//! its heartbeat and the `refresh` being checked; what is due next.

use std::sync::Arc;

use crate::heartbeat::Heartbeat;
use crate::time::Instant;

use super::Ticket;

pub(super) struct Open {
    pub(super) session: Arc<str>,
    pub(super) expires_at: Option<Instant>,
    pub(super) heartbeat: Heartbeat,
    /// The `refresh` whose credential is being checked.
    pub(super) refreshing: Option<Ticket>,
}

impl Open {
    /// Whether the credential has expired at `now`.
    pub(super) fn expired(&self, now: Instant) -> bool {
        self.expires_at.is_some_and(|at| now >= at)
    }

    /// The next instant something is due: the heartbeat, or the
    /// credential's expiry, which closes 4001 on time whatever the peer
    /// sends or does not send (a timer, not a check on its next message).
    pub(super) fn next_deadline(&self) -> Instant {
        let beat = self.heartbeat.poll_timeout();
        self.expires_at.map_or(beat, |at| at.min(beat))
    }
}
