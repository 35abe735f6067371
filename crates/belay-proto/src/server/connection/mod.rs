//! [`Connection`]: every decision about one server-side connection, sans-IO.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::close::CloseCode;
use crate::message::{ClientMessage, Codec, ReconnectAdvice, ServerMessage};
use crate::rng::SplitMix64;
use crate::time::Instant;

use super::{Limits, RateLimiter, Violation, ViolationResponse};

mod frames;
mod handshake;
mod input;
mod io;
mod open;
mod outbound_room;
mod outputs;
mod refresh;
mod requests;
mod sub_refresh;
mod subscriptions;

pub use input::Input;
pub use io::{AuthVerdict, Event, Frame, JoinAnswer, Output, Ticket, TransportError};
pub use outbound_room::OutboundRoom;

use open::Open;
use outputs::Outputs;
use requests::Requests;
use subscriptions::Subscriptions;

/// Messages that may follow `connect` before the credential is checked
/// (a client may pipeline its subscribes); one more is a violation.
pub const MAX_BEFORE_WELCOME: usize = 16;

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Phase {
    /// Waiting for `connect`.
    Handshake,
    /// `connect` received; waiting for the authenticator.
    Authenticating,
    /// The session is established.
    Open,
    /// Closing 1012 as soon as the requests in flight are answered.
    Draining,
    /// Closed: nothing more comes out.
    Closed,
}

/// A connection's subscriptions and requests.
#[derive(Debug, Default)]
struct Activity {
    subscriptions: Subscriptions,
    requests: Requests,
}

enum Stage {
    Handshake {
        deadline: Instant,
        /// The credential the upgrade carried, for a `connect` without one.
        upgrade_token: Option<String>,
    },
    Authenticating {
        deadline: Instant,
        ticket: Ticket,
        backlog: VecDeque<Pipelined>,
    },
    Open(Open),
    Draining {
        open: Open,
        until: Instant,
    },
    Closed,
}

/// A message that followed `connect`, held until `welcome`.
enum Pipelined {
    /// Within its budget: acted on after `welcome`.
    Message(ClientMessage),
    /// Over the message budget: answered `rate_limited` after `welcome`
    /// (`request`: the id of the request it carried).
    RateLimited {
        request: Option<u64>,
        retry_after: Duration,
    },
}

/// Every decision about one server-side connection, sans-IO.
///
/// The driver (belay-server's connection task, a test, the simulator) owns
/// the socket, the timers, the broker and the authenticator; the connection
/// owns the rules. It is driven like the client [`Session`](crate::Session):
/// facts go in with `now` through [`handle_input`](Connection::handle_input)
/// (frames, transport failures, the answers to what it asked), time through
/// [`handle_timeout`](Connection::handle_timeout); commands change it
/// (`advise`, `close`, `drain`), and the driver carries out what [`poll_output`](Connection::poll_output)
/// returns, in order, then sleeps until
/// [`poll_timeout`](Connection::poll_timeout).
///
/// ```text
///  Handshake ──connect──▶ Authenticating ──Accepted──▶ Open ──drain──▶ Draining ──▶ Closed
///      │ 4008, 1002, 1008        │ 4001, 4008           │ 4000 4001 4009 4029 1002 1007 1009 …
///      └─────────────────────────┴──────────────────────┴───────────────────────────▶ Closed
/// ```
///
/// It decides: `connect` first and once, the protocol version, the session
/// id (from a seeded generator), the verdict on the credential and its
/// expiry against `now`, the message budget and the liveness budget of
/// every frame, the documented answer to every [`Violation`], one `response`
/// per request, the in-flight bound, the subscribe order (authorize → limit
/// → join → confirm → replay → live), stale and duplicate live frames, the
/// heartbeat that reaps a silent peer, drain advice and the 1012 close once
/// requests are answered.
///
/// `F` is the driver's type for a frame the broker encoded once for all
/// subscribers (a shared buffer such as `bytes::Bytes`); the connection passes it
/// through untouched.
///
/// ```
/// use belay_proto::server::{AuthVerdict, Connection, Frame, Input, Limits, Output};
/// use belay_proto::message::ServerMessage;
/// use belay_proto::Instant;
///
/// let mut conn: Connection<Vec<u8>> = Connection::new(Limits::default(), Instant::ZERO, 7);
/// let connect = Frame::Text(r#"{"type":"connect","protocol":1}"#);
/// conn.handle_input(Instant::ZERO, Input::Frame(connect));
/// let Some(Output::Authenticate { ticket, token }) = conn.poll_output() else { panic!() };
/// assert_eq!(token, None);
/// let verdict = AuthVerdict::accepted();
/// conn.handle_input(Instant::ZERO, Input::Auth { ticket, verdict });
/// assert!(matches!(conn.poll_output(), Some(Output::Send(ServerMessage::Welcome(_)))));
/// ```
pub struct Connection<F> {
    /// Shared by every connection of a server (one allocation per server,
    /// not per connection).
    limits: Arc<Limits>,
    stage: Stage,
    rate: RateLimiter,
    liveness: RateLimiter,
    rng: SplitMix64,
    /// Subscriptions and requests, made at the first of either (an idle
    /// connection keeps its state small: thousands of them are held).
    activity: Option<Box<Activity>>,
    out: Outputs<F>,
    next_ticket: u64,
    /// What its frames are in (the upgrade's subprotocol).
    codec: Codec,
}

impl<F> std::fmt::Debug for Connection<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("phase", &self.phase())
            .field("session", &self.session_id())
            .field("subscriptions", &self.subscription_count())
            .field("requests_in_flight", &self.requests_in_flight())
            .finish_non_exhaustive()
    }
}

impl<F> Connection<F> {
    /// A connection accepted at `now`, under `limits` (a `Limits`, or the
    /// `Arc<Limits>` a server shares between its connections); `seed`
    /// drives the session ids it mints (give each connection its own).
    pub fn new(limits: impl Into<Arc<Limits>>, now: Instant, seed: u64) -> Self {
        let limits = limits.into();
        Connection {
            stage: Stage::Handshake {
                deadline: limits.handshake_deadline(now),
                upgrade_token: None,
            },
            rate: limits.rate_limiter(now),
            liveness: limits.liveness_limiter(now),
            rng: SplitMix64::new(seed),
            limits,
            activity: None,
            out: Outputs::default(),
            next_ticket: 1,
            codec: Codec::Json,
        }
    }

    // ----- getters -----

    /// Where the connection is in its life.
    pub fn phase(&self) -> Phase {
        match self.stage {
            Stage::Handshake { .. } => Phase::Handshake,
            Stage::Authenticating { .. } => Phase::Authenticating,
            Stage::Open(_) => Phase::Open,
            Stage::Draining { .. } => Phase::Draining,
            Stage::Closed => Phase::Closed,
        }
    }

    /// The session id, once `welcome` is queued.
    pub fn session_id(&self) -> Option<&str> {
        self.open().map(|open| &*open.session)
    }

    /// Requests received and not yet answered (waiting for the authorizer,
    /// or called): a drain waits for them.
    pub fn requests_in_flight(&self) -> usize {
        self.activity
            .as_ref()
            .map_or(0, |a| a.requests.unanswered())
    }

    /// Confirmed subscriptions held.
    pub fn subscription_count(&self) -> usize {
        self.activity.as_ref().map_or(0, |a| a.subscriptions.len())
    }

    /// The confirmed subscriptions: each channel with the broker's id of
    /// its subscription (what [`Input::SubscriptionEnded`] takes), in no
    /// particular order.
    pub fn subscriptions(&self) -> Vec<(String, u64)> {
        self.activity
            .as_ref()
            .map(|a| {
                a.subscriptions
                    .held()
                    .map(|(channel, id)| (channel.to_owned(), id))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The codec its frames are in: what it decodes, and what the driver
    /// encodes [`Output::Send`] in.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// The limits it applies.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    // ----- outputs -----

    /// The next thing to do, in order.
    pub fn poll_output(&mut self) -> Option<Output<F>> {
        self.out.pop_front()
    }

    /// When to call [`handle_timeout`](Self::handle_timeout) next (`None`:
    /// closed).
    pub fn poll_timeout(&self) -> Option<Instant> {
        match &self.stage {
            Stage::Handshake { deadline, .. } | Stage::Authenticating { deadline, .. } => {
                Some(*deadline)
            }
            Stage::Open(open) => Some(self.earliest(open.next_deadline())),
            Stage::Draining { open, until } => {
                Some(self.earliest((*until).min(open.next_deadline())))
            }
            Stage::Closed => None,
        }
    }

    // ----- inputs -----

    /// Time passed: the handshake deadline, the credential's expiry (4001
    /// `credentials expired`), the heartbeat (probe, then reap with 4000),
    /// the end of a drain's wait.
    pub fn handle_timeout(&mut self, now: Instant) {
        match &mut self.stage {
            Stage::Handshake { deadline, .. } | Stage::Authenticating { deadline, .. } => {
                if now >= *deadline {
                    self.violate(Violation::HandshakeTimeout);
                }
            }
            Stage::Open(open) => {
                if open.expired(now) {
                    return self.close_with(CloseCode::UNAUTHORIZED, "credentials expired");
                }
                let beat = open.heartbeat.handle_timeout(now);
                self.on_heartbeat(beat);
                self.expire_subscriptions(now);
            }
            Stage::Draining { open, until } => {
                if now >= *until {
                    self.finish_drain();
                    return;
                }
                if open.expired(now) {
                    return self.close_with(CloseCode::UNAUTHORIZED, "credentials expired");
                }
                let beat = open.heartbeat.handle_timeout(now);
                self.on_heartbeat(beat);
                self.expire_subscriptions(now);
            }
            Stage::Closed => {}
        }
    }

    fn on_heartbeat(
        &mut self,
        beat: Result<crate::heartbeat::HeartbeatAction, crate::heartbeat::LivenessFailure>,
    ) {
        match beat {
            Ok(crate::heartbeat::HeartbeatAction::Probe) => {
                self.event(Event::PingSent);
                self.send(ServerMessage::Ping);
            }
            Ok(_) => {}
            Err(_) => {
                self.event(Event::Reaped);
                self.close_with(CloseCode::HEARTBEAT_TIMEOUT, "heartbeat timeout");
            }
        }
    }

    // ----- commands -----

    /// The credential the upgrade request carried (a header), used when
    /// `connect` has none.
    pub fn set_upgrade_token(&mut self, token: Option<String>) {
        if let Stage::Handshake { upgrade_token, .. } = &mut self.stage {
            *upgrade_token = token;
        }
    }

    /// The codec the upgrade chose ([`Codec::choose`]; JSON if never
    /// called). Only before the first frame: a codec does not change
    /// within a connection.
    pub fn set_codec(&mut self, codec: Codec) {
        if let Stage::Handshake { .. } = self.stage {
            self.codec = codec;
        }
    }

    /// Tell the client to reconnect within the advice's window (a drain's
    /// first step). Ignored once closed.
    pub fn advise(&mut self, advice: ReconnectAdvice) {
        if !self.is_closed() {
            self.send(ServerMessage::Reconnect(advice));
        }
    }

    /// Close now with `code` and `reason` (queued frames are written first).
    pub fn close(&mut self, code: CloseCode, reason: &str) {
        if !self.is_closed() {
            self.close_with(code, reason);
        }
    }

    /// Close 1012 once every request in flight is answered, or at `until`,
    /// whichever comes first. Frames that arrive meanwhile are not acted on
    /// (liveness still counts). Before the session is open, closes at once.
    pub fn drain(&mut self, now: Instant, until: Instant) {
        let _ = now;
        match std::mem::replace(&mut self.stage, Stage::Closed) {
            Stage::Open(open) => {
                self.stage = Stage::Draining { open, until };
                if self.requests_in_flight() == 0 {
                    self.finish_drain();
                }
            }
            // Draining already: the earlier deadline stands; still waiting
            // for the requests in flight.
            Stage::Draining { open, until: first } => {
                self.stage = Stage::Draining {
                    open,
                    until: first.min(until),
                };
            }
            Stage::Closed => {}
            other => {
                self.stage = other;
                self.close_with(CloseCode::SERVICE_RESTART, "server restarting");
            }
        }
    }

    /// The upgrade was over the admission budget: say in-band when to come
    /// back (for browsers, which cannot read the HTTP status), then 1013.
    pub fn refuse_overload(&mut self, retry_after: Duration) {
        if self.is_closed() {
            return;
        }
        let ms = u64::try_from(retry_after.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        self.send(ServerMessage::Reconnect(ReconnectAdvice {
            reason: "overload".into(),
            min_delay_ms: ms,
            max_delay_ms: ms.saturating_mul(2),
            message: Some("The server is busy; reconnecting shortly.".into()),
        }));
        self.close_with(
            CloseCode::TRY_AGAIN_LATER,
            &format!("over capacity; retry after {ms} ms"),
        );
    }

    // ----- shared internals -----

    fn is_closed(&self) -> bool {
        matches!(self.stage, Stage::Closed)
    }

    fn open(&self) -> Option<&Open> {
        match &self.stage {
            Stage::Open(open) | Stage::Draining { open, .. } => Some(open),
            _ => None,
        }
    }

    fn activity(&mut self) -> &mut Activity {
        self.activity.get_or_insert_with(Box::default)
    }

    fn ticket(&mut self) -> Ticket {
        let ticket = Ticket(self.next_ticket);
        self.next_ticket += 1;
        ticket
    }

    fn send(&mut self, message: ServerMessage) {
        self.out.push_back(Output::Send(message));
    }

    fn event(&mut self, event: Event) {
        self.out.push_back(Output::Event(event));
    }

    /// Apply the documented response to `violation` (belay-proto's table).
    fn violate(&mut self, violation: Violation) {
        self.event(Event::Violation(violation));
        match violation.response() {
            ViolationResponse::Reply(error) => self.send(ServerMessage::Error(error)),
            ViolationResponse::Close {
                code,
                reason,
                advice,
            } => {
                if let Some(advice) = advice {
                    self.send(ServerMessage::Reconnect(advice));
                }
                self.close_with(code, reason);
            }
            // Upgrade rejections happen before a connection exists.
            _ => {}
        }
    }

    fn finish_drain(&mut self) {
        self.close_with(CloseCode::SERVICE_RESTART, "server restarting");
    }

    /// Leave every subscription, forget every question, and close.
    fn close_with(&mut self, code: CloseCode, reason: &str) {
        self.release();
        let discard_unsent = matches!(
            code,
            CloseCode::SLOW_CONSUMER | CloseCode::HEARTBEAT_TIMEOUT
        );
        self.out.push_back(Output::Close {
            code,
            reason: reason.to_owned(),
            discard_unsent,
        });
    }

    /// The peer closed or vanished.
    fn peer_gone(&mut self, code: Option<u16>) {
        self.release();
        self.out.push_back(Output::PeerGone { code });
    }

    fn release(&mut self) {
        self.stage = Stage::Closed;
        // Every question is forgotten with the activity.
        let Some(mut activity) = self.activity.take() else {
            return;
        };
        for (channel, subscription) in activity.subscriptions.take_all() {
            self.out.push_back(Output::Leave {
                channel: channel.to_string(),
                subscription,
            });
        }
    }
}

#[cfg(test)]
mod tests;
