//! Moving to a new transport at a quiet moment: the SSE fallback's switch
//! back to WebSocket (spec/PROTOCOL.md §1.7, [`TransportChoice`]
//! decides that it is wanted and by when; the session decides the moment,
//! because only it knows when nothing is in flight).
//!
//! ```text
//!   replace_transport_when_quiet(now, by)
//!     no request in flight ─────────────▶ replace_transport (1000 `transport replaced`, dial at once)
//!     requests in flight: keep taking new ones; the last answer (or timeout) ─▶ replace_transport
//!     still not quiet at `by`: stop taking new ones (NotReady, never sent) ─▶ … ─▶ replace_transport
//! ```
//!
//! Why not refuse requests from the start, as for a server's `reconnect`
//! advice: the stream works, and nothing forces the move; a busy
//! application should not see refusals because a faster transport became
//! available. Why not move while requests are in flight: their answers
//! would be lost and their outcome unknown (`ConnectionClosed`), which is
//! worse than a short refusal. The bound keeps an application that always
//! has a request in flight from staying on the fallback for ever; after it
//! the wait is at most the longest request deadline in flight.
//!
//! [`TransportChoice`]: crate::TransportChoice

use super::phase::Phase;
use super::{Session, Stopped};
use crate::time::Instant;

impl Session {
    /// Move to a new transport at the next quiet moment (Open, no request
    /// in flight), as [`replace_transport`](Session::replace_transport)
    /// does, and no later than the last answer after `by`: from `by` on,
    /// new requests are refused [`NotReady`](super::RequestError::NotReady)
    /// until the ones in flight have settled. Until then requests are taken
    /// and sent as usual. While connecting or handshaking the move waits
    /// for the transport to open; with no transport (waiting, offline,
    /// halted) there is nothing to move and it does nothing: the next dial
    /// is the driver's choice anyway. A transport lost before the move
    /// cancels it. A server's `reconnect` advice takes precedence (the
    /// session leaves as advised).
    pub fn replace_transport_when_quiet(
        &mut self,
        now: Instant,
        by: Instant,
    ) -> Result<(), Stopped> {
        let now = self.advance(now);
        match self.phase {
            Phase::Stopped => return Err(Stopped),
            Phase::Connecting { .. } | Phase::Handshaking { .. } | Phase::Open { .. } => {
                self.switch_by = Some(self.switch_by.map_or(by, |pending| pending.min(by)));
                self.switch_if_quiet(now);
            }
            _ => {}
        }
        Ok(())
    }

    /// Whether a move to a new transport waits for a quiet moment.
    pub fn is_switch_pending(&self) -> bool {
        self.switch_by.is_some()
    }

    /// Move now if a move is pending and the session is quiet; at the
    /// bound, stop taking new requests.
    pub(super) fn switch_if_quiet(&mut self, now: Instant) {
        let Some(by) = self.switch_by else {
            return;
        };
        if !matches!(self.phase, Phase::Open { .. }) || self.advice.is_some() {
            return;
        }
        if self.registry.is_empty() {
            self.switch_by = None;
            // Open: it cannot fail.
            let _ = self.replace_transport(now);
        } else if now >= by && !self.leaving {
            self.leaving = true;
            self.refresh_readiness(now);
        }
    }

    /// When the bound of a pending move is due.
    pub(super) fn switch_deadline(&self) -> Option<Instant> {
        self.switch_by
            .filter(|_| matches!(self.phase, Phase::Open { .. }) && !self.leaving)
    }
}
