//! [`Pair`]: one client `Session` against server `Connection`s over a
//! simulated [`Link`], in virtual time.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::time::Duration;

use belay_proto::message::{encode_client, encode_server, ErrorBody, RawJson, Reply};
use belay_proto::server::{
    AuthVerdict, Connection, Event as ServerEvent, Frame, Input as ServerInput, Limits, Output,
};
use belay_proto::{
    CloseCode, CloseInfo, Config, Event, Input, Instant, Output as ClientOutput, Session,
    TransportId,
};

use crate::broker::ModelBroker;
use crate::link::{Direction, Link};

/// The most steps one `run_*` call may take: a machine whose timeout never
/// moves forward would spin forever without it.
const MAX_STEPS: usize = 10_000_000;

/// What happened on the server side, for assertions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerRecord {
    /// A connection was set up.
    Accepted {
        /// When.
        at: Instant,
        /// Which.
        id: TransportId,
    },
    /// The server closed a connection with this code.
    Closed {
        /// When.
        at: Instant,
        /// Which.
        id: TransportId,
        /// Its close code.
        code: u16,
    },
    /// The client closed it (or its close arrived).
    PeerGone {
        /// When.
        at: Instant,
        /// Which.
        id: TransportId,
    },
    /// Something the server connection reported.
    Event {
        /// When.
        at: Instant,
        /// Which.
        id: TransportId,
        /// What.
        event: ServerEvent,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Wire {
    Text(String),
    Close(u16, String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Delivery {
    /// The connection reaches the server.
    Accept(TransportId),
    /// The client learns it is open.
    Opened(TransportId),
    ToServer(TransportId, Wire),
    ToClient(TransportId, Wire),
}

#[derive(Debug, PartialEq, Eq)]
struct Scheduled {
    at: Instant,
    seq: u64,
    delivery: Delivery,
}

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

/// A client session, the server connections it opens, the link between
/// them and a broker, on one virtual clock.
pub struct Pair {
    now: Instant,
    /// The client core, driven by the pair (call its commands freely).
    pub client: Session,
    /// The network; change it between runs.
    pub link: Link,
    /// The server's channels.
    pub broker: ModelBroker,
    limits: std::sync::Arc<Limits>,
    servers: BTreeMap<TransportId, Connection<String>>,
    queue: BinaryHeap<Reverse<Scheduled>>,
    seq: u64,
    client_open: BTreeSet<TransportId>,
    /// Every event the client emitted, with its time.
    pub events: Vec<(Instant, Event)>,
    /// What happened on the server side.
    pub server_log: Vec<ServerRecord>,
    /// The most transports the client held open at once.
    pub max_open_transports: usize,
    seed: u64,
}

impl std::fmt::Debug for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pair")
            .field("now", &self.now)
            .field("servers", &self.servers.len())
            .field("queued", &self.queue.len())
            .finish_non_exhaustive()
    }
}

impl Pair {
    /// A client with `config` and a server with default limits over a link
    /// of 20 ms each way; `seed` drives every random choice.
    pub fn new(config: Config, seed: u64) -> Self {
        Pair::with_limits(config, Limits::default(), seed)
    }

    /// As [`new`](Self::new), with the server's `limits`.
    pub fn with_limits(config: Config, limits: Limits, seed: u64) -> Self {
        Pair {
            now: Instant::ZERO,
            client: Session::new(config, Instant::ZERO, seed),
            link: Link::new(Duration::from_millis(20), seed ^ 0x5eed),
            broker: ModelBroker::new(1_000, Duration::from_secs(300)),
            limits: std::sync::Arc::new(limits),
            servers: BTreeMap::new(),
            queue: BinaryHeap::new(),
            seq: 0,
            client_open: BTreeSet::new(),
            events: Vec::new(),
            server_log: Vec::new(),
            max_open_transports: 0,
            seed,
        }
    }

    /// The virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Server connections alive now.
    pub fn server_connections(&self) -> usize {
        self.servers.len()
    }

    /// Publish `data` on `channel` from the application at the current
    /// time; returns its offset.
    pub fn publish(&mut self, channel: &str, data: serde_json::Value) -> u64 {
        let (offset, deliveries) =
            self.broker
                .publish(self.now, channel, RawJson::from_value(&data));
        for ((id, subscription), frame) in deliveries {
            if let Some(mut conn) = self.servers.remove(&id) {
                conn.handle_input(
                    self.now,
                    ServerInput::Live {
                        channel,
                        subscription,
                        offset,
                        frame,
                    },
                );
                self.pump_server(id, conn);
            }
        }
        self.pump_client();
        offset
    }

    /// The server closes every connection with `code` (a restart without
    /// a drain, a policy close).
    pub fn close_server_connections(&mut self, code: CloseCode, reason: &str) {
        for id in self.servers.keys().copied().collect::<Vec<_>>() {
            if let Some(mut conn) = self.servers.remove(&id) {
                conn.close(code, reason);
                self.pump_server(id, conn);
            }
        }
    }

    /// The server drains: every connection is closed 1012 once its requests
    /// are answered, at most `within` from now.
    pub fn drain_server(&mut self, within: Duration) {
        let until = self.now.saturating_add(within);
        for id in self.servers.keys().copied().collect::<Vec<_>>() {
            if let Some(mut conn) = self.servers.remove(&id) {
                conn.drain(self.now, until);
                self.pump_server(id, conn);
            }
        }
    }

    /// Run the client's pending outputs and everything due up to `now +
    /// duration`, jumping from one due instant to the next.
    pub fn run_for(&mut self, duration: Duration) {
        let until = self.now.saturating_add(duration);
        self.run_until(until);
    }

    /// Run until `until` (see [`run_for`](Self::run_for)).
    pub fn run_until(&mut self, until: Instant) {
        self.pump_client();
        for _ in 0..MAX_STEPS {
            let next = self.next_due();
            if next > until {
                self.now = self.now.max(until);
                return;
            }
            self.now = self.now.max(next);
            self.step();
        }
        panic!("the pair did not reach {until:?} within {MAX_STEPS} steps");
    }

    fn next_due(&self) -> Instant {
        let queued = self.queue.peek().map(|Reverse(s)| s.at);
        let client = self.client.poll_timeout();
        let servers = self.servers.values().filter_map(Connection::poll_timeout);
        queued
            .into_iter()
            .chain(client)
            .chain(servers)
            .min()
            .unwrap_or(Instant::MAX)
    }

    /// Everything due at `now`: deliveries first, then timers.
    fn step(&mut self) {
        let now = self.now;
        while self.queue.peek().is_some_and(|Reverse(s)| s.at <= now) {
            let Some(Reverse(scheduled)) = self.queue.pop() else {
                break;
            };
            self.deliver(scheduled.delivery);
        }
        if self.client.poll_timeout().is_some_and(|at| at <= now) {
            self.client.handle_timeout(now);
        }
        let due: Vec<TransportId> = self
            .servers
            .iter()
            .filter(|(_, c)| c.poll_timeout().is_some_and(|at| at <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            if let Some(mut conn) = self.servers.remove(&id) {
                conn.handle_timeout(now);
                self.pump_server(id, conn);
            }
        }
        self.pump_client();
    }

    fn schedule(&mut self, after: Duration, delivery: Delivery) {
        self.seq += 1;
        self.queue.push(Reverse(Scheduled {
            at: self.now.saturating_add(after),
            seq: self.seq,
            delivery,
        }));
    }

    fn deliver(&mut self, delivery: Delivery) {
        let now = self.now;
        match delivery {
            Delivery::Accept(id) => {
                let conn =
                    Connection::new(std::sync::Arc::clone(&self.limits), now, self.seed ^ id.0);
                self.server_log.push(ServerRecord::Accepted { at: now, id });
                self.servers.insert(id, conn);
            }
            Delivery::Opened(id) => {
                self.client_open.insert(id);
                self.max_open_transports = self.max_open_transports.max(self.client_open.len());
                self.client.handle_input(now, Input::TransportOpened(id));
            }
            Delivery::ToServer(id, wire) => {
                let Some(mut conn) = self.servers.remove(&id) else {
                    return;
                };
                match &wire {
                    Wire::Text(text) => {
                        conn.handle_input(now, ServerInput::Frame(Frame::Text(text)))
                    }
                    Wire::Close(code, _) => {
                        conn.handle_input(now, ServerInput::Frame(Frame::Close(Some(*code))))
                    }
                }
                self.pump_server(id, conn);
            }
            Delivery::ToClient(id, wire) => {
                if !self.client_open.contains(&id) {
                    return;
                }
                let input = match wire {
                    Wire::Text(text) => Input::Frame(id, text),
                    Wire::Close(code, reason) => {
                        self.client_open.remove(&id);
                        Input::TransportClosed(id, CloseInfo::new(CloseCode(code), reason))
                    }
                };
                self.client.handle_input(now, input);
            }
        }
    }

    fn pump_client(&mut self) {
        while let Some(output) = self.client.poll_output() {
            match output {
                // A connection that cannot be set up is silent: the
                // client's connect timeout settles it.
                ClientOutput::OpenTransport { id, .. } if self.link.accepts() => {
                    let latency = self.link.latency;
                    self.schedule(latency, Delivery::Accept(id));
                    self.schedule(latency * 2, Delivery::Opened(id));
                }
                ClientOutput::Transmit { id, message } if self.link.delivers(Direction::Up) => {
                    let wire = Wire::Text(encode_client(&message));
                    self.schedule(self.link.latency, Delivery::ToServer(id, wire));
                }
                ClientOutput::CloseTransport { id, code, reason } => {
                    self.client_open.remove(&id);
                    if self.link.delivers(Direction::Up) {
                        let wire = Wire::Close(code.0, reason);
                        self.schedule(self.link.latency, Delivery::ToServer(id, wire));
                    }
                }
                ClientOutput::Event(event) => self.events.push((self.now, event)),
                _ => {}
            }
        }
    }

    /// Carry out a server connection's outputs, then put it back unless it
    /// ended.
    fn pump_server(&mut self, id: TransportId, mut conn: Connection<String>) {
        let now = self.now;
        let mut ended = false;
        while let Some(output) = conn.poll_output() {
            match output {
                Output::Send(message) => self.send_down(id, Wire::Text(encode_server(&message))),
                Output::SendEncoded(frame) => self.send_down(id, Wire::Text(frame)),
                Output::Authenticate { ticket, .. } => conn.handle_input(
                    now,
                    ServerInput::Auth {
                        ticket,
                        verdict: AuthVerdict::accepted(),
                    },
                ),
                Output::AuthorizeSubscribe { ticket, .. } => conn.handle_input(
                    now,
                    ServerInput::SubscribeAuthorized {
                        ticket,
                        verdict: Ok(None),
                    },
                ),
                Output::Join {
                    ticket,
                    channel,
                    since,
                } => {
                    let answer = self.broker.join(now, id, &channel, since.as_ref());
                    conn.handle_input(
                        now,
                        ServerInput::Joined {
                            ticket,
                            answer,
                            room: None,
                        },
                    );
                }
                Output::Leave {
                    channel,
                    subscription,
                } => self.broker.leave(&channel, subscription),
                Output::AuthorizeRequest { ticket, .. } => conn.handle_input(
                    now,
                    ServerInput::RequestAuthorized {
                        ticket,
                        verdict: Ok(()),
                    },
                ),
                Output::Call { ticket, request } => {
                    let reply = match request.method.as_str() {
                        "echo" => Reply::Result(RawJson::from_value(&request.params)),
                        _ => Reply::Error(ErrorBody::new("unknown_method", "no such method")),
                    };
                    conn.handle_input(now, ServerInput::Reply { ticket, reply });
                }
                Output::Close { code, reason, .. } => {
                    self.server_log.push(ServerRecord::Closed {
                        at: now,
                        id,
                        code: code.0,
                    });
                    self.send_down(id, Wire::Close(code.0, reason));
                    ended = true;
                }
                Output::PeerGone { .. } => {
                    self.server_log.push(ServerRecord::PeerGone { at: now, id });
                    ended = true;
                }
                Output::Event(event) => {
                    self.server_log
                        .push(ServerRecord::Event { at: now, id, event })
                }
                _ => {}
            }
        }
        if !ended {
            self.servers.insert(id, conn);
        }
    }

    fn send_down(&mut self, id: TransportId, wire: Wire) {
        if self.link.delivers(Direction::Down) {
            self.schedule(self.link.latency, Delivery::ToClient(id, wire));
        }
    }
}
