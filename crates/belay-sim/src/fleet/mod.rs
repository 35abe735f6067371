//! The engine: a fleet of real `belay_proto::Session`s on one virtual clock.
//!
//! Each client is a `Session` with its own seed. The engine keeps one
//! agenda ([`Agenda`]) of everything that will happen: each session's own
//! timer (its `poll_timeout`), and what the server and the network do to
//! it. It pops the earliest event, feeds the session the matching input,
//! drains the session's outputs and answers them through the server model,
//! exactly as a real driver would, only without sockets or clocks:
//!
//! | session output | the simulated world's answer |
//! |---|---|
//! | `OpenTransport` | an attempt: unreachable if the client's network is down, else the server admits (`TransportOpened`) or refuses (`TransportFailed(network "refused")`) |
//! | `Transmit(connect)` | `welcome` (with pacing if the server sends it), in a later step of the same instant |
//! | `Transmit(ping)` | `pong` |
//! | `CloseTransport` | the server forgets the connection |
//!
//! With a latency `r`, the server decides an attempt at `t + r/2`, the
//! client learns the outcome at `t + r`, and `welcome`/`pong` arrive `r`
//! after `connect`/`ping` were sent. With `r = 0` the outcome and `pong`
//! are fed back within the same step.
//!
//! A session's timer is (re)scheduled whenever its `poll_timeout` changes;
//! an agenda entry that is no longer the session's `poll_timeout` when it
//! comes up is skipped (lazy deletion), so no entry is ever searched for.
//!
//! A client counts as **connected** while its session is ready
//! (`readiness().ready()`) on a transport the server still holds.

use std::collections::VecDeque;
use std::time::Duration;

use belay_proto::heartbeat::Beat;
use belay_proto::message::{ServerMessage, Welcome, PROTOCOL_VERSION};
use belay_proto::rng::SplitMix64;
use belay_proto::{CloseCode, CloseInfo, Config, Failure, Input, Instant, Session, TransportId};

use crate::progress::Progress;
use crate::queue::{Agenda, Delivery, Entry};
use crate::record::Recorder;
use crate::server::{Answer, Cluster, WorkStats};

mod answer;

use answer::{refused, unreachable};

/// "No transport": the id the core never hands out.
const NO_TRANSPORT: TransportId = TransportId(0);

/// Events between two progress reports.
const PROGRESS_EVERY: u64 = 1 << 14;

/// How the world around the clients behaves, beyond the server model.
#[derive(Debug, Clone, Default)]
pub(crate) struct WorldOptions {
    /// Round-trip time of the path to the server.
    pub(crate) latency: Duration,
    /// The server drops every connection this long after it becomes ready.
    pub(crate) drop_after_ready: Option<Duration>,
    /// Every client's own network is down on `[from, until)`.
    pub(crate) offline: Option<(Instant, Instant)>,
}

/// What the engine keeps about one client besides its session. Kept apart
/// from the sessions (structure of arrays): these few bytes are touched by
/// every event, including stale timer entries, and stay in cache, while a
/// `Session` is over a kilobyte.
#[derive(Debug, Clone, Copy)]
struct Client {
    /// The instant of this client's live timer entry on the agenda.
    wake: Instant,
    /// The transport the server holds for this client.
    conn: Option<TransportId>,
    /// Whether it counts as connected (see the module docs).
    connected: bool,
    /// The `Retry-After` (s) of the 503 on its way to this client.
    retry_after_secs: u16,
    /// SYN retransmissions of the current dial so far (a full backlog
    /// dropped it), and when the dial began.
    syn_tries: u8,
    dialed_at: Instant,
    /// The node the balancer sent its current attempt to (and that holds
    /// its connection, if any).
    node: u16,
}

/// Counters of one run, for `--stats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Agenda entries processed (stale timer entries included).
    pub events: u64,
    /// Session calls made (`start`, `handle_input`, `handle_timeout`).
    pub session_steps: u64,
    /// The largest number of entries the agenda held (sampled every 16,384
    /// events and at the end of each phase).
    pub peak_agenda: usize,
}

/// The seed of client `index` in a run seeded with `seed`.
pub fn client_seed(seed: u64, index: u64) -> u64 {
    SplitMix64::new(seed ^ index.wrapping_mul(0xD1B5_4A32_D192_ED03)).next_u64()
}

/// A fleet of sessions, the server model and the agenda.
pub(crate) struct Fleet<'p> {
    sessions: Vec<Session>,
    clients: Vec<Client>,
    /// Each client's beat of the server's pings (a server that pings),
    /// from its `welcome`; kept apart from [`Client`], which every event
    /// touches.
    ping_beats: Vec<Option<Beat>>,
    agenda: Agenda,
    cluster: Cluster,
    world: WorldOptions,
    inbox: VecDeque<Input>,
    record: Recorder,
    /// How long a session waits for an attempt before giving up on it.
    connect_timeout: Duration,
    pending_incidents: usize,
    stats: EngineStats,
    progress: Option<&'p Progress>,
    reported: Instant,
}

impl<'p> Fleet<'p> {
    /// `clients` idle sessions running `config`, seeded from `seed`.
    pub(crate) fn new(
        config: &Config,
        clients: usize,
        seed: u64,
        cluster: Cluster,
        world: WorldOptions,
        record: Recorder,
    ) -> Self {
        let sessions = (0..clients as u64)
            .map(|i| Session::new(config.clone(), Instant::ZERO, client_seed(seed, i)))
            .collect();
        let client = Client {
            wake: Instant::MAX,
            conn: None,
            connected: false,
            retry_after_secs: 0,
            syn_tries: 0,
            dialed_at: Instant::ZERO,
            node: 0,
        };
        Fleet {
            agenda: Agenda::default(),
            sessions,
            clients: vec![client; clients],
            ping_beats: vec![None; clients],
            cluster,
            world,
            inbox: VecDeque::new(),
            record,
            connect_timeout: config.connect_timeout(),
            pending_incidents: 0,
            stats: EngineStats::default(),
            progress: None,
            reported: Instant::ZERO,
        }
    }

    /// Report virtual time from `start` on to `progress` as the run goes.
    pub(crate) fn set_progress(&mut self, progress: Option<&'p Progress>, start: Instant) {
        self.progress = progress;
        self.reported = start;
    }

    /// The number of clients.
    pub(crate) fn len(&self) -> usize {
        self.clients.len()
    }

    /// Switch client `client` on at `at`.
    pub(crate) fn start_at(&mut self, client: usize, at: Instant) {
        self.agenda
            .push(at, client as u32, NO_TRANSPORT, Delivery::Start);
    }

    /// The transport the server holds for `client`, if any.
    pub(crate) fn server_conn(&self, client: usize) -> Option<TransportId> {
        self.clients[client].conn
    }

    /// Schedule something the scenario does to `client`'s connection
    /// `transport`. The run does not stop early before every incident has
    /// happened.
    pub(crate) fn incident(
        &mut self,
        at: Instant,
        client: usize,
        transport: TransportId,
        what: Delivery,
    ) {
        self.pending_incidents += 1;
        self.agenda.push(at, client as u32, transport, what);
    }

    /// The server process dies at `now`: it forgets every connection at
    /// once. The clients are told nothing here; the scenario schedules when
    /// each of them notices.
    pub(crate) fn server_dies(&mut self, now: Instant) {
        for index in 0..self.clients.len() {
            if self.clients[index].conn.take().is_some() {
                let node = self.clients[index].node;
                self.cluster.node(node).closed();
            }
            self.update_connected(index, now);
        }
    }

    /// Run every event up to and including `until`; with `stop_when_all_connected`,
    /// stop as soon as every incident has happened and every client is connected.
    pub(crate) fn run(&mut self, until: Instant, stop_when_all_connected: bool) {
        while let Some(entry) = self.agenda.pop_until(until) {
            self.stats.events += 1;
            self.handle(entry);
            if self.stats.events % PROGRESS_EVERY == 0 {
                self.stats.peak_agenda = self.stats.peak_agenda.max(self.agenda.len());
                self.report_progress(entry.at);
            }
            if stop_when_all_connected
                && self.pending_incidents == 0
                && self.record.connected() == self.clients.len()
            {
                break;
            }
        }
        self.stats.peak_agenda = self.stats.peak_agenda.max(self.agenda.len());
    }

    fn report_progress(&mut self, now: Instant) {
        if let Some(progress) = self.progress {
            let ms = now.as_millis().saturating_sub(self.reported.as_millis());
            progress.advance(ms);
            self.reported = self.reported.max(Instant::from_millis(now.as_millis()));
        }
    }

    /// Close the run: the record and the progress report are completed up
    /// to `until` (the run may have stopped earlier).
    /// The server's work so far, if work has a cost.
    pub(crate) fn work(&self) -> Option<WorkStats> {
        self.cluster.work()
    }

    /// The instants at which attempts reached each node, in order.
    pub(crate) fn node_attempts(&self) -> &[Vec<Instant>] {
        self.cluster.node_attempts()
    }

    pub(crate) fn finish(mut self, until: Instant) -> (Recorder, EngineStats) {
        self.report_progress(until.max(self.reported));
        self.record.finish();
        (self.record, self.stats)
    }

    fn handle(&mut self, entry: Entry) {
        let index = entry.client as usize;
        let now = entry.at;
        let id = entry.transport;
        match entry.what {
            Delivery::Start => {
                // Only `Stopped` is an error, and nothing here stops a session.
                let _ = self.sessions[index].start(now);
            }
            Delivery::Wake => {
                let client = &mut self.clients[index];
                if client.wake != now {
                    return; // stale: the session's timer moved since
                }
                client.wake = Instant::MAX;
                self.sessions[index].handle_timeout(now);
            }
            Delivery::Opened => self.inbox.push_back(Input::TransportOpened(id)),
            Delivery::Refused => self.inbox.push_back(refused(id)),
            Delivery::Served => {
                if self.sessions[index].current_transport() == Some(id) {
                    self.clients[index].conn = Some(id);
                    let node = self.clients[index].node;
                    self.cluster.node(node).opened();
                    self.inbox.push_back(Input::TransportOpened(id));
                } else {
                    // The client gave up on this attempt; the server finds
                    // the socket closed after doing the work.
                    let node = self.clients[index].node;
                    self.cluster.node(node).admitted_too_late();
                    self.record.failure();
                }
            }
            Delivery::Syn => {
                if self.sessions[index].current_transport() == Some(id) {
                    // A retransmitted SYN goes to the same node.
                    let node = self.clients[index].node;
                    let answer = self
                        .cluster
                        .attempt(node, now.saturating_add(self.world.latency / 2));
                    self.route(index, id, now, answer);
                }
            }
            Delivery::Rejected => {
                self.record.failure();
                let secs = u64::from(self.clients[index].retry_after_secs);
                self.inbox.push_back(Input::TransportFailed(
                    id,
                    Failure::Rejected {
                        status: 503,
                        retry_after_ms: Some(secs * 1000),
                    },
                ));
            }
            Delivery::Unreachable => self.inbox.push_back(unreachable(id)),
            Delivery::Welcome => {
                if self.clients[index].conn != Some(id) {
                    return; // the connection is gone: nobody reads this welcome
                }
                let node = self.clients[index].node;
                let pacing = self.cluster.node(node).pacing(now);
                let ping = self.cluster.first().ping_interval();
                // Pinged on its beat, as belay-server pings an idle
                // connection (`Beat::for_pings`).
                self.ping_beats[index] =
                    ping.and_then(|i| pacing.and_then(|p| Beat::for_pings(&p, i, now)));
                if let Some(at) = self.next_ping(index, now) {
                    self.agenda.push(at, index as u32, id, Delivery::ServerPing);
                }
                let welcome = Welcome {
                    session: "s".to_owned(),
                    protocol: PROTOCOL_VERSION,
                    ping_interval_ms: ping.map(|i| i.as_millis() as u64),
                    pacing,
                    expires_in_ms: None,
                };
                self.inbox
                    .push_back(Input::Message(id, ServerMessage::Welcome(welcome)));
            }
            Delivery::Pong => {
                if self.clients[index].conn != Some(id) {
                    return;
                }
                self.inbox
                    .push_back(Input::Message(id, ServerMessage::Pong));
            }
            Delivery::ServerPing => {
                if self.clients[index].conn != Some(id) {
                    return; // a dead server, or a connection it forgot, pings no more
                }
                self.inbox
                    .push_back(Input::Message(id, ServerMessage::Ping));
                if let Some(at) = self.next_ping(index, now) {
                    self.agenda.push(at, index as u32, id, Delivery::ServerPing);
                }
            }
            Delivery::DropAbnormal | Delivery::Flap => {
                if entry.what == Delivery::DropAbnormal {
                    self.done_incident();
                }
                self.forget(index, id);
                self.inbox
                    .push_back(Input::TransportClosed(id, CloseInfo::abnormal()));
            }
            Delivery::InterfaceDown => {
                self.done_incident();
                self.forget(index, id);
                self.inbox.push_back(Input::TransportFailed(
                    id,
                    Failure::unreachable("network interface down"),
                ));
            }
            Delivery::BlackHole => {
                self.done_incident();
                // The path is gone; neither side is told.
                self.forget(index, id);
            }
            Delivery::Restart => {
                self.done_incident();
                if self.clients[index].conn == Some(id) {
                    let node = self.clients[index].node;
                    let total = self.clients.len();
                    let advice = self.cluster.node(node).restart_advice(index, total);
                    self.forget(index, id);
                    self.inbox
                        .push_back(Input::Message(id, ServerMessage::Reconnect(advice)));
                    self.inbox.push_back(Input::TransportClosed(
                        id,
                        CloseInfo::new(CloseCode::SERVICE_RESTART, "restart"),
                    ));
                }
            }
        }
        self.stats.session_steps += 1;
        self.pump(index, now);
    }

    /// When the server pings `index` next after `now`, if it pings: on its
    /// beat, or (without pacing) one interval on, as belay-server pings a
    /// connection whose last frame was the answer to its ping.
    fn next_ping(&self, index: usize, now: Instant) -> Option<Instant> {
        let interval = self.cluster.first().ping_interval()?;
        Some(match self.ping_beats[index] {
            Some(beat) => beat.next_after(now),
            None => now.saturating_add(interval),
        })
    }

    fn done_incident(&mut self) {
        self.pending_incidents = self.pending_incidents.saturating_sub(1);
    }

    /// Deliver the cost model's answer to dial `id` of client `index`, one
    /// of whose SYNs reached the server at `now` (plus half the latency).
    fn route(&mut self, index: usize, id: TransportId, now: Instant, answer: Answer) {
        let half = self.world.latency / 2;
        let (at, what) = match answer {
            Answer::Opens { at } => (at, Delivery::Served),
            Answer::Rejected {
                at,
                retry_after_secs,
            } => {
                self.clients[index].retry_after_secs =
                    u16::try_from(retry_after_secs).unwrap_or(u16::MAX);
                (at, Delivery::Rejected)
            }
            Answer::Dropped | Answer::Now(_) => {
                // Linux retransmits a SYN that got no answer after 1 s,
                // then 2 s, 4 s… later; the dial gives up at its deadline.
                let client = &mut self.clients[index];
                let wait = Duration::from_secs(1 << client.syn_tries.min(6));
                client.syn_tries = client.syn_tries.saturating_add(1);
                let again = now.saturating_add(wait);
                if again < client.dialed_at.saturating_add(self.connect_timeout) {
                    self.agenda.push(again, index as u32, id, Delivery::Syn);
                } else {
                    self.record.failure();
                }
                return;
            }
        };
        self.agenda
            .push(at.saturating_add(half), index as u32, id, what);
    }

    /// The server side of `id` is gone (if it is the one the server holds).
    fn forget(&mut self, index: usize, id: TransportId) {
        let client = &mut self.clients[index];
        if client.conn == Some(id) {
            client.conn = None;
            let node = client.node;
            self.cluster.node(node).closed();
        }
    }

    /// Feed queued inputs and answer outputs until the session is quiet,
    /// then update the connected count and the session's timer.
    fn pump(&mut self, index: usize, now: Instant) {
        loop {
            while let Some(output) = self.sessions[index].poll_output() {
                self.answer(index, now, output);
            }
            match self.inbox.pop_front() {
                Some(input) => {
                    self.stats.session_steps += 1;
                    self.sessions[index].handle_input(now, input);
                }
                None => break,
            }
        }
        self.update_connected(index, now);
        let next = self.sessions[index].poll_timeout().unwrap_or(Instant::MAX);
        let client = &mut self.clients[index];
        if next != client.wake {
            client.wake = next;
            if next != Instant::MAX {
                self.agenda
                    .push(next, index as u32, NO_TRANSPORT, Delivery::Wake);
            }
        }
    }

    fn update_connected(&mut self, index: usize, now: Instant) {
        let session = &self.sessions[index];
        let client = &mut self.clients[index];
        let connected = session.is_ready()
            && client.conn.is_some()
            && client.conn == session.current_transport();
        if connected == client.connected {
            return;
        }
        client.connected = connected;
        self.record.connection(now, index as u32, connected);
        if connected {
            if let (Some(after), Some(id)) = (self.world.drop_after_ready, client.conn) {
                // Not an incident: the flapping server does this forever.
                self.agenda
                    .push(now.saturating_add(after), index as u32, id, Delivery::Flap);
            }
        }
    }
}
