//! [`Pair`]: client `Session`s against server `Connection`s over simulated
//! [`Link`](super::Link)s, on one virtual clock.

use std::time::Duration;

use crate::server::{Connection, Input, Limits, NodeConfig};
use crate::time::Instant;
use crate::{Config, Event};

use super::application::Application;
use super::broker::ModelBroker;
use super::client_side::Client;
use super::hosts::HostSide;
use super::invariants::Violation;
use super::node_side::NodeSide;
use super::records::{ClientId, ServerRecord};
use super::schedule::{Delivery, Schedule};
use super::server_side::ServerSide;

/// The one-way delay of a new client's link.
pub(super) const DEFAULT_LATENCY: Duration = Duration::from_millis(20);

/// The most steps one `run_*` call may take: a machine whose timeout never
/// moves forward would spin forever without it.
const MAX_STEPS: usize = 10_000_000;

/// Client sessions, the server connections they open, a link per client
/// and a broker, on one virtual clock that jumps to the next thing due.
///
/// The clients are numbered by [`ClientId`]; the constructors add the
/// first ([`ClientId::FIRST`]), [`add_client`](Self::add_client) more.
/// Commands go to a client's [`Session`](crate::Session) through
/// [`command`](Self::command) (or [`client_mut`](Self::client_mut) with
/// [`now`](Self::now)), the server's through [`publish`](Self::publish),
/// [`close_server_connections`](Self::close_server_connections),
/// [`drop_server_connections`](Self::drop_server_connections),
/// [`advise_clients`](Self::advise_clients) and
/// [`drain_server`](Self::drain_server); each client's network is its
/// [`Link`](super::Link); [`run_for`](Self::run_for) lets the time pass.
///
/// Every batch of outputs of every client and server connection goes
/// through the [invariant checker](super::invariants); the first violation
/// panics, naming the client or connection and the time.
pub struct Pair {
    pub(super) schedule: Schedule,
    pub(super) clients: Vec<Client>,
    pub(super) server: ServerSide,
    pub(super) node: NodeSide,
    pub(super) hosts: HostSide,
    /// The server's channels.
    pub broker: ModelBroker,
}

impl std::fmt::Debug for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pair")
            .field("now", &self.now())
            .field("clients", &self.clients.len())
            .field("servers", &self.server.connections.len())
            .field("in_flight", &self.schedule.in_flight())
            .finish_non_exhaustive()
    }
}

impl Pair {
    /// One client with `config` and a server with default limits, over a
    /// link of 20 ms each way; `seed` drives every random choice.
    pub fn new(config: Config, seed: u64) -> Self {
        Pair::with_limits(config, Limits::default(), seed)
    }

    /// As [`new`](Self::new), with the server's `limits`.
    pub fn with_limits(config: Config, limits: Limits, seed: u64) -> Self {
        let mut pair = Pair::without_clients(limits, seed);
        pair.add_client(config, seed);
        pair
    }

    /// A server with `limits` and no client yet (add them with
    /// [`add_client`](Self::add_client)).
    pub fn without_clients(limits: Limits, seed: u64) -> Self {
        Pair {
            schedule: Schedule::default(),
            clients: Vec::new(),
            server: ServerSide::new(limits, seed),
            node: NodeSide::new(NodeConfig::default(), Instant::ZERO),
            hosts: HostSide::default(),
            broker: ModelBroker::new(1_000, Duration::from_secs(300)),
        }
    }

    // ----- getters -----

    /// The virtual time.
    pub fn now(&self) -> Instant {
        self.schedule.now()
    }

    /// Every client, in the order they were added.
    pub fn client_ids(&self) -> impl Iterator<Item = ClientId> {
        (0..self.clients.len()).map(ClientId)
    }

    /// A client.
    pub fn client(&self, id: ClientId) -> &Client {
        &self.clients[id.0]
    }

    /// A client, to call its session's commands or change its link.
    pub fn client_mut(&mut self, id: ClientId) -> &mut Client {
        &mut self.clients[id.0]
    }

    /// A client's events, with their time.
    pub fn events(&self, id: ClientId) -> &[(Instant, Event)] {
        &self.clients[id.0].events
    }

    /// Server connections alive now.
    pub fn server_connections(&self) -> usize {
        self.server.connections.len()
    }

    /// Server connections alive now for one client.
    pub fn server_connections_of(&self, id: ClientId) -> usize {
        self.server
            .connections
            .keys()
            .filter(|c| c.client == id)
            .count()
    }

    /// What happened on the server side.
    pub fn server_log(&self) -> &[ServerRecord] {
        &self.server.log
    }

    /// The server's application (credential lifetime, methods); change it
    /// between runs.
    pub fn application_mut(&mut self) -> &mut Application {
        &mut self.server.application
    }

    /// Every client's requests have settled: call it once time has passed
    /// every deadline (the other invariants are checked on every step, and
    /// a violation panics).
    pub fn check_requests_settled(&self) -> Result<(), Violation> {
        let mut clients = self.clients.iter();
        clients.try_for_each(|c| c.invariants().finish(&c.session))
    }

    // ----- time -----

    /// Run the clients' pending outputs and everything due up to `now +
    /// duration`, jumping from one due instant to the next.
    pub fn run_for(&mut self, duration: Duration) {
        let until = self.now().saturating_add(duration);
        self.run_until(until);
    }

    /// Run until `until` (see [`run_for`](Self::run_for)).
    pub fn run_until(&mut self, until: Instant) {
        self.pump_clients();
        for _ in 0..MAX_STEPS {
            let next = self.next_due();
            if next > until {
                self.schedule.advance_to(until);
                return;
            }
            self.schedule.advance_to(next);
            self.step();
        }
        panic!("the pair did not reach {until:?} within {MAX_STEPS} steps");
    }

    fn next_due(&self) -> Instant {
        let queued = self.schedule.next_at();
        let clients = self.clients.iter().filter_map(|c| c.session.poll_timeout());
        let servers = self
            .server
            .connections
            .values()
            .filter_map(Connection::poll_timeout);
        let node = [
            self.node.node.poll_timeout(),
            self.node.node.host_calls().poll_timeout(),
        ];
        queued
            .into_iter()
            .chain(clients)
            .chain(servers)
            .chain(node.into_iter().flatten())
            .min()
            .unwrap_or(Instant::MAX)
    }

    /// Everything due now: deliveries first (in the order they were sent),
    /// then the clients' timers, then the server's.
    fn step(&mut self) {
        let now = self.now();
        while let Some(delivery) = self.schedule.pop_due() {
            match delivery {
                Delivery::Accept(id) => self.accept(id),
                // A client's outputs are drained (and checked) after every
                // input, as a driver does.
                Delivery::Opened(id) => {
                    self.client_opened(id);
                    self.pump_client(id.client);
                }
                Delivery::Refused(id) => {
                    self.client_refused(id);
                    self.pump_client(id.client);
                }
                Delivery::ToServer(id, wire) => self.server_receives(id, &wire),
                Delivery::ToClient(id, wire) => {
                    self.client_receives(id, wire);
                    self.pump_client(id.client);
                }
                Delivery::Reply(id, ticket, reply) => self.with_connection(id, |conn| {
                    conn.handle_input(now, Input::Reply { ticket, reply })
                }),
            }
        }
        self.client_timeouts();
        self.server_timeouts();
        self.node_timeouts();
        self.pump_clients();
    }
}
