//! The orders of the server-wide core ([`Node`](belay_proto::server::Node)):
//! reconnect advice, a drain, a close, handed to this connection's core.

use belay_proto::server::ConnectionOrder;
use belay_proto::Instant;

use super::{Driver, Unhandled};

impl Driver {
    /// An order of the server-wide core.
    pub(super) fn on_order(&mut self, now: Instant, order: ConnectionOrder) {
        if let Err(unhandled) = self.carry_out_order(now, order) {
            unhandled.report();
        }
    }

    pub(super) fn carry_out_order(
        &mut self,
        now: Instant,
        order: ConnectionOrder,
    ) -> Result<(), Unhandled> {
        match order {
            ConnectionOrder::Advise(advice) => self.core.advise(advice),
            // Requests in flight are answered before the close, by the
            // drain's deadline.
            ConnectionOrder::Drain { until } => self.core.drain(now, until),
            ConnectionOrder::Close { code, reason } => self.core.close(code, &reason),
            other => return Err(Unhandled::new("connection order", &other)),
        }
        Ok(())
    }
}
