//! The orders of the server-wide core ([`Node`](belay_proto::server::Node)):
//! reconnect advice, a drain, a close, handed to this connection's core,
//! which decides what each means (`Input::Order`).

use belay_proto::server::{ConnectionOrder, Input};
use belay_proto::Instant;

use super::Driver;

impl Driver {
    /// An order of the server-wide core.
    pub(super) fn on_order(&mut self, now: Instant, order: ConnectionOrder) {
        self.core.handle_input(now, Input::Order(order));
    }
}
