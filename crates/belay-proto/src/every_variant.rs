//! One value of every variant of the outputs and events a driver must
//! carry out (feature `testing`), so a driver's test can run each through
//! its real dispatch and fail when one reaches its "unknown output" arm.
//!
//! The enums are `#[non_exhaustive]`, so a driver in another crate must
//! keep a catch-all arm, which is where a new variant would be dropped
//! silently. [`EveryVariant::variant_index`] is an exhaustive match here,
//! in the core: adding a variant does not compile until it is numbered,
//! the core's own test fails until [`EveryVariant::every_variant`] has a
//! value of it, and then every driver's test fails until its dispatch
//! handles it.

use std::sync::Arc;

use crate::close::CloseCode;
use crate::message::{ClientMessage, Payload, ReconnectAdvice, Request, ServerMessage};
use crate::server::{
    ConnectionHandle, ConnectionOrder, Event, Lifecycle, NodeOutput, Output, Ticket, Violation,
};
use crate::time::Instant;
use crate::TransportId;

/// A type with one sample of each of its variants.
pub trait EveryVariant: Sized {
    /// How many variants it has.
    const VARIANTS: usize;

    /// The number of `self`'s variant, `0..VARIANTS` (an exhaustive match).
    fn variant_index(&self) -> usize;

    /// One value of every variant.
    fn every_variant() -> Vec<Self>;
}

impl<F: Default> EveryVariant for Output<F> {
    const VARIANTS: usize = 14;

    fn variant_index(&self) -> usize {
        match self {
            Output::Send(_) => 0,
            Output::SendEncoded(_) => 1,
            Output::Pong(_) => 2,
            Output::Authenticate { .. } => 3,
            Output::Reauthenticate { .. } => 4,
            Output::AuthorizeSubscribe { .. } => 5,
            Output::CheckSubscriptionToken { .. } => 6,
            Output::Join { .. } => 7,
            Output::Leave { .. } => 8,
            Output::AuthorizeRequest { .. } => 9,
            Output::Call { .. } => 10,
            Output::Close { .. } => 11,
            Output::PeerGone { .. } => 12,
            Output::Event(_) => 13,
        }
    }

    fn every_variant() -> Vec<Self> {
        // A ticket the connection never issued: a driver answers it and
        // the core ignores the answer.
        let ticket = Ticket(u64::MAX);
        vec![
            Output::Send(ServerMessage::Pong),
            Output::SendEncoded(F::default()),
            Output::Pong(b"p".to_vec()),
            Output::Authenticate {
                ticket,
                token: None,
            },
            Output::Reauthenticate {
                ticket,
                token: "t".into(),
            },
            Output::AuthorizeSubscribe {
                ticket,
                channel: "c".into(),
                token: None,
            },
            Output::CheckSubscriptionToken {
                ticket,
                channel: "c".into(),
                token: "t".into(),
            },
            Output::Join {
                ticket,
                channel: "c".into(),
                since: None,
            },
            Output::Leave {
                channel: "c".into(),
                subscription: u64::MAX,
            },
            Output::AuthorizeRequest {
                ticket,
                method: "echo".into(),
            },
            Output::Call {
                ticket,
                request: Request {
                    id: 1,
                    method: "echo".into(),
                    params: Payload::Null,
                    idem: None,
                    timeout_ms: None,
                },
            },
            Output::Close {
                code: CloseCode::NORMAL,
                reason: "bye".into(),
                discard_unsent: false,
            },
            Output::PeerGone { code: None },
            Output::Event(Event::PingSent),
        ]
    }
}

impl EveryVariant for Event {
    const VARIANTS: usize = 8;

    fn variant_index(&self) -> usize {
        match self {
            Event::Connected { .. } => 0,
            Event::Violation(_) => 1,
            Event::BadFrame => 2,
            Event::RequestRefused(_) => 3,
            Event::SubscribeRefused => 4,
            Event::Resumed { .. } => 5,
            Event::PingSent => 6,
            Event::Reaped => 7,
        }
    }

    fn every_variant() -> Vec<Self> {
        vec![
            Event::Connected {
                session: Arc::from("s"),
            },
            Event::Violation(Violation::SlowConsumer),
            Event::BadFrame,
            Event::RequestRefused("unknown_method"),
            Event::SubscribeRefused,
            Event::Resumed { recovered: true },
            Event::PingSent,
            Event::Reaped,
        ]
    }
}

impl EveryVariant for NodeOutput {
    const VARIANTS: usize = 2;

    fn variant_index(&self) -> usize {
        match self {
            NodeOutput::Order { .. } => 0,
            NodeOutput::Lifecycle(_) => 1,
        }
    }

    fn every_variant() -> Vec<Self> {
        vec![
            NodeOutput::Order {
                connection: ConnectionHandle::for_testing(u64::MAX),
                order: ConnectionOrder::Close {
                    code: CloseCode::NORMAL,
                    reason: "bye".into(),
                },
            },
            NodeOutput::Lifecycle(Lifecycle::Serving),
        ]
    }
}

impl EveryVariant for ConnectionOrder {
    const VARIANTS: usize = 3;

    fn variant_index(&self) -> usize {
        match self {
            ConnectionOrder::Advise(_) => 0,
            ConnectionOrder::Drain { .. } => 1,
            ConnectionOrder::Close { .. } => 2,
        }
    }

    fn every_variant() -> Vec<Self> {
        vec![
            ConnectionOrder::Advise(ReconnectAdvice {
                reason: "deploy".into(),
                min_delay_ms: 0,
                max_delay_ms: 1,
                message: None,
            }),
            ConnectionOrder::Drain {
                until: Instant::ZERO,
            },
            ConnectionOrder::Close {
                code: CloseCode::NORMAL,
                reason: "bye".into(),
            },
        ]
    }
}

impl EveryVariant for crate::Output {
    const VARIANTS: usize = 4;

    fn variant_index(&self) -> usize {
        match self {
            crate::Output::OpenTransport { .. } => 0,
            crate::Output::Transmit { .. } => 1,
            crate::Output::CloseTransport { .. } => 2,
            crate::Output::Event(_) => 3,
        }
    }

    fn every_variant() -> Vec<Self> {
        // A transport the driver never opened: it has nothing to do.
        let id = TransportId(u64::MAX);
        vec![
            crate::Output::OpenTransport { id, attempt: 1 },
            crate::Output::Transmit {
                id,
                message: ClientMessage::Ping,
            },
            crate::Output::CloseTransport {
                id,
                code: CloseCode::NORMAL,
                reason: "bye".into(),
            },
            crate::Output::Event(crate::Event::Stopped),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covers_every_variant<T: EveryVariant>() {
        let mut seen: Vec<usize> = T::every_variant().iter().map(T::variant_index).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..T::VARIANTS).collect::<Vec<_>>());
    }

    #[test]
    fn every_driver_facing_enum_has_one_sample_per_variant() {
        covers_every_variant::<Output<Vec<u8>>>();
        covers_every_variant::<Event>();
        covers_every_variant::<NodeOutput>();
        covers_every_variant::<ConnectionOrder>();
        covers_every_variant::<crate::Output>();
    }
}
