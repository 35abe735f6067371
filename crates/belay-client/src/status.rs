//! What the application can watch: the status snapshot and lifecycle events.

use belay_proto::message::Codec;
use belay_proto::{
    ConnectionState, DisconnectReason, Event, HaltReason, Readiness, RetryPlan, TransportKind,
};

/// A snapshot of the connection, published through
/// [`Client::status`](crate::Client::status) whenever it changes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Status {
    /// The three readiness levels (transport, protocol, service).
    pub readiness: Readiness,
    /// The aggregate: every level is up (and every subscription confirmed).
    pub ready: bool,
    /// Where the connection stands.
    pub state: ConnectionState,
    /// The last disconnect or failed attempt, whichever came last. A loss
    /// followed at once by a failed redial shows only the redial here:
    /// [`last_loss`](Self::last_loss) keeps why the connection was lost.
    pub last_disconnect: Option<Disconnect>,
    /// The last loss of an established session (`was_connected`), kept
    /// across the attempts that follow it and after reconnecting.
    pub last_loss: Option<Disconnect>,
    /// The last failed attempt to connect since the last session was
    /// established (`None` once a session is established again).
    pub last_attempt_failure: Option<Disconnect>,
    /// When the next automatic attempt is due, while waiting out a backoff.
    pub next_attempt: Option<tokio::time::Instant>,
    /// Why automatic reconnection stopped, while halted.
    pub halted: Option<HaltReason>,
    /// The session id from the last `welcome`.
    pub session: Option<String>,
    /// Transports dialed so far.
    pub attempts: u64,
    /// The transport of the current (or last) connection: a WebSocket, or
    /// the SSE + HTTP fallback.
    pub transport: TransportKind,
    /// The codec the current (or last) connection speaks: what the server
    /// chose from [`ClientBuilder::codec`](crate::ClientBuilder::codec)'s
    /// offer (JSON on the SSE fallback, and from a server that does not
    /// negotiate).
    pub codec: Codec,
}

impl Default for Status {
    fn default() -> Self {
        Status {
            readiness: Readiness::default(),
            ready: false,
            state: ConnectionState::Idle,
            last_disconnect: None,
            last_loss: None,
            last_attempt_failure: None,
            next_attempt: None,
            halted: None,
            session: None,
            attempts: 0,
            transport: TransportKind::WebSocket,
            codec: Codec::Json,
        }
    }
}

/// A connection (or connection attempt) that ended.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Disconnect {
    /// Why it ended.
    pub reason: DisconnectReason,
    /// What the core will do next; [`RetryPlan::will_retry`] says whether it retries.
    pub retry: RetryPlan,
    /// Whether an established session was lost (`false`: an attempt failed).
    pub was_connected: bool,
    /// When the driver learned of it.
    pub at: tokio::time::Instant,
}

/// The driver's record of disconnects: the last one, the last loss and the
/// last failed attempt, kept apart so that a failed redial never hides why
/// the connection was lost.
#[derive(Debug, Clone, Default)]
pub(crate) struct Losses {
    last: Option<Disconnect>,
    loss: Option<Disconnect>,
    attempt_failure: Option<Disconnect>,
}

impl Losses {
    /// A connection or an attempt ended. A lost session was established
    /// after every attempt that failed before it: those are forgotten.
    pub(crate) fn record(&mut self, disconnect: Disconnect) {
        if disconnect.was_connected {
            self.loss = Some(disconnect.clone());
            self.attempt_failure = None;
        } else {
            self.attempt_failure = Some(disconnect.clone());
        }
        self.last = Some(disconnect);
    }

    /// Fill `status`'s disconnect fields (its `state` set): while a session
    /// is open, no attempt has failed since it was established.
    pub(crate) fn show(&self, status: &mut Status) {
        status.last_disconnect = self.last.clone();
        status.last_loss = self.loss.clone();
        status.last_attempt_failure = self
            .attempt_failure
            .clone()
            .filter(|_| status.state != ConnectionState::Open);
    }
}

/// A lifecycle event, from [`Client::events`](crate::Client::events).
///
/// Responses and publications are not repeated here: they go to the request
/// that asked and to the channel's [`Subscription`](crate::Subscription).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientEvent {
    /// The driver is dialing a transport (`attempt` as the core counts it).
    Connecting {
        /// Backoff delays since the backoff last reset.
        attempt: u32,
    },
    /// An event of the core (connected, disconnected, readiness, subscribed,
    /// recovery failed, halted, stopped, server error …).
    Session(Event),
}

#[cfg(test)]
mod tests {
    use belay_proto::{DisconnectReason, RetryPlan};

    use super::*;

    fn ended(reason: DisconnectReason, was_connected: bool) -> Disconnect {
        Disconnect {
            reason,
            retry: RetryPlan::No,
            was_connected,
            at: tokio::time::Instant::now(),
        }
    }

    #[test]
    fn a_failed_redial_does_not_replace_the_loss() {
        let mut losses = Losses::default();
        let loss = ended(DisconnectReason::Advised, true);
        let redial = ended(DisconnectReason::ConnectTimeout, false);
        losses.record(loss.clone());
        losses.record(redial.clone());
        let mut status = Status::default();
        losses.show(&mut status);
        assert_eq!(status.last_loss, Some(loss.clone()));
        assert_eq!(status.last_attempt_failure, Some(redial.clone()));
        assert_eq!(status.last_disconnect, Some(redial));
        // Connected again: no attempt has failed since; the loss stays.
        status.state = ConnectionState::Open;
        losses.show(&mut status);
        assert_eq!(status.last_attempt_failure, None);
        assert_eq!(status.last_loss, Some(loss));
        // Lost again: the attempts before that session are forgotten.
        let again = ended(DisconnectReason::Replaced, true);
        losses.record(again.clone());
        status.state = ConnectionState::Waiting;
        losses.show(&mut status);
        assert_eq!(status.last_attempt_failure, None);
        assert_eq!(status.last_loss, Some(again));
    }
}
