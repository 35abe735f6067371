//! Every frame from the peer: the liveness budget for pings and pongs, the
//! message budget for every data frame (known, unknown, malformed, or of
//! the other codec's kind), decoding in the connection's codec, and the
//! documented answer to bad input.

use crate::message::{
    decode_client, decode_client_binary, peek_json_request_id, peek_request_id, ClientMessage,
    Codec, DecodeError, ErrorBody, MessageKind, Reply, Response, ServerMessage,
};
use std::time::Duration;

use crate::time::Instant;

use super::super::{RateDecision, Violation};
use super::{
    Connection, Event, Frame, Output, Pipelined, Stage, TransportError, MAX_BEFORE_WELCOME,
};

/// Whether a data frame may be acted on after its budget check.
enum Budget {
    Allowed,
    /// Answered (`rate_limited`) or closed: drop the frame.
    Spent,
}

impl<F> Connection<F> {
    /// A frame from the peer arrived at `now` ([`Input::Frame`](super::Input::Frame)).
    pub(super) fn handle_frame(&mut self, now: Instant, frame: Frame<'_>) {
        match &mut self.stage {
            Stage::Closed => return,
            Stage::Open(open) | Stage::Draining { open, .. } => open.heartbeat.handle_frame(now),
            _ => {}
        }
        let handshake = matches!(self.stage, Stage::Handshake { .. });
        let authenticating = matches!(self.stage, Stage::Authenticating { .. });
        let (decoded, raw) = match (frame, self.codec) {
            (Frame::Close(code), _) => return self.peer_gone(code),
            (Frame::Ping(payload), _) => {
                if self.liveness(now) {
                    self.out.push_back(Output::Pong(payload.to_vec()));
                }
                return;
            }
            (Frame::Pong, _) => {
                self.note_pong(now);
                self.liveness(now);
                return;
            }
            (Frame::Text(text), Codec::Json) => (decode_client(text), Raw::Text(text)),
            (Frame::Binary(bytes), Codec::Binary) => {
                (decode_client_binary(bytes), Raw::Binary(bytes))
            }
            // Nothing but `connect` (and, once it is in, the messages it
            // may pipeline) comes before `welcome` (spec/PROTOCOL.md §2.7).
            _ if handshake || authenticating => return self.violate(Violation::NotConnectFirst),
            // A frame of the other codec's kind (spec/PROTOCOL.md §1.8).
            (other, _) => {
                self.event(Event::BadFrame);
                if let Budget::Allowed = self.take_token(now, None) {
                    self.violate(match other {
                        Frame::Text(_) => Violation::TextFrame,
                        _ => Violation::BinaryFrame,
                    });
                }
                return;
            }
        };
        if handshake {
            // `connect` opens the budget and takes no token: it comes once
            // per connection, and connections are paced by admission and
            // the per-source limits (spec/PROTOCOL.md §8.2).
            return self.on_handshake_frame(now, decoded);
        }
        if authenticating {
            return match decoded {
                Ok(message) => self.on_pipelined(now, message),
                Err(_) => self.violate(Violation::NotConnectFirst),
            };
        }
        match decoded {
            // Pings and pongs are messages too: an expired credential
            // closes on them as on any other (spec/PROTOCOL.md §2.7).
            Ok(ClientMessage::Ping | ClientMessage::Pong) if self.credentials_expired(now) => {
                self.close_with(crate::close::CloseCode::UNAUTHORIZED, "credentials expired");
            }
            Ok(ClientMessage::Ping) => {
                if self.liveness(now) {
                    self.send(ServerMessage::Pong);
                }
            }
            Ok(ClientMessage::Pong) => {
                self.note_pong(now);
                self.liveness(now);
            }
            Ok(message) => {
                let id = match &message {
                    ClientMessage::Request(request) => Some(request.id),
                    _ => None,
                };
                if let Budget::Allowed = self.take_token(now, id) {
                    self.on_message(now, message);
                }
            }
            Err(DecodeError::TooLarge { .. }) => self.violate(Violation::FrameTooLarge),
            Err(error) => self.on_undecodable(now, raw, &error),
        }
    }

    /// The driver could not queue a frame for the peer (its outbound budget
    /// is full): close 4009.
    pub(super) fn handle_queue_full(&mut self) {
        if !self.is_closed() {
            self.violate(Violation::SlowConsumer);
        }
    }

    /// The transport failed to deliver the next frame.
    pub(super) fn handle_transport_error(&mut self, error: TransportError) {
        if self.is_closed() {
            return;
        }
        match error {
            TransportError::TooLarge => self.violate(Violation::FrameTooLarge),
            TransportError::InvalidUtf8 => self.violate(Violation::InvalidUtf8),
            TransportError::Protocol => {
                self.close_with(crate::close::CloseCode::PROTOCOL_ERROR, "protocol error")
            }
            TransportError::Gone => self.peer_gone(None),
        }
    }

    /// A message that followed `connect` before `welcome`. It takes its
    /// token now (a liveness one for ping and pong) and is held until the
    /// verdict (at most MAX_BEFORE_WELCOME), so nothing but `welcome` can be
    /// the first message; one over the budget is answered `rate_limited`
    /// right after `welcome`.
    fn on_pipelined(&mut self, now: Instant, message: ClientMessage) {
        let held = match message {
            ClientMessage::Connect(_) => return self.violate(Violation::DuplicateConnect),
            ClientMessage::Pong => {
                self.liveness(now);
                return;
            }
            ClientMessage::Ping if !self.liveness(now) => return,
            ClientMessage::Ping => Pipelined::Message(message),
            message => {
                let request = match &message {
                    ClientMessage::Request(request) => Some(request.id),
                    _ => None,
                };
                match self.rate.check(now) {
                    RateDecision::Allow => Pipelined::Message(message),
                    RateDecision::Close { retry_after } => {
                        return self.violate(Violation::Flood { retry_after })
                    }
                    RateDecision::Refuse { retry_after } => Pipelined::RateLimited {
                        request,
                        retry_after,
                    },
                }
            }
        };
        let Stage::Authenticating { backlog, .. } = &mut self.stage else {
            // A flood of liveness frames closed it.
            return;
        };
        if backlog.len() >= MAX_BEFORE_WELCOME {
            return self.violate(Violation::NotConnectFirst);
        }
        backlog.push_back(held);
    }

    /// A decoded message on an established session.
    pub(super) fn on_message(&mut self, now: Instant, message: ClientMessage) {
        match &mut self.stage {
            // Draining: nothing new is started.
            Stage::Draining { .. }
            | Stage::Closed
            | Stage::Handshake { .. }
            | Stage::Authenticating { .. } => return,
            Stage::Open(_) => {
                if self.credentials_expired(now) {
                    return self
                        .close_with(crate::close::CloseCode::UNAUTHORIZED, "credentials expired");
                }
            }
        }
        match message {
            ClientMessage::Connect(_) => self.violate(Violation::DuplicateConnect),
            ClientMessage::Request(request) => self.on_request(request),
            ClientMessage::Subscribe(subscribe) => self.on_subscribe(subscribe),
            ClientMessage::Unsubscribe(unsubscribe) => self.on_unsubscribe(&unsubscribe.channel),
            ClientMessage::Refresh(refresh) => self.on_refresh(refresh.token),
            ClientMessage::SubRefresh(refresh) => self.on_sub_refresh(refresh),
            ClientMessage::Ping | ClientMessage::Pong => {}
        }
    }

    /// Whether the open session's credential has expired at `now`.
    fn credentials_expired(&self, now: Instant) -> bool {
        matches!(&self.stage, Stage::Open(open) if open.expires_at.is_some_and(|at| now >= at))
    }

    fn on_undecodable(&mut self, now: Instant, raw: Raw<'_>, error: &DecodeError) {
        self.event(Event::BadFrame);
        // A request whose id can be read still gets its one response
        // (spec/PROTOCOL.md §8.2). Not JSON counts too: params past the
        // scanner's reach (nesting, say) make the whole frame fail as JSON,
        // and the id written before them can still be read.
        let id = match error {
            DecodeError::Invalid {
                kind: MessageKind::Request,
                ..
            }
            | DecodeError::NotJson { .. } => raw.request_id(),
            _ => None,
        };
        if let Budget::Spent = self.take_token(now, id) {
            return;
        }
        match (id, error) {
            (Some(id), _) => {
                self.event(Event::RequestRefused("bad_request"));
                self.send(ServerMessage::Response(Response {
                    id,
                    reply: Reply::Error(ErrorBody::new("bad_request", error.to_string())),
                }));
            }
            (None, DecodeError::UnknownType { .. }) => self.violate(Violation::UnknownType),
            (None, _) => self.violate(Violation::MalformedFrame),
        }
    }

    /// The answer to our ping: the connection is idle, so the next ping
    /// is on its beat, if it has one.
    fn note_pong(&mut self, now: Instant) {
        if let Stage::Open(open) | Stage::Draining { open, .. } = &mut self.stage {
            open.heartbeat.handle_pong(now);
        }
    }

    /// A liveness frame (ping or pong, JSON or WebSocket): `true` if a ping
    /// may be answered; over its budget it is not answered, and a flood
    /// closes 4029.
    fn liveness(&mut self, now: Instant) -> bool {
        match self.liveness.check(now) {
            RateDecision::Allow => true,
            RateDecision::Close { retry_after } => {
                self.violate(Violation::LivenessFlood { retry_after });
                false
            }
            _ => false,
        }
    }

    /// Take a token from the message budget for a data frame (`request`:
    /// the id of the request it carries). Over the budget the frame is
    /// answered `rate_limited` (a request as its one `response`) or, for a
    /// flood, the connection closes 4029.
    fn take_token(&mut self, now: Instant, request: Option<u64>) -> Budget {
        match self.rate.check(now) {
            RateDecision::Allow => Budget::Allowed,
            RateDecision::Close { retry_after } => {
                self.violate(Violation::Flood { retry_after });
                Budget::Spent
            }
            RateDecision::Refuse { retry_after } => {
                self.refuse_rate_limited(request, retry_after);
                Budget::Spent
            }
        }
    }

    /// Answer a data frame over the message budget: a request gets its one
    /// `response` `rate_limited`, anything else an `error`.
    pub(super) fn refuse_rate_limited(&mut self, request: Option<u64>, retry_after: Duration) {
        let violation = Violation::RateLimited { retry_after };
        match request {
            Some(id) => {
                self.event(Event::RequestRefused("rate_limited"));
                self.respond(id, violation.refusal());
            }
            None => self.violate(violation),
        }
    }

    pub(super) fn respond(&mut self, id: u64, reply: Reply) {
        self.send(ServerMessage::Response(Response { id, reply }));
    }
}

/// A data frame as it came, for what can be read of one that does not decode.
#[derive(Clone, Copy)]
enum Raw<'a> {
    Text(&'a str),
    Binary(&'a [u8]),
}

impl Raw<'_> {
    /// The id of the request it carries, if that much can be read.
    fn request_id(self) -> Option<u64> {
        match self {
            // Only `type` and `id`: the params that made the frame fail
            // are not parsed again.
            Raw::Text(text) => peek_json_request_id(text),
            Raw::Binary(bytes) => peek_request_id(bytes),
        }
    }
}
