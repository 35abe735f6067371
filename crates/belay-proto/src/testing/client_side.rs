//! The client side of a [`Pair`]: each client's `Session`, its link, what it
//! emitted, and how its outputs become deliveries.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::client::session::{Input, Output};
use crate::close::{CloseCode, CloseInfo};
use crate::message::{decode_server, encode_client, ServerMessage};
use crate::time::Instant;
use crate::transport::{Failure, TransportId};
use crate::{Config, Event, Session};

use super::invariants::{ClientChecks, ClientInvariants};
use super::link::{Direction, Link};
use super::records::{ClientId, ConnectionId};
use super::schedule::{Delivery, Wire};
use super::Pair;

/// One client of a [`Pair`]: its core, its link to the server, and what it
/// emitted.
#[derive(Debug)]
#[non_exhaustive]
pub struct Client {
    /// The client core, driven by the pair (call its commands freely, with
    /// [`Pair::now`], or through [`Pair::command`]).
    pub session: Session,
    /// This client's network; change it between runs.
    pub link: Link,
    /// Every event the client emitted, with its time.
    pub events: Vec<(Instant, Event)>,
    /// The most transports the client held open at once.
    pub max_open_transports: usize,
    /// Transports open on the client's side.
    open: BTreeSet<TransportId>,
    /// Every batch of its outputs is checked.
    invariants: ClientInvariants,
}

impl Client {
    fn new(config: Config, now: Instant, seed: u64, latency: Duration) -> Self {
        Client {
            invariants: ClientInvariants::new(&config, ClientChecks::all()),
            session: Session::new(config, now, seed),
            link: Link::new(latency, seed ^ 0x5eed),
            events: Vec::new(),
            max_open_transports: 0,
            open: BTreeSet::new(),
        }
    }

    /// Transports open on the client's side now.
    pub fn open_transports(&self) -> usize {
        self.open.len()
    }

    /// The checker of its invariants (every batch of outputs went through
    /// it; a violation panics).
    pub fn invariants(&self) -> &ClientInvariants {
        &self.invariants
    }

    /// Check a batch of the session's outputs at `now`.
    fn check(&mut self, id: ClientId, now: Instant, outputs: &[Output]) {
        if let Err(violation) = self.invariants.batch(now, &self.session, outputs) {
            panic!("pair: {id} at {now:?}: {violation}");
        }
    }
}

impl Pair {
    /// Add a client with `config` (its own `seed`, and a link of the
    /// default 20 ms each way) at the current time; start it with
    /// [`command`](Self::command).
    pub fn add_client(&mut self, config: Config, seed: u64) -> ClientId {
        let id = ClientId(self.clients.len());
        let now = self.now();
        let client = Client::new(config, now, seed, super::pair::DEFAULT_LATENCY);
        self.clients.push(client);
        id
    }

    /// Call a client's command with the current time, e.g.
    /// `pair.command(c, |s, now| s.subscribe(now, "news"))`; its outputs
    /// are carried out at once.
    pub fn command<R>(&mut self, id: ClientId, f: impl FnOnce(&mut Session, Instant) -> R) -> R {
        let now = self.now();
        let result = f(&mut self.clients[id.0].session, now);
        self.pump_client(id);
        result
    }

    /// The client's side learns its transport is open.
    pub(super) fn client_opened(&mut self, id: ConnectionId) {
        let now = self.now();
        let client = &mut self.clients[id.client.0];
        client.open.insert(id.transport);
        client.max_open_transports = client.max_open_transports.max(client.open.len());
        client
            .session
            .handle_input(now, Input::TransportOpened(id.transport));
    }

    /// The client's dial was refused.
    pub(super) fn client_refused(&mut self, id: ConnectionId) {
        let now = self.now();
        let client = &mut self.clients[id.client.0];
        client.invariants.transport_ended(id.transport);
        let refused = Failure::network("connection refused");
        let input = Input::TransportFailed(id.transport, refused);
        client.session.handle_input(now, input);
    }

    /// A frame from the server reaches the client.
    pub(super) fn client_receives(&mut self, id: ConnectionId, wire: Wire) {
        let now = self.now();
        let client = &mut self.clients[id.client.0];
        if !client.open.contains(&id.transport) {
            return;
        }
        let input = match wire {
            Wire::Text(text) => {
                // Advice on the current transport lengthens the delays the
                // checker allows.
                let current = client.session.current_transport() == Some(id.transport);
                if let (true, Ok(ServerMessage::Reconnect(advice))) =
                    (current, decode_server(&text))
                {
                    client.invariants.advice_fed(advice.reason == "deploy");
                }
                Input::Frame(id.transport, text)
            }
            Wire::Close(code, reason) => {
                client.open.remove(&id.transport);
                client.invariants.transport_ended(id.transport);
                Input::TransportClosed(id.transport, CloseInfo::new(CloseCode(code), reason))
            }
            Wire::Dropped => {
                client.open.remove(&id.transport);
                client.invariants.transport_ended(id.transport);
                Input::TransportClosed(id.transport, CloseInfo::abnormal())
            }
        };
        client.session.handle_input(now, input);
    }

    /// Fire the clients' timers due now, checking that none is left in the
    /// past.
    pub(super) fn client_timeouts(&mut self) {
        let now = self.now();
        for index in 0..self.clients.len() {
            let client = &mut self.clients[index];
            if client.session.poll_timeout().is_some_and(|at| at <= now) {
                client.session.handle_timeout(now);
                self.pump_client(ClientId(index));
                let client = &self.clients[index];
                if let Err(violation) = client.invariants.after_timeout(now, &client.session) {
                    panic!("pair: {} at {now:?}: {violation}", ClientId(index));
                }
            }
        }
    }

    /// Carry out everything every client has to do.
    pub(super) fn pump_clients(&mut self) {
        for index in 0..self.clients.len() {
            self.pump_client(ClientId(index));
        }
    }

    /// Carry out a client's outputs: dials, frames and closes go on its
    /// link, events into its record.
    pub(super) fn pump_client(&mut self, id: ClientId) {
        let now = self.now();
        let client = &mut self.clients[id.0];
        let outputs: Vec<Output> = std::iter::from_fn(|| client.session.poll_output()).collect();
        client.check(id, now, &outputs);
        for output in outputs {
            let client = &mut self.clients[id.0];
            let latency = client.link.latency;
            match output {
                // A connection that cannot be set up is silent: the
                // client's connect timeout settles it.
                Output::OpenTransport { id: transport, .. } if client.link.accepts() => {
                    let conn = ConnectionId::new(id, transport);
                    self.schedule.push(latency, Delivery::Accept(conn));
                    self.schedule.push(latency * 2, Delivery::Opened(conn));
                }
                Output::OpenTransport { id: transport, .. }
                    if client.link.refusing && !client.link.cut =>
                {
                    let conn = ConnectionId::new(id, transport);
                    self.schedule.push(latency * 2, Delivery::Refused(conn));
                }
                Output::Transmit {
                    id: transport,
                    message,
                } if client.link.delivers(Direction::Up) => {
                    let wire = Wire::Text(encode_client(&message));
                    let conn = ConnectionId::new(id, transport);
                    self.schedule.push(latency, Delivery::ToServer(conn, wire));
                }
                Output::CloseTransport {
                    id: transport,
                    code,
                    reason,
                } => {
                    client.open.remove(&transport);
                    if client.link.delivers(Direction::Up) {
                        let wire = Wire::Close(code.0, reason);
                        let conn = ConnectionId::new(id, transport);
                        self.schedule.push(latency, Delivery::ToServer(conn, wire));
                    }
                }
                Output::Event(event) => client.events.push((now, event)),
                _ => {}
            }
        }
    }
}
