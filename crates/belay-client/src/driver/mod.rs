//! The connection task: owns the core's [`Session`], does its I/O and keeps
//! its time. It decides nothing.
//!
//! ```text
//!  handles ──Command──▶ ┌──────────── driver task ─────────────┐ ──Outgoing──▶ transport task(s)
//!                       │ loop {                               │ ◀──(id, Fact)──
//!  status watch ◀────── │   drain poll_output                  │
//!  events broadcast ◀── │   select! { command, fact,           │
//!  request oneshots ◀── │            sleep_until(poll_timeout) }│
//!  subscriptions ◀───── │ }                                    │
//!                       └──────────────────────────────────────┘
//! ```

use std::collections::HashMap;
use std::time::Duration;

use belay_proto::message::{Codec, RawJson};
use belay_proto::{
    Call, ConnectionState, Event, Failure, Input, Output, RequestId, RequestOutcome, RetryPlan,
    Session, TransportChoice, TransportId, TransportKind,
};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::JoinSet;

use crate::endpoints::Endpoints;
use crate::error::{RequestError, SubscribeError};
use crate::fallback::Fallback;
use crate::status::{ClientEvent, Disconnect, Losses, Status};
use crate::subscription::{Item, Subscription};
use crate::transport::{self, Fact, Outgoing};

#[cfg(test)]
mod every_output;
mod tokens;

pub(crate) use tokens::Providers;

/// How long `close()` lets transport tasks finish their closing handshake
/// before aborting them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// What a handle asks of the driver.
#[derive(Debug)]
pub(crate) enum Command {
    Request {
        call: Call,
        reply: oneshot::Sender<Result<RawJson, RequestError>>,
    },
    Subscribe {
        channel: String,
        /// A subscription token sent with every subscribe of the channel.
        token: Option<String>,
        reply: oneshot::Sender<Result<Subscription, SubscribeError>>,
    },
    Unsubscribe {
        channel: String,
        id: u64,
    },
    ReconnectNow,
    CheckLiveness,
    SetNetwork(bool),
    Close,
}

/// The channels the driver answers on.
pub(crate) struct Outlets {
    pub(crate) status: watch::Sender<Status>,
    pub(crate) events: broadcast::Sender<ClientEvent>,
    pub(crate) finished: watch::Sender<bool>,
}

pub(crate) struct Driver {
    session: Session,
    origin: tokio::time::Instant,
    /// The parsed URLs, or why they cannot be dialed (reported on every
    /// dial, so the core halts with `InvalidConfig`).
    targets: Result<Endpoints, Failure>,
    providers: Providers,
    /// Where the providers' answers come back (each call runs in a task):
    /// `None` for the connection's token, else the channel's.
    tokens_tx: mpsc::UnboundedSender<tokens::Answer>,
    tokens_rx: mpsc::UnboundedReceiver<tokens::Answer>,
    commands: mpsc::UnboundedReceiver<Command>,
    /// For the subscriptions' unsubscribe-on-drop; weak so that it does not
    /// keep the driver alive.
    weak_commands: mpsc::WeakUnboundedSender<Command>,
    facts_tx: mpsc::UnboundedSender<(TransportId, Fact)>,
    facts_rx: mpsc::UnboundedReceiver<(TransportId, Fact)>,
    /// Live transports by id: the sender feeding each transport task.
    transports: HashMap<TransportId, mpsc::UnboundedSender<Outgoing>>,
    tasks: JoinSet<()>,
    requests: HashMap<RequestId, oneshot::Sender<Result<RawJson, RequestError>>>,
    subscriptions: HashMap<String, (u64, mpsc::UnboundedSender<Item>)>,
    next_subscription: u64,
    outlets: Outlets,
    losses: Losses,
    next_attempt: Option<tokio::time::Instant>,
    halted: Option<belay_proto::HaltReason>,
    closing: bool,
    /// WebSocket or the SSE fallback for each dial.
    fallback: Fallback,
    /// The codec of the last transport that opened.
    codec: Codec,
}

impl Driver {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        session: Session,
        origin: tokio::time::Instant,
        targets: Result<Endpoints, Failure>,
        providers: Providers,
        commands: mpsc::UnboundedReceiver<Command>,
        weak_commands: mpsc::WeakUnboundedSender<Command>,
        outlets: Outlets,
        choice: Option<TransportChoice>,
    ) -> Self {
        let (facts_tx, facts_rx) = mpsc::unbounded_channel();
        let (tokens_tx, tokens_rx) = mpsc::unbounded_channel();
        Driver {
            tokens_tx,
            tokens_rx,
            session,
            origin,
            targets,
            providers,
            commands,
            weak_commands,
            facts_tx,
            facts_rx,
            transports: HashMap::new(),
            tasks: JoinSet::new(),
            requests: HashMap::new(),
            subscriptions: HashMap::new(),
            next_subscription: 0,
            outlets,
            losses: Losses::default(),
            next_attempt: None,
            halted: None,
            closing: false,
            fallback: Fallback::new(choice),
            codec: Codec::Json,
        }
    }

    fn now(&self) -> belay_proto::Instant {
        belay_proto::Instant::from_elapsed(self.origin.elapsed())
    }

    /// The core's instant on tokio's clock.
    fn wall(&self, at: belay_proto::Instant) -> tokio::time::Instant {
        self.origin + at.elapsed_since_origin()
    }

    pub(crate) async fn run(mut self) {
        let now = self.now();
        // A fresh session cannot be stopped yet.
        let _ = self.session.start(now);
        loop {
            self.drain();
            if self.closing {
                break;
            }
            let deadline = self.session.poll_timeout();
            let probe_at = self.fallback.poll_timeout();
            let wake = match (deadline, probe_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
            .map(|at| self.wall(at));
            tokio::select! {
                command = self.commands.recv() => match command {
                    Some(command) => self.on_command(command),
                    // Every handle is gone: nobody can use the connection.
                    None => self.closing = true,
                },
                Some((id, fact)) = self.facts_rx.recv() => self.on_fact(id, fact),
                Some((channel, answer)) = self.tokens_rx.recv() => self.answered(channel, answer),
                () = sleep_until(wake) => {
                    // tokio's cooperative budget can wake us late, and a
                    // timer may also fire a little early: ask the clock.
                    let now = self.now();
                    if deadline.is_some_and(|at| now >= at) {
                        self.session.handle_timeout(now);
                    }
                    self.probe(now);
                }
                Some(opened) = self.fallback.probes.recv() => {
                    let now = self.now();
                    // A probe opened: back to WebSocket at the session's
                    // next quiet moment, and no later than `by`'s.
                    if let Some(by) = self.fallback.probed(now, opened) {
                        let _ = self.session.replace_transport_when_quiet(now, by);
                    }
                }
                Some(_) = self.tasks.join_next(), if !self.tasks.is_empty() => {}
            }
        }
        self.shutdown().await;
    }

    fn on_command(&mut self, command: Command) {
        let now = self.now();
        match command {
            Command::Request { call, reply } => match self.session.request(now, call) {
                Ok(id) => {
                    self.requests.insert(id, reply);
                }
                Err(belay_proto::RequestError::NotReady) => {
                    let _ = reply.send(Err(RequestError::NotReady));
                }
                Err(belay_proto::RequestError::TooLarge { len, max }) => {
                    let _ = reply.send(Err(RequestError::TooLarge { len, max }));
                }
                Err(_) => {
                    let _ = reply.send(Err(RequestError::Closed));
                }
            },
            Command::Subscribe {
                channel,
                token,
                reply,
            } => {
                if self.subscriptions.contains_key(&channel) {
                    let _ = reply.send(Err(SubscribeError::AlreadySubscribed(channel)));
                    return;
                }
                match self.session.subscribe_with_token(now, &channel, token) {
                    Ok(()) => {
                        let (tx, rx) = mpsc::unbounded_channel();
                        self.next_subscription += 1;
                        let id = self.next_subscription;
                        self.subscriptions.insert(channel.clone(), (id, tx));
                        let subscription =
                            Subscription::new(channel, id, rx, self.weak_commands.clone());
                        // If the caller is gone, dropping the subscription unsubscribes.
                        let _ = reply.send(Ok(subscription));
                    }
                    Err(belay_proto::SubscribeError::AlreadySubscribed(channel)) => {
                        let _ = reply.send(Err(SubscribeError::AlreadySubscribed(channel)));
                    }
                    Err(_) => {
                        let _ = reply.send(Err(SubscribeError::Closed));
                    }
                }
            }
            Command::Unsubscribe { channel, id } => {
                if self
                    .subscriptions
                    .get(&channel)
                    .is_some_and(|(s, _)| *s == id)
                {
                    self.subscriptions.remove(&channel);
                    let _ = self.session.unsubscribe(now, &channel);
                }
            }
            Command::ReconnectNow => {
                let _ = self.session.reconnect_now(now);
            }
            Command::CheckLiveness => self.session.check_liveness(now),
            Command::SetNetwork(online) => {
                self.session.handle_input(now, Input::Network { online });
            }
            Command::Close => self.closing = true,
        }
    }

    fn on_fact(&mut self, id: TransportId, fact: Fact) {
        let now = self.now();
        let input = match fact {
            Fact::Opened(codec) => {
                self.codec = codec;
                self.fallback.opened(now, id);
                Input::TransportOpened(id)
            }
            Fact::Frame(text) => Input::Frame(id, text),
            Fact::Binary(bytes) => Input::BinaryFrame(id, bytes),
            Fact::Failed(failure) => {
                // The task has ended.
                self.transports.remove(&id);
                let failure = self.fallback.failed(now, id, failure);
                Input::TransportFailed(id, failure)
            }
            Fact::Closed(close) => {
                self.transports.remove(&id);
                self.fallback.forget(id);
                Input::TransportClosed(id, close)
            }
        };
        self.session.handle_input(now, input);
    }

    /// Do everything the core asked, then publish the status.
    fn drain(&mut self) {
        while let Some(output) = self.session.poll_output() {
            if let Err(unknown) = self.carry_out(output) {
                // A core newer than this driver (the test
                // `every_core_output_is_carried_out` fails first).
                tracing::error!(output = %unknown, "the client does not handle this core output");
                debug_assert!(false, "unhandled core output {unknown}");
            }
        }
        self.publish_status();
    }

    /// Carry out one output of the core, or give back (as text) one this
    /// driver does not know.
    fn carry_out(&mut self, output: Output) -> Result<(), String> {
        {
            match output {
                Output::OpenTransport { id, attempt } => self.open(id, attempt),
                Output::Transmit { id, message } => {
                    if let Some(transport) = self.transports.get(&id) {
                        let _ = transport.send(Outgoing::Message(message));
                    }
                }
                Output::CloseTransport { id, code, reason } => {
                    // Forget it at once; its task closes and ends on its own.
                    self.fallback.forget(id);
                    if let Some(transport) = self.transports.remove(&id) {
                        let _ = transport.send(Outgoing::Close(code, reason));
                    }
                }
                Output::Event(event) => self.on_event(event),
                other => return Err(format!("{other:?}")),
            }
        }
        Ok(())
    }

    fn open(&mut self, id: TransportId, attempt: u32) {
        let _ = self
            .outlets
            .events
            .send(ClientEvent::Connecting { attempt });
        match &mut self.targets {
            Ok(targets) => {
                let (tx, rx) = mpsc::unbounded_channel();
                self.transports.insert(id, tx);
                let kind = self.fallback.dial(id);
                let (target, facts) = (targets.for_dial(attempt), self.facts_tx.clone());
                match kind {
                    TransportKind::Sse => self.tasks.spawn(crate::sse::run(id, target, rx, facts)),
                    _ => self.tasks.spawn(transport::run(id, target, rx, facts)),
                };
            }
            Err(failure) => {
                let failure = failure.clone();
                let now = self.now();
                self.session
                    .handle_input(now, Input::TransportFailed(id, failure));
            }
        }
    }

    fn on_event(&mut self, event: Event) {
        match &event {
            Event::Response { id, outcome } => {
                if let Some(reply) = self.requests.remove(id) {
                    let _ = reply.send(self.settle(outcome.clone()));
                }
                return;
            }
            Event::Publication(publication) => {
                self.route(
                    &publication.channel.clone(),
                    Item::Publication(publication.clone()),
                );
                return;
            }
            Event::RecoveryFailed { channel } => self.route(&channel.clone(), Item::Resync),
            Event::SubscriptionFailed { channel, code } => {
                let item = Item::Refused {
                    code: code.as_str().into(),
                };
                self.route(&channel.clone(), item);
            }
            Event::Disconnected { reason, retry } | Event::ConnectFailed { reason, retry } => {
                let at = tokio::time::Instant::now();
                self.next_attempt = match retry {
                    RetryPlan::After { delay } => Some(at + *delay),
                    _ => None,
                };
                self.losses.record(Disconnect {
                    reason: reason.clone(),
                    retry: retry.clone(),
                    was_connected: matches!(event, Event::Disconnected { .. }),
                    at,
                });
            }
            Event::Halted { reason } => self.halted = Some(reason.clone()),
            Event::Connected { .. } => self.halted = None,
            Event::TokenWanted { .. } => self.ask(None),
            Event::SubscriptionTokenWanted { channel, .. } => self.ask(Some(channel.clone())),
            _ => {}
        }
        // Nobody listening is fine.
        let _ = self.outlets.events.send(ClientEvent::Session(event));
    }

    fn settle(&self, outcome: RequestOutcome) -> Result<RawJson, RequestError> {
        match outcome {
            RequestOutcome::Ok { result } => Ok(result),
            RequestOutcome::ServerError { error } => Err(RequestError::Server {
                code: error.code.into(),
                message: error.message,
                retry_after_ms: error.retry_after_ms,
            }),
            RequestOutcome::Timeout => Err(RequestError::Timeout),
            _ if self.closing => Err(RequestError::Closed),
            _ => Err(RequestError::ConnectionClosed),
        }
    }

    fn route(&mut self, channel: &str, item: Item) {
        let Some((_, items)) = self.subscriptions.get(channel) else {
            return;
        };
        if items.send(item).is_err() {
            // The stream was dropped; its unsubscribe command is on its way,
            // but stop wanting the channel now.
            self.subscriptions.remove(channel);
            let now = self.now();
            let _ = self.session.unsubscribe(now, channel);
        }
    }

    /// On the fallback: start a WebSocket probe when one is due.
    fn probe(&mut self, now: belay_proto::Instant) {
        if let Ok(targets) = &self.targets {
            self.fallback
                .probe(now, &targets.current(), &mut self.tasks);
        }
    }

    fn publish_status(&mut self) {
        let state = self.session.state();
        let mut status = Status {
            readiness: self.session.readiness(),
            ready: self.session.is_ready(),
            state,
            last_disconnect: None,
            last_loss: None,
            last_attempt_failure: None,
            next_attempt: self
                .next_attempt
                .filter(|_| state == ConnectionState::Waiting),
            halted: self
                .halted
                .clone()
                .filter(|_| state == ConnectionState::Halted),
            session: self.session.session_id().map(str::to_owned),
            attempts: self.session.stats().transports_opened,
            transport: self.fallback.current(),
            codec: self.codec,
        };
        self.losses.show(&mut status);
        self.outlets.status.send_if_modified(|current| {
            if *current == status {
                false
            } else {
                *current = status;
                true
            }
        });
    }

    /// Stop the session, settle everything, and wait for every transport
    /// task (aborting the ones that outlive the grace period).
    async fn shutdown(mut self) {
        let now = self.now();
        self.session.stop(now);
        self.drain();
        for (_, reply) in self.requests.drain() {
            let _ = reply.send(Err(RequestError::Closed));
        }
        // Ends every subscription stream.
        self.subscriptions.clear();
        // Any transport still listed gets a close by its sender dropping.
        self.transports.clear();
        let joined = tokio::time::timeout(SHUTDOWN_GRACE, async {
            while self.tasks.join_next().await.is_some() {}
        })
        .await;
        if joined.is_err() {
            self.tasks.abort_all();
            while self.tasks.join_next().await.is_some() {}
        }
        let _ = self.outlets.finished.send(true);
    }
}

async fn sleep_until(wake: Option<tokio::time::Instant>) {
    match wake {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
