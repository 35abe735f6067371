//! The server side of a [`Pair`]: one `Connection` per transport a client
//! opened, answered by the [`Application`] (authenticator and methods), an
//! allow-all authorizer and the [`ModelBroker`](super::ModelBroker).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::close::CloseCode;
use crate::message::{decode_client, encode_server, ClientMessage, RawJson, ReconnectAdvice};
use crate::server::{Connection, Event as ServerEvent, Frame, Input, JoinAnswer, Limits, Output};

use super::application::{Answer, Application};
use super::invariants::{ServerInvariants, Violation};
use super::link::Direction;
use super::records::{ConnectionId, ServerRecord};
use super::schedule::{Delivery, Wire};
use super::Pair;

/// The server's connections and what happened to them.
#[derive(Debug)]
pub(super) struct ServerSide {
    pub(super) application: Application,
    limits: Arc<Limits>,
    seed: u64,
    pub(super) connections: BTreeMap<ConnectionId, Connection<String>>,
    /// Each connection's checker: every output goes through it.
    invariants: BTreeMap<ConnectionId, ServerInvariants>,
    pub(super) log: Vec<ServerRecord>,
    /// Closes go out as dropped sockets, without a close frame.
    dropping: bool,
}

impl ServerSide {
    pub(super) fn new(limits: Limits, seed: u64) -> Self {
        ServerSide {
            application: Application::default(),
            limits: Arc::new(limits),
            seed,
            connections: BTreeMap::new(),
            invariants: BTreeMap::new(),
            log: Vec::new(),
            dropping: false,
        }
    }
}

impl Pair {
    /// Publish `data` on `channel` from the application at the current
    /// time; returns its offset.
    pub fn publish(&mut self, channel: &str, data: serde_json::Value) -> u64 {
        let now = self.now();
        let (offset, deliveries) = self
            .broker
            .publish(now, channel, RawJson::from_value(&data));
        for ((id, subscription), frame) in deliveries {
            self.with_connection(id, |conn| {
                let live = Input::Live {
                    channel,
                    subscription,
                    offset,
                    frame,
                };
                conn.handle_input(now, live);
            });
        }
        self.pump_clients();
        offset
    }

    /// The server closes every connection with `code` (a restart without
    /// a drain, a policy close).
    pub fn close_server_connections(&mut self, code: CloseCode, reason: &str) {
        for id in self.connection_ids() {
            self.with_connection(id, |conn| conn.close(code, reason));
        }
    }

    /// Every connection's socket drops without a close frame (a crashed
    /// process, a proxy that cut it): the clients see an abnormal close.
    pub fn drop_server_connections(&mut self) {
        self.server.dropping = true;
        self.close_server_connections(CloseCode::GOING_AWAY, "dropped");
        self.server.dropping = false;
    }

    /// The server tells every client to reconnect within the advice's
    /// window (a drain's first step).
    pub fn advise_clients(&mut self, advice: &ReconnectAdvice) {
        for id in self.connection_ids() {
            self.with_connection(id, |conn| conn.advise(advice.clone()));
        }
    }

    /// The server drains: every connection is closed 1012 once its requests
    /// are answered, at most `within` from now.
    pub fn drain_server(&mut self, within: Duration) {
        let now = self.now();
        let until = now.saturating_add(within);
        for id in self.connection_ids() {
            self.with_connection(id, |conn| conn.drain(now, until));
        }
    }

    pub(super) fn connection_ids(&self) -> Vec<ConnectionId> {
        self.server.connections.keys().copied().collect()
    }

    /// A client's connection reaches the server.
    pub(super) fn accept(&mut self, id: ConnectionId) {
        let now = self.now();
        let server = &mut self.server;
        let seed = server.seed ^ ((id.client.0 as u64) << 32) ^ id.transport.0;
        let conn = Connection::new(Arc::clone(&server.limits), now, seed);
        server.log.push(ServerRecord::Accepted { at: now, id });
        self.node.accepted(now, id);
        server.connections.insert(id, conn);
        let invariants = ServerInvariants::new(&server.limits);
        server.invariants.insert(id, invariants);
    }

    /// A client's frame reaches its server connection.
    pub(super) fn server_receives(&mut self, id: ConnectionId, wire: &Wire) {
        let now = self.now();
        if let (Wire::Text(text), Some(invariants)) = (wire, self.server.invariants.get_mut(&id)) {
            if let Ok(ClientMessage::Request(request)) = decode_client(text) {
                invariants.request_sent(Some(request.id));
            }
        }
        self.with_connection(id, |conn| {
            let frame = match wire {
                Wire::Text(text) => Frame::Text(text),
                Wire::Close(code, _) => Frame::Close(Some(*code)),
                Wire::Dropped => Frame::Close(None),
            };
            conn.handle_input(now, Input::Frame(frame));
        });
    }

    /// Fire the server connections' timers due now, checking that none is
    /// left in the past.
    pub(super) fn server_timeouts(&mut self) {
        let now = self.now();
        let due: Vec<_> = self
            .server
            .connections
            .iter()
            .filter(|(_, c)| c.poll_timeout().is_some_and(|at| at <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            self.with_connection(id, |conn| conn.handle_timeout(now));
            let conn = self.server.connections.get(&id);
            let invariants = self.server.invariants.get(&id);
            if let (Some(conn), Some(invariants)) = (conn, invariants) {
                let checked = invariants.after_timeout(now, conn);
                checked.unwrap_or_else(|v| panic!("pair: server {id:?} at {now:?}: {v}"));
            }
        }
    }

    /// Give `id`'s connection to `f` (if it is still alive), then carry out
    /// its outputs.
    pub(super) fn with_connection(
        &mut self,
        id: ConnectionId,
        f: impl FnOnce(&mut Connection<String>),
    ) {
        if let Some(mut conn) = self.server.connections.remove(&id) {
            f(&mut conn);
            self.pump_server(id, conn);
        }
    }

    /// Carry out a server connection's outputs, then put it back unless it
    /// ended.
    fn pump_server(&mut self, id: ConnectionId, mut conn: Connection<String>) {
        let now = self.now();
        let mut ended = false;
        let mut invariants = self.server.invariants.remove(&id);
        let fail = |v: Violation| -> ! { panic!("pair: server {id:?} at {now:?}: {v}") };
        while let Some(output) = conn.poll_output() {
            if let Some(invariants) = &mut invariants {
                invariants.output(&output).unwrap_or_else(|v| fail(v));
            }
            let answer = match output {
                Output::Send(message) => {
                    self.send_down(id, Wire::Text(encode_server(&message)));
                    None
                }
                Output::SendEncoded(frame) => {
                    self.send_down(id, Wire::Text(frame));
                    None
                }
                Output::Authenticate { ticket, .. } => Some(Input::Auth {
                    ticket,
                    verdict: self.server.application.verdict(now),
                }),
                Output::Reauthenticate { ticket, .. } => Some(Input::Refresh {
                    ticket,
                    verdict: self.server.application.verdict(now),
                }),
                Output::AuthorizeSubscribe { ticket, token, .. } => {
                    let verdict = self.server.application.subscription(token.as_deref());
                    Some(Input::SubscribeAuthorized { ticket, verdict })
                }
                Output::CheckSubscriptionToken { ticket, token, .. } => {
                    let verdict = self.server.application.subscription(Some(&token));
                    Some(Input::SubRefreshChecked { ticket, verdict })
                }
                Output::Join {
                    ticket,
                    channel,
                    since,
                } => {
                    let answer = self.broker.join(now, id, &channel, since.as_ref());
                    if let JoinAnswer::Joined { subscription, .. } = &answer {
                        self.node.presence(id, &channel, *subscription, true);
                        self.host_channel(id, &channel, true);
                    }
                    Some(Input::Joined {
                        ticket,
                        answer,
                        room: None,
                    })
                }
                Output::Leave {
                    channel,
                    subscription,
                } => {
                    self.broker.leave(&channel, subscription);
                    self.node.presence(id, &channel, subscription, false);
                    self.host_channel(id, &channel, false);
                    None
                }
                Output::AuthorizeRequest { ticket, .. } => Some(Input::RequestAuthorized {
                    ticket,
                    verdict: Ok(()),
                }),
                Output::Call { ticket, request } => {
                    let relayed = self.host_request(id, ticket, &request.method, &request.params);
                    if let Some(now_or_later) = relayed {
                        now_or_later.map(|reply| Input::Reply { ticket, reply })
                    } else {
                        match self
                            .server
                            .application
                            .call(&request.method, &request.params)
                        {
                            Answer::Now(reply) => Some(Input::Reply { ticket, reply }),
                            Answer::After(delay, reply) => {
                                let later = Delivery::Reply(id, ticket, reply);
                                self.schedule.push(delay, later);
                                None
                            }
                        }
                    }
                }
                Output::Close { code, reason, .. } => {
                    let closed = ServerRecord::Closed {
                        at: now,
                        id,
                        code: code.0,
                    };
                    self.server.log.push(closed);
                    let wire = match self.server.dropping {
                        true => Wire::Dropped,
                        false => Wire::Close(code.0, reason),
                    };
                    self.send_down(id, wire);
                    ended = true;
                    None
                }
                Output::PeerGone { .. } => {
                    self.server.log.push(ServerRecord::PeerGone { at: now, id });
                    ended = true;
                    None
                }
                Output::Event(event) => {
                    if let ServerEvent::Connected { session } = &event {
                        self.node.identified(now, id, session);
                    }
                    let record = ServerRecord::Event { at: now, id, event };
                    self.server.log.push(record);
                    None
                }
                _ => None,
            };
            if let (Some(input), Some(invariants)) = (&answer, &mut invariants) {
                match input {
                    Input::Auth { .. } => invariants.auth_answered(true),
                    Input::Joined {
                        answer: JoinAnswer::Joined { subscribed, .. },
                        ..
                    } => invariants.join_granted(&subscribed.channel),
                    _ => {}
                }
            }
            if let Some(input) = answer {
                conn.handle_input(now, input);
            }
        }
        if let Some(invariants) = invariants {
            invariants.after_batch(&conn).unwrap_or_else(|v| fail(v));
            if !ended {
                self.server.invariants.insert(id, invariants);
            }
        }
        if ended {
            self.node.closed(now, id);
        } else {
            self.server.connections.insert(id, conn);
        }
    }

    fn send_down(&mut self, id: ConnectionId, wire: Wire) {
        let link = &mut self.clients[id.client.0].link;
        if link.delivers(Direction::Down) {
            let latency = link.latency;
            self.schedule.push(latency, Delivery::ToClient(id, wire));
        }
    }
}
