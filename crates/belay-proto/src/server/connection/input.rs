//! [`Input`]: every fact the driver reports to a [`Connection`], and the one
//! method that takes them.

use std::time::Duration;

use crate::message::{ErrorBody, Reply};
use crate::server::ConnectionOrder;
use crate::time::Instant;

use super::io::{AuthVerdict, Frame, JoinAnswer, Ticket, TransportError};
use super::{Connection, OutboundRoom};

/// A fact the driver reports to a [`Connection`] with
/// [`handle_input`](Connection::handle_input): what the peer sent, what the
/// transport could not deliver, and the answers to what the connection
/// asked ([`Output`](super::Output)s that carry a [`Ticket`]).
///
/// `F` is the driver's type for a frame the broker encoded once for all
/// subscribers; `'a` borrows the frame (and the channel and error of a
/// broker's notice) from the driver's buffers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Input<'a, F> {
    /// A frame from the peer.
    Frame(Frame<'a>),
    /// The transport failed to deliver the next frame.
    TransportError(TransportError),
    /// The driver could not queue a frame for the peer (its outbound budget
    /// is full): close 4009.
    QueueFull,
    /// The authenticator's verdict on the credential of `connect`
    /// ([`Output::Authenticate`](super::Output::Authenticate)). Accepted and
    /// not yet expired: `welcome`, then the messages that followed
    /// `connect`. Nobody could judge it ([`AuthVerdict::Unavailable`]):
    /// close 1013. Otherwise close 4001.
    Auth {
        /// The ticket of the question.
        ticket: Ticket,
        /// The verdict.
        verdict: AuthVerdict,
    },
    /// The verdict on a `refresh`'s credential
    /// ([`Output::Reauthenticate`](super::Output::Reauthenticate)): accepted
    /// and not yet expired, the session's expiry becomes the new one and
    /// `refreshed` is sent; otherwise close 4001 (the driver refuses a
    /// credential that names another user).
    Refresh {
        /// The ticket of the question.
        ticket: Ticket,
        /// The verdict.
        verdict: AuthVerdict,
    },
    /// The authorizer's answer for
    /// [`Output::AuthorizeRequest`](super::Output::AuthorizeRequest):
    /// allowed (the request is called,
    /// [`Output::Call`](super::Output::Call)), or refused with the error the
    /// client gets.
    RequestAuthorized {
        /// The ticket of the question.
        ticket: Ticket,
        /// Allowed, or the error the client gets.
        verdict: Result<(), ErrorBody>,
    },
    /// A called request's outcome ([`Output::Call`](super::Output::Call)):
    /// its one `response` (`too_large` instead, if that frame would pass the
    /// frame limit). A second answer for the same ticket, or one after the
    /// connection closed, is ignored. A drain waiting for this answer closes
    /// 1012 once it was the last.
    Reply {
        /// The ticket of the call.
        ticket: Ticket,
        /// The outcome.
        reply: Reply,
    },
    /// The authorizer's answer for
    /// [`Output::AuthorizeSubscribe`](super::Output::AuthorizeSubscribe):
    /// allowed (`Ok(None)`: for good; `Ok(Some(d))`: a subscription token
    /// good for `d` from `now`, so the subscription lasts until `now + d`
    /// unless `sub_refresh` extends it, spec/PROTOCOL.md §5.8), or refused
    /// with the error the client gets in `unsubscribed`. An allowed
    /// subscribe within the connection's limit is asked of the broker
    /// ([`Output::Join`](super::Output::Join)).
    SubscribeAuthorized {
        /// The ticket of the question.
        ticket: Ticket,
        /// Allowed (with the token's lifetime, if it has one), or refused.
        verdict: Result<Option<Duration>, ErrorBody>,
    },
    /// The verdict on a `sub_refresh`'s token
    /// ([`Output::CheckSubscriptionToken`](super::Output::CheckSubscriptionToken)):
    /// good for `Some(d)`, the subscription lasts until `now + d` and the
    /// client is told with `sub_expiring`; good with no expiry, it no longer
    /// expires; refused, the subscription ends with `unsubscribed` carrying
    /// the error.
    SubRefreshChecked {
        /// The ticket of the question.
        ticket: Ticket,
        /// Good (with the token's lifetime, if it has one), or refused.
        verdict: Result<Option<Duration>, ErrorBody>,
    },
    /// The broker's answer for [`Output::Join`](super::Output::Join).
    /// Joined: `subscribed`, the replay, and from then on live frames. A
    /// replay the driver's outbound queue has no room for
    /// ([`OutboundRoom::takes_replay`]) is not sent: `subscribed` says
    /// `recovered: false` at the replay's top instead (spec/PROTOCOL.md
    /// §5.7), so a resume is never answered by a slow-consumer close. A join
    /// the connection no longer wants (replaced, ended, closed) is left again
    /// at once.
    Joined {
        /// The ticket of the question.
        ticket: Ticket,
        /// The broker's answer.
        answer: JoinAnswer<F>,
        /// The room in the driver's outbound queue now; `None`: the queue
        /// is empty ([`OutboundRoom::whole`]).
        room: Option<OutboundRoom>,
    },
    /// A live publication at `offset` of `subscription` on `channel`,
    /// encoded as `frame`: sent unless the subscription was replaced or
    /// ended, or `offset` was already sent (by the replay).
    Live {
        /// The channel.
        channel: &'a str,
        /// The broker's id of the subscription.
        subscription: u64,
        /// The publication's offset.
        offset: u64,
        /// The publication, encoded.
        frame: F,
    },
    /// The broker stopped delivering `subscription` because this connection
    /// fell behind: the client is told (`unsubscribed` `lagged`) and
    /// resubscribes from its position, so the history replays what it
    /// missed.
    Lagged {
        /// The channel.
        channel: &'a str,
        /// The broker's id of the subscription.
        subscription: u64,
    },
    /// The broker ended `subscription` for a reason of its own (its backing
    /// store went away, the service behind the channel is down): the client
    /// is told with `unsubscribed` carrying `error`, and decides from the
    /// code whether and when to subscribe again (spec §5.3). A stale
    /// `subscription` (the channel was left or subscribed again since) is
    /// ignored.
    SubscriptionEnded {
        /// The channel.
        channel: &'a str,
        /// The broker's id of the subscription.
        subscription: u64,
        /// Why, as the client is told.
        error: &'a ErrorBody,
    },
    /// An order of the server-wide [`Node`](crate::server::Node) for this
    /// connection: send the advice ([`advise`](Connection::advise)), drain
    /// by `until` ([`drain`](Connection::drain)), or close now
    /// ([`close`](Connection::close)).
    Order(ConnectionOrder),
}

impl<F: AsRef<[u8]>> Connection<F> {
    /// A fact from the driver, at `now`: a frame, a transport failure, or
    /// the answer to a question the connection asked. Answers to tickets
    /// the connection no longer waits for are ignored; nothing is acted on
    /// once closed. Drain [`poll_output`](Self::poll_output) after it.
    pub fn handle_input(&mut self, now: Instant, input: Input<'_, F>) {
        match input {
            Input::Frame(frame) => self.handle_frame(now, frame),
            Input::TransportError(error) => self.handle_transport_error(error),
            Input::QueueFull => self.handle_queue_full(),
            Input::Auth { ticket, verdict } => self.handle_auth(now, ticket, verdict),
            Input::Refresh { ticket, verdict } => self.handle_refresh(now, ticket, verdict),
            Input::RequestAuthorized { ticket, verdict } => {
                self.handle_request_authorized(ticket, verdict)
            }
            Input::Reply { ticket, reply } => self.handle_reply(ticket, reply),
            Input::SubscribeAuthorized { ticket, verdict } => {
                self.handle_subscribe_authorized(now, ticket, verdict)
            }
            Input::SubRefreshChecked { ticket, verdict } => {
                self.handle_sub_refresh_checked(now, ticket, verdict)
            }
            Input::Joined {
                ticket,
                answer,
                room,
            } => {
                let room = room.unwrap_or_else(|| OutboundRoom::whole(&self.limits));
                self.handle_joined(now, ticket, answer, room)
            }
            Input::Live {
                channel,
                subscription,
                offset,
                frame,
            } => self.handle_live(channel, subscription, offset, frame),
            Input::Lagged {
                channel,
                subscription,
            } => self.handle_lagged(channel, subscription),
            Input::SubscriptionEnded {
                channel,
                subscription,
                error,
            } => self.handle_subscription_ended(channel, subscription, error),
            Input::Order(order) => match order {
                ConnectionOrder::Advise(advice) => self.advise(advice),
                ConnectionOrder::Drain { until } => self.drain(now, until),
                ConnectionOrder::Close { code, reason } => self.close(code, &reason),
            },
        }
    }
}
