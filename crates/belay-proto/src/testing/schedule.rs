//! The virtual clock and what is in flight on the links: deliveries ordered
//! by due instant, then by the order they were sent.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use crate::time::Instant;

use crate::message::Reply;
use crate::server::Ticket;

use super::records::ConnectionId;

/// A frame on the simulated wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Wire {
    Text(String),
    Close(u16, String),
    /// The connection ended without a close frame (a dropped socket).
    Dropped,
}

/// Something the link delivers when it is due.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Delivery {
    /// The connection reaches the server.
    Accept(ConnectionId),
    /// The client learns it is open.
    Opened(ConnectionId),
    /// The client learns the connection was refused.
    Refused(ConnectionId),
    ToServer(ConnectionId, Wire),
    ToClient(ConnectionId, Wire),
    /// A slow method's reply is ready.
    Reply(ConnectionId, Ticket, Reply),
}

#[derive(Debug, PartialEq)]
struct Scheduled {
    at: Instant,
    seq: u64,
    delivery: Delivery,
}

// Ordered by (at, seq) alone: `seq` is unique.
impl Eq for Scheduled {}

impl Ord for Scheduled {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The clock and the deliveries in flight. Time only moves forward.
#[derive(Debug, Default)]
pub(super) struct Schedule {
    now: Instant,
    queue: BinaryHeap<Reverse<Scheduled>>,
    /// Ties at one instant are delivered in the order they were sent.
    seq: u64,
}

impl Schedule {
    pub(super) fn now(&self) -> Instant {
        self.now
    }

    /// Move the clock to `at` (never back).
    pub(super) fn advance_to(&mut self, at: Instant) {
        self.now = self.now.max(at);
    }

    /// Deliver `delivery` `after` from now.
    pub(super) fn push(&mut self, after: Duration, delivery: Delivery) {
        self.seq += 1;
        self.queue.push(Reverse(Scheduled {
            at: self.now.saturating_add(after),
            seq: self.seq,
            delivery,
        }));
    }

    /// When the next delivery is due.
    pub(super) fn next_at(&self) -> Option<Instant> {
        self.queue.peek().map(|Reverse(s)| s.at)
    }

    /// The next delivery due by now, if any.
    pub(super) fn pop_due(&mut self) -> Option<Delivery> {
        if self.next_at()? > self.now {
            return None;
        }
        self.queue.pop().map(|Reverse(s)| s.delivery)
    }

    /// Deliveries still in flight.
    pub(super) fn in_flight(&self) -> usize {
        self.queue.len()
    }
}
