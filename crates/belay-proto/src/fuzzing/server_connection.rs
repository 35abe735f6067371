//! Fuzz target `server_connection`: the server core,
//! [`crate::server::Connection`], driven in virtual time by a structured
//! sequence of [`Step`]s — client frames built as JSON from a small model
//! (or any text), control frames, transport failures, time moves, answers
//! to the questions it asked (in any order, late, or for tickets it never
//! issued), live publications and the server's commands — with its
//! invariants checked after every step.
//!
//! After **every** call the driver drains every output and checks,
//! panicking with `server_connection: invariant N (…) violated …`:
//!
//! 1. **Nothing after the end**: after `Close` or `PeerGone` only `Leave`
//!    (a join answered late is left again) may come out.
//! 2. **`welcome` first and once**: before `welcome` the client can only be
//!    sent `reconnect` advice (then the close); `welcome` is sent at most
//!    once, and only after an `Authenticate` that was answered accepted.
//! 3. **One response per request**: the responses for an id never outnumber
//!    the `request` frames with that id sent so far; a `Call` ticket is
//!    answered with at most one response.
//! 4. **Bounded**: calls running ≤ `max_in_flight`, subscriptions held ≤
//!    `max_subscriptions`; a `subscribed` is sent only for a channel whose
//!    `Join` was answered `Joined`.
//! 5. **No busy loop; `poll_timeout` is never in the past** after
//!    `handle_timeout` at that instant.
//! 6. **Only close codes a server may send.**
//!
//! The checks of 1–6 are the one checker's,
//! [`ServerInvariants`](crate::testing::invariants::ServerInvariants), which
//! Pair and belay-server's `connection` target use too; this driver adds
//! that a `Call` ticket is answered with at most one response, and the
//! busy-loop bound.

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

use serde_json::json;

use crate::message::{
    encode_client, encode_client_binary, ClientMessage, Codec, ErrorBody, RawJson, Reply,
};
use crate::message::{Connect, Request, StreamPosition, Subscribe, Unsubscribe, PROTOCOL_VERSION};
use crate::server::{
    AuthVerdict, Connection, Frame, Input, JoinAnswer, Limits, Output, Ticket, TransportError,
};
use crate::testing::invariants::{ServerInvariants, Violation};
use crate::{CloseCode, Instant};

mod input;

use input::channel;
pub use input::{Answer, ClientFrame, ConnectionInput, Step};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    Auth,
    Subscribe,
    Join,
    Request,
    Call,
}

struct Harness {
    conn: Connection<String>,
    now: Instant,
    pending: VecDeque<(Ticket, Asked, String)>,
    /// Joined subscriptions: (channel, subscription id).
    joined: Vec<(String, u64)>,
    next_subscription: u64,
    /// The one checker (`testing::invariants`) of invariants 1–5.
    invariants: ServerInvariants,
    calls_answered: BTreeSet<Ticket>,
}

fn violated(n: u32, what: &str, detail: impl std::fmt::Debug) -> ! {
    panic!("server_connection: invariant {n} ({what}) violated: {detail:?}")
}

/// A broken invariant of the checker.
fn broken(violation: &Violation) -> ! {
    panic!("server_connection: {violation}")
}

impl Harness {
    fn new() -> Self {
        let mut limits = Limits::default();
        limits
            .set_max_in_flight(3)
            .set_max_subscriptions(3)
            .set_burst(40)
            .set_liveness_burst(40);
        Harness {
            invariants: ServerInvariants::new(&limits),
            conn: Connection::new(limits, Instant::ZERO, 1),
            now: Instant::ZERO,
            pending: VecDeque::new(),
            joined: Vec::new(),
            next_subscription: 1,
            calls_answered: BTreeSet::new(),
        }
    }

    fn drain(&mut self) {
        while let Some(output) = self.conn.poll_output() {
            if let Err(violation) = self.invariants.output(&output) {
                broken(&violation);
            }
            match output {
                Output::Authenticate { ticket, .. } => {
                    self.pending.push_back((ticket, Asked::Auth, String::new()))
                }
                Output::AuthorizeSubscribe {
                    ticket, channel, ..
                } => self.pending.push_back((ticket, Asked::Subscribe, channel)),
                Output::Join {
                    ticket, channel, ..
                } => self.pending.push_back((ticket, Asked::Join, channel)),
                Output::AuthorizeRequest { ticket, .. } => {
                    self.pending
                        .push_back((ticket, Asked::Request, String::new()))
                }
                Output::Call { ticket, .. } => {
                    self.pending.push_back((ticket, Asked::Call, String::new()))
                }
                Output::Leave { subscription, .. } => {
                    self.joined.retain(|(_, s)| *s != subscription)
                }
                _ => {}
            }
        }
        if let Err(violation) = self.invariants.after_batch(&self.conn) {
            broken(&violation);
        }
    }

    fn take(&mut self, kind: Asked, newest: bool) -> Option<(Ticket, String)> {
        let position = if newest {
            self.pending.iter().rposition(|(_, k, _)| *k == kind)
        } else {
            self.pending.iter().position(|(_, k, _)| *k == kind)
        }?;
        self.pending.remove(position).map(|(t, _, c)| (t, c))
    }

    fn answer(&mut self, answer: Answer, ticket: Option<(Ticket, String)>) {
        let now = self.now;
        match answer {
            Answer::Auth { accept, expires_in } => {
                let Some((ticket, _)) = ticket else { return };
                self.invariants.auth_answered(accept);
                let verdict = if accept {
                    AuthVerdict::Accepted {
                        expires_at: expires_in
                            .map(|s| now.saturating_add(Duration::from_secs(u64::from(s)))),
                        pacing: None,
                    }
                } else {
                    AuthVerdict::Refused
                };
                self.conn.handle_input(now, Input::Auth { ticket, verdict });
            }
            Answer::Subscribe(ok) => {
                let Some((ticket, _)) = ticket else { return };
                let verdict = if ok {
                    Ok(())
                } else {
                    Err(ErrorBody::new("forbidden", "no"))
                };
                self.conn.handle_input(
                    now,
                    Input::SubscribeAuthorized {
                        ticket,
                        verdict: verdict.map(|()| None),
                    },
                );
            }
            Answer::Join(kind) => {
                let Some((ticket, channel)) = ticket else {
                    return;
                };
                let answer = match kind % 3 {
                    0 => {
                        let subscription = self.next_subscription;
                        self.next_subscription += 1;
                        self.joined.push((channel.clone(), subscription));
                        self.invariants.join_granted(&channel);
                        JoinAnswer::Joined {
                            subscribed: crate::message::Subscribed {
                                channel,
                                epoch: "a".into(),
                                offset: 0,
                                recovered: false,
                            },
                            subscription,
                            replay: vec![(1, "replayed".to_owned())],
                        }
                    }
                    1 => JoinAnswer::NoRoom,
                    _ => JoinAnswer::Unavailable(ErrorBody::new("unavailable", "down")),
                };
                self.conn.handle_input(
                    now,
                    Input::Joined {
                        ticket,
                        answer,
                        room: None,
                    },
                );
                // A join the connection no longer wanted is left at once;
                // it must not count as granted.
                self.drain();
                self.invariants.joins_settled();
            }
            Answer::Request(ok) => {
                let Some((ticket, _)) = ticket else { return };
                let verdict = if ok {
                    Ok(())
                } else {
                    Err(ErrorBody::new("forbidden", "no"))
                };
                self.conn
                    .handle_input(now, Input::RequestAuthorized { ticket, verdict });
            }
            Answer::Reply(ok) => {
                let Some((ticket, _)) = ticket else { return };
                let reply = if ok {
                    Reply::Result(RawJson::null())
                } else {
                    Reply::Error(ErrorBody::new("internal", "boom"))
                };
                let first = self.calls_answered.insert(ticket);
                let before = self.invariants.responses();
                self.conn.handle_input(now, Input::Reply { ticket, reply });
                self.drain();
                let after = self.invariants.responses();
                if !first && after > before {
                    violated(3, "one response per request", ticket);
                }
            }
        }
    }

    fn frame(&mut self, frame: &ClientFrame) {
        let message = match frame {
            ClientFrame::Connect { ours, token } => ClientMessage::Connect(Connect {
                protocol: if *ours { PROTOCOL_VERSION } else { 99 },
                token: token.then(|| "t".to_owned()),
                session: None,
            }),
            ClientFrame::Request { id, keyed } => {
                self.invariants.request_sent(Some(u64::from(*id)));
                ClientMessage::Request(Request {
                    id: u64::from(*id),
                    method: "echo".into(),
                    params: json!(1),
                    idem: keyed.then(|| "k".to_owned()),
                    timeout_ms: None,
                })
            }
            ClientFrame::Subscribe { channel: c, since } => ClientMessage::Subscribe(Subscribe {
                channel: channel(*c),
                since: since.map(|(first, offset)| StreamPosition {
                    epoch: if first { "a" } else { "b" }.into(),
                    offset: u64::from(offset),
                }),
                token: None,
            }),
            ClientFrame::Unsubscribe { channel: c } => ClientMessage::Unsubscribe(Unsubscribe {
                channel: channel(*c),
            }),
            ClientFrame::Ping => ClientMessage::Ping,
            ClientFrame::Pong => ClientMessage::Pong,
            ClientFrame::Unknown if self.binary() => {
                return self
                    .conn
                    .handle_input(self.now, Input::Frame(Frame::Binary(&[0x12, 0x34])));
            }
            ClientFrame::Unknown => {
                return self.text(r#"{"type":"frobnicate"}"#);
            }
            ClientFrame::BadRequest { id } => {
                self.invariants.request_sent(Some(u64::from(*id)));
                if self.binary() {
                    // Code, flags, the id, then a method past the frame.
                    let mut frame = vec![0x00, 0x10, 0x00];
                    frame.extend(leb128(u64::from(*id)));
                    frame.push(0x7f);
                    return self
                        .conn
                        .handle_input(self.now, Input::Frame(Frame::Binary(&frame)));
                }
                return self.text(&format!(r#"{{"type":"request","id":{id},"method":5}}"#));
            }
        };
        if self.binary() {
            let frame = encode_client_binary(&message);
            self.conn
                .handle_input(self.now, Input::Frame(Frame::Binary(&frame)));
        } else {
            self.text(&encode_client(&message));
        }
    }

    fn binary(&self) -> bool {
        self.conn.codec() == Codec::Binary
    }

    fn text(&mut self, text: &str) {
        self.conn
            .handle_input(self.now, Input::Frame(Frame::Text(text)));
    }

    /// Move time to `until`, firing every deadline on the way.
    fn wait(&mut self, by: Duration) {
        let until = self.now.saturating_add(by);
        for _ in 0..10_000 {
            self.drain();
            match self.conn.poll_timeout() {
                Some(at) if at <= until => {
                    self.now = self.now.max(at);
                    self.conn.handle_timeout(self.now);
                    self.drain();
                    if let Err(violation) = self.invariants.after_timeout(self.now, &self.conn) {
                        broken(&violation);
                    }
                }
                _ => {
                    self.now = until;
                    return;
                }
            }
        }
        violated(5, "no busy loop", self.now);
    }

    fn step(&mut self, step: &Step) {
        let now = self.now;
        match step {
            Step::Frame(frame) => self.frame(frame),
            Step::Text(text) => self.text(text),
            Step::Binary(bytes) => self
                .conn
                .handle_input(now, Input::Frame(Frame::Binary(bytes))),
            Step::UseBinaryCodec => self.conn.set_codec(Codec::Binary),
            Step::WsPing(payload) => {
                let payload = &payload[..payload.len().min(125)];
                self.conn
                    .handle_input(now, Input::Frame(Frame::Ping(payload)));
            }
            Step::WsPong => self.conn.handle_input(now, Input::Frame(Frame::Pong)),
            Step::PeerClose(code) => self
                .conn
                .handle_input(now, Input::Frame(Frame::Close(*code))),
            Step::TransportError(kind) => {
                let error = match kind % 4 {
                    0 => TransportError::TooLarge,
                    1 => TransportError::InvalidUtf8,
                    2 => TransportError::Protocol,
                    _ => TransportError::Gone,
                };
                self.conn.handle_input(now, Input::TransportError(error));
            }
            Step::Wait(ms) => self.wait(Duration::from_millis(u64::from(*ms))),
            Step::LongWait(s) => self.wait(Duration::from_secs(u64::from(*s))),
            Step::Answer(answer) | Step::AnswerNewest(answer) => {
                let newest = matches!(step, Step::AnswerNewest(_));
                let kind = match answer {
                    Answer::Auth { .. } => Asked::Auth,
                    Answer::Subscribe(_) => Asked::Subscribe,
                    Answer::Join(_) => Asked::Join,
                    Answer::Request(_) => Asked::Request,
                    Answer::Reply(_) => Asked::Call,
                };
                let ticket = self.take(kind, newest);
                self.answer(*answer, ticket);
            }
            Step::Stray(answer) => {
                // A ticket number far beyond any the connection issued.
                self.answer(*answer, Some((Ticket(u64::MAX - 7), "news".into())));
            }
            Step::Live {
                pick,
                offset,
                stale,
            } => {
                if let Some((channel, subscription)) = self.pick(*pick) {
                    let id = if *stale {
                        subscription + 1_000
                    } else {
                        subscription
                    };
                    let frame = format!("live {offset}");
                    self.conn.handle_input(
                        now,
                        Input::Live {
                            channel: &channel,
                            subscription: id,
                            offset: u64::from(*offset),
                            frame,
                        },
                    );
                }
            }
            Step::Lagged(pick) => {
                if let Some((channel, subscription)) = self.pick(*pick) {
                    self.conn.handle_input(
                        now,
                        Input::Lagged {
                            channel: &channel,
                            subscription,
                        },
                    );
                }
            }
            Step::Ended(pick, unavailable) => {
                if let Some((channel, subscription)) = self.pick(*pick) {
                    let error = if *unavailable {
                        crate::message::ErrorBody::new("unavailable", "store lost")
                    } else {
                        crate::message::ErrorBody::new("moved", "channel moved")
                    };
                    self.conn.handle_input(
                        now,
                        Input::SubscriptionEnded {
                            channel: &channel,
                            subscription,
                            error: &error,
                        },
                    );
                }
            }
            Step::Advise => self.conn.advise(crate::message::ReconnectAdvice {
                reason: "restart".into(),
                min_delay_ms: 0,
                max_delay_ms: 100,
                message: None,
            }),
            Step::Close(code) => self.conn.close(CloseCode(*code), "bye"),
            Step::Drain(s) => {
                let until = now.saturating_add(Duration::from_secs(u64::from(*s)));
                self.conn.drain(now, until);
            }
            Step::QueueFull => self.conn.handle_input(now, Input::QueueFull),
            Step::UnsubscribeAll => self
                .conn
                .unsubscribe_all(&ErrorBody::new("unavailable", "down")),
            Step::RefuseOverload(ms) => self
                .conn
                .refuse_overload(Duration::from_millis(u64::from(*ms))),
        }
        self.drain();
    }

    fn pick(&self, pick: u8) -> Option<(String, u64)> {
        if self.joined.is_empty() {
            return None;
        }
        let (channel, id) = &self.joined[usize::from(pick) % self.joined.len()];
        Some((channel.clone(), *id))
    }
}

/// `value` as an unsigned LEB128 (the binary codec's `uint`).
fn leb128(mut value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

/// Run one input, panicking on the first invariant it breaks.
pub fn run(input: &ConnectionInput) {
    let mut harness = Harness::new();
    for step in input.steps.iter().take(2_000) {
        harness.step(step);
    }
    harness.wait(Duration::from_secs(600));
}
