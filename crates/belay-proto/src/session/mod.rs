//! The session: one facade over the small machines.
//!
//! ```text
//!            handle_input(now, Input)          poll_output() -> Output
//!  driver ───────────────────────────▶ Session ─────────────────────────▶ driver
//!            handle_timeout(now)         │  ▲    poll_timeout() -> Instant
//!            commands (start, request,   │  │
//!            subscribe, reconnect_now,   ▼  │
//!            stop)                 Phase (reconnect controller) + Backoff
//!                                  Heartbeat · Readiness · RequestRegistry
//!                                  Subscriptions
//! ```
//!
//! Polling contract: after every `handle_*` call or command, drain
//! [`Session::poll_output`] until it returns `None`, then sleep until
//! [`Session::poll_timeout`] (or the next input) and call
//! [`Session::handle_timeout`]. `handle_timeout` is idempotent and an early
//! call does nothing. `poll_timeout` changes after any input or command.
//!
//! The stale-event rule lives in exactly one place, [`Session::handle_input`]:
//! a transport fact whose id is not the current transport's is counted and
//! dropped before it can touch any state.

mod io;
mod phase;

pub use io::{Call, Input, Output, RequestError, Stopped, SubscribeError};
pub use phase::ConnectionState;

use std::collections::VecDeque;
use std::time::Duration;

use crate::backoff::{Backoff, PacingSlots, RetryWindow};
use crate::close::{CloseCode, CloseDisposition, CloseInfo};
use crate::config::Config;
use crate::event::{DisconnectReason, Event, HaltReason, RetryPlan};
use crate::heartbeat::{Heartbeat, HeartbeatAction, LivenessFailure};
use crate::message::{
    decode_server, encoded_len, encoded_len_bound, ClientMessage, Connect, DecodeError,
    MessageKind, ReconnectAdvice, Request, ServerMessage, Welcome, MAX_FRAME_LEN, PROTOCOL_VERSION,
};
use crate::readiness::{Level, Readiness};
use crate::registry::{RequestId, RequestOutcome, RequestRegistry};
use crate::rng::{RandomSource, SplitMix64};
use crate::subscriptions::{SubscriptionOutput, Subscriptions};
use crate::time::Instant;
use crate::transport::{Failure, TransportId};
use phase::Phase;

/// The shortest server ping interval the client accepts; shorter (non-zero)
/// advertisements are raised to it, and 0 means "the server does not ping".
pub const MIN_SERVER_PING_MS: u64 = 1_000;

/// The longest server ping interval the client accepts; longer
/// advertisements are lowered to it, so the client's own probe runs at
/// least every `max(probe_interval, 1.5 × 120 s)` whatever a server says
/// (spec §3.2): no advertisement can switch dead-connection detection off.
pub const MAX_SERVER_PING_MS: u64 = 120_000;

/// The longest a liveness check ([`Session::check_liveness`]) waits for a
/// frame; a shorter `probe_timeout` wins.
pub const LIVENESS_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// What `handle_timeout` found due in the phase.
enum Due {
    Nothing,
    Abandon(TransportId, CloseCode, DisconnectReason),
    Probe(TransportId),
    Dial,
}

/// Counters a driver may export as metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionStats {
    /// Transports requested (`OpenTransport` outputs).
    pub transports_opened: u64,
    /// Inputs dropped because they came from a transport that is not current.
    pub stale_inputs: u64,
    /// Frames with an unknown `type`, skipped.
    pub unknown_frames: u64,
    /// Probes (`ping`) sent by the client.
    pub probes_sent: u64,
}

/// A client session: connection ownership, liveness, requests and
/// subscriptions, as one sans-IO state machine.
#[derive(Debug)]
pub struct Session {
    config: Config,
    now: Instant,
    rng: SplitMix64,
    phase: Phase,
    backoff: Backoff,
    /// Retries after [`Failure::Unreachable`], independent of `backoff`.
    local_backoff: Backoff,
    /// Set by deploy advice: policy delays are doubled until the backoff resets.
    deploy_backoff: bool,
    /// Advice received on the current transport, applied when it closes.
    advice: Option<ReconnectAdvice>,
    /// The earliest dial the server's advice allows, until the next dial.
    not_before: Option<Instant>,
    online: bool,
    next_transport: u64,
    readiness: Readiness,
    ready_since: Option<Instant>,
    registry: RequestRegistry,
    subscriptions: Subscriptions,
    session_id: Option<String>,
    outputs: VecDeque<Output>,
    stats: SessionStats,
}

impl Session {
    /// A new idle session. Nothing happens until [`Session::start`].
    pub fn new(config: Config, now: Instant, rng_seed: u64) -> Self {
        let subscriptions =
            Subscriptions::new(config.subscribe_timeout(), config.resubscribe_backoff());
        Session {
            backoff: Backoff::new(config.backoff()),
            local_backoff: Backoff::new(config.unreachable_retry()),
            config,
            now,
            rng: SplitMix64::new(rng_seed),
            phase: Phase::Idle,
            deploy_backoff: false,
            advice: None,
            not_before: None,
            online: true,
            next_transport: 0,
            readiness: Readiness::default(),
            ready_since: None,
            registry: RequestRegistry::new(),
            subscriptions,
            session_id: None,
            outputs: VecDeque::new(),
            stats: SessionStats::default(),
        }
    }

    // ----- getters -----

    /// The three readiness levels.
    pub fn readiness(&self) -> Readiness {
        self.readiness
    }

    /// The aggregate readiness.
    pub fn is_ready(&self) -> bool {
        self.readiness.ready()
    }

    /// Where the connection stands.
    pub fn state(&self) -> ConnectionState {
        self.phase.state()
    }

    /// The transport the session currently owns, if any.
    pub fn current_transport(&self) -> Option<TransportId> {
        self.phase.transport()
    }

    /// The session id from the last `welcome`.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Failed attempts in a row since the backoff last reset.
    pub fn attempt(&self) -> u32 {
        self.backoff.attempt()
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Requests in flight.
    pub fn requests_in_flight(&self) -> usize {
        self.registry.len()
    }

    /// Responses that matched no request in flight.
    pub fn late_responses(&self) -> u64 {
        self.registry.late_responses()
    }

    /// The subscriptions.
    pub fn subscriptions(&self) -> &Subscriptions {
        &self.subscriptions
    }

    /// Counters.
    pub fn stats(&self) -> SessionStats {
        let mut stats = self.stats;
        if let Phase::Open { heartbeat, .. } = &self.phase {
            stats.probes_sent = stats.probes_sent.saturating_add(heartbeat.probes_sent());
        }
        stats
    }

    // ----- outputs -----

    /// The next thing the driver must do. Drain after every call.
    #[must_use]
    pub fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// When [`Session::handle_timeout`] next has work; `None` if nothing is scheduled.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        if matches!(self.phase, Phase::Stopped) {
            return None;
        }
        [
            self.phase.poll_timeout(),
            self.registry.poll_timeout(),
            self.subscriptions.poll_timeout(),
            self.cooldown_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    // ----- commands -----

    /// Start connecting. After a halt this resumes with a fresh backoff.
    /// Does nothing if a connection or an attempt is already under way.
    pub fn start(&mut self, now: Instant) -> Result<(), Stopped> {
        let now = self.advance(now);
        match self.phase {
            Phase::Stopped => Err(Stopped),
            Phase::Idle | Phase::Halted => {
                self.resume(now);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Connect now: cancels a pending backoff wait and dials at once. Emits no
    /// disconnect event and never creates a second transport: while an
    /// attempt or a connection exists it does nothing.
    pub fn reconnect_now(&mut self, now: Instant) -> Result<(), Stopped> {
        match self.phase {
            Phase::Waiting { .. } | Phase::Offline => {
                let now = self.advance(now);
                self.dial(now);
                Ok(())
            }
            _ => self.start(now),
        }
    }

    /// Check now that the peer is alive, instead of waiting out the
    /// heartbeat: for moments when the connection may have died unnoticed
    /// (a page becomes visible again, is restored from the back/forward
    /// cache, the device is back online or resumes from a freeze).
    ///
    /// While Open it sends one `ping` and gives the peer
    /// `min(probe_timeout, LIVENESS_CHECK_TIMEOUT)` to send any frame; if
    /// nothing arrives by then the transport is closed with 4000
    /// (`probe_unanswered`), as for an unanswered probe. A probe already
    /// pending is not repeated (the check only sets the short deadline), and
    /// a check already pending is neither repeated nor extended. In every
    /// other state it does nothing: a wait or an attempt is already under way.
    pub fn check_liveness(&mut self, now: Instant) {
        let now = self.advance(now);
        let timeout = self.config.probe_timeout().min(LIVENESS_CHECK_TIMEOUT);
        let Phase::Open {
            id,
            heartbeat,
            check,
        } = &mut self.phase
        else {
            return;
        };
        if check.is_some() {
            return;
        }
        *check = Some(now.saturating_add(timeout));
        if heartbeat.pending_probe_at().is_none() {
            let id = *id;
            self.stats.probes_sent = self.stats.probes_sent.saturating_add(1);
            self.push(Output::Transmit {
                id,
                message: ClientMessage::Ping,
            });
        }
    }

    /// Stop for good: closes the transport, settles every request, cancels
    /// every timer, emits [`Event::Stopped`] and nothing after it.
    pub fn stop(&mut self, now: Instant) {
        let now = self.advance(now);
        if matches!(self.phase, Phase::Stopped) {
            return;
        }
        let was_open = matches!(self.phase, Phase::Open { .. });
        if let Some(id) = self.phase.transport() {
            self.push(Output::CloseTransport {
                id,
                code: CloseCode::NORMAL,
                reason: "client stop".into(),
            });
        }
        self.phase = Phase::Stopped;
        self.drop_transport_state(now);
        if was_open {
            self.emit(Event::Disconnected {
                reason: DisconnectReason::ClientStopped,
                retry: RetryPlan::No,
            });
        }
        self.emit(Event::Stopped);
    }

    /// Send a request. Refused with [`RequestError::NotReady`] (never sent)
    /// unless the protocol level is up. The request settles exactly once, by
    /// [`Event::Response`], no later than its deadline.
    pub fn request(&mut self, now: Instant, call: Call) -> Result<RequestId, RequestError> {
        let now = self.advance(now);
        let id = match &self.phase {
            Phase::Stopped => return Err(RequestError::Stopped),
            Phase::Open { id, .. } => *id,
            _ => return Err(RequestError::NotReady),
        };
        let timeout = call.timeout.unwrap_or(self.config.request_timeout());
        let request = Request {
            id: self.registry.next_id().0,
            method: call.method,
            params: call.params,
            idem: call.idempotency_key,
            timeout_ms: Some(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)),
        };
        // The envelope (type, id, timeout_ms, field names) is under 128
        // bytes; only a request that may be near the limit is measured.
        let bound = encoded_len_bound(&request.params)
            .saturating_add(request.method.len().saturating_mul(6))
            .saturating_add(
                request
                    .idem
                    .as_ref()
                    .map_or(0, |k| k.len().saturating_mul(6)),
            )
            .saturating_add(128);
        let message = ClientMessage::Request(request);
        if bound > MAX_FRAME_LEN {
            let len = encoded_len(&message);
            if len > MAX_FRAME_LEN {
                return Err(RequestError::TooLarge {
                    len,
                    max: MAX_FRAME_LEN,
                });
            }
        }
        let request_id = self.registry.insert(now + timeout);
        self.push(Output::Transmit { id, message });
        Ok(request_id)
    }

    /// Replace the credentials sent in `connect` from the next transport on
    /// (after [`HaltReason::AuthFailed`], refresh them, then `start`).
    pub fn set_token(&mut self, token: Option<String>) {
        self.config.set_token(token);
    }

    /// Want `channel`. It is subscribed now if the session is established,
    /// and on every (re)connection after, resuming from its position.
    pub fn subscribe(&mut self, now: Instant, channel: &str) -> Result<(), SubscribeError> {
        let now = self.advance(now);
        if matches!(self.phase, Phase::Stopped) {
            return Err(SubscribeError::Stopped);
        }
        let mut out = Vec::new();
        if !self.subscriptions.add(now, channel, &mut out) {
            return Err(SubscribeError::AlreadySubscribed(channel.to_owned()));
        }
        self.apply_subscription_outputs(out);
        self.refresh_readiness(now);
        Ok(())
    }

    /// Stop wanting `channel`.
    pub fn unsubscribe(&mut self, now: Instant, channel: &str) -> Result<(), SubscribeError> {
        let now = self.advance(now);
        if matches!(self.phase, Phase::Stopped) {
            return Err(SubscribeError::Stopped);
        }
        let mut out = Vec::new();
        if !self.subscriptions.remove(channel, &mut out) {
            return Err(SubscribeError::NotSubscribed(channel.to_owned()));
        }
        self.apply_subscription_outputs(out);
        self.refresh_readiness(now);
        Ok(())
    }

    // ----- inputs -----

    /// Feed a fact from the driver.
    pub fn handle_input(&mut self, now: Instant, input: Input) {
        let now = self.advance(now);
        if matches!(self.phase, Phase::Stopped) {
            return;
        }
        let transport = match &input {
            Input::TransportOpened(id)
            | Input::TransportFailed(id, _)
            | Input::TransportClosed(id, _)
            | Input::Frame(id, _)
            | Input::Message(id, _) => Some(*id),
            Input::Network { .. } => None,
        };
        // The stale-event rule: only the current transport may change state.
        if let Some(id) = transport {
            if self.phase.transport() != Some(id) {
                self.stats.stale_inputs = self.stats.stale_inputs.saturating_add(1);
                return;
            }
        }
        match input {
            Input::TransportOpened(id) => self.on_opened(now, id),
            Input::TransportFailed(_, failure) => self.on_failed(now, failure),
            Input::TransportClosed(_, close) => self.on_closed(now, close),
            Input::Frame(id, text) => match decode_server(&text) {
                Ok(message) => self.on_message(now, id, message),
                Err(DecodeError::UnknownType { .. }) => {
                    // A newer server's message: proof of life, otherwise skipped.
                    self.stats.unknown_frames = self.stats.unknown_frames.saturating_add(1);
                    self.note_frame(now);
                }
                Err(error) => self.on_protocol_violation(now, id, error),
            },
            Input::Message(id, message) => self.on_message(now, id, message),
            Input::Network { online } => self.on_network(now, online),
        }
    }

    /// Run whatever is due at `now`. Idempotent; early calls do nothing.
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.advance(now);
        let mut settled = Vec::new();
        self.registry.handle_timeout(now, &mut settled);
        self.emit_settled(settled);

        let due = match &mut self.phase {
            Phase::Stopped => return,
            Phase::Connecting { id, deadline } | Phase::Handshaking { id, deadline }
                if *deadline <= now =>
            {
                Due::Abandon(
                    *id,
                    CloseCode::HANDSHAKE_TIMEOUT,
                    DisconnectReason::ConnectTimeout,
                )
            }
            Phase::Open { id, check, .. } if check.is_some_and(|c| c <= now) => Due::Abandon(
                *id,
                CloseCode::HEARTBEAT_TIMEOUT,
                DisconnectReason::HeartbeatTimeout {
                    cause: LivenessFailure::ProbeUnanswered,
                },
            ),
            Phase::Open { id, heartbeat, .. } => match heartbeat.handle_timeout(now) {
                Ok(HeartbeatAction::Probe) => Due::Probe(*id),
                Ok(_) => Due::Nothing,
                Err(cause) => Due::Abandon(
                    *id,
                    CloseCode::HEARTBEAT_TIMEOUT,
                    DisconnectReason::HeartbeatTimeout { cause },
                ),
            },
            Phase::Waiting { until } if *until <= now => Due::Dial,
            _ => Due::Nothing,
        };
        match due {
            Due::Nothing => {}
            Due::Abandon(id, code, reason) => self.abandon(now, id, code, reason),
            Due::Probe(id) => self.push(Output::Transmit {
                id,
                message: ClientMessage::Ping,
            }),
            Due::Dial => self.dial(now),
        }

        if matches!(self.phase, Phase::Open { .. }) {
            let mut out = Vec::new();
            self.subscriptions.handle_timeout(now, &mut out);
            self.apply_subscription_outputs(out);
        }
        if self.cooldown_deadline().is_some_and(|at| at <= now) {
            // Ready for the whole cooldown: the connection is proven stable.
            self.reset_backoff();
        }
    }

    // ----- transport facts -----

    fn on_opened(&mut self, now: Instant, id: TransportId) {
        if !matches!(self.phase, Phase::Connecting { .. }) {
            return;
        }
        self.phase = Phase::Handshaking {
            id,
            deadline: now + self.config.connect_timeout(),
        };
        self.advice = None;
        self.local_backoff.reset();
        self.push(Output::Transmit {
            id,
            message: ClientMessage::Connect(Connect {
                protocol: PROTOCOL_VERSION,
                token: self.config.token(),
                session: self.session_id.clone(),
            }),
        });
        self.refresh_readiness(now);
    }

    fn on_failed(&mut self, now: Instant, failure: Failure) {
        let halt = match &failure {
            Failure::InvalidConfig { detail } => Some(HaltReason::InvalidConfig {
                detail: detail.clone(),
            }),
            Failure::Rejected {
                status: 401 | 403, ..
            } => Some(HaltReason::AuthFailed),
            _ => None,
        };
        if let Failure::Rejected {
            retry_after_ms: Some(after),
            ..
        } = failure
        {
            // `Retry-After: R` from the server's admission control: advice
            // like a `reconnect` message, spread over [R, 2R) so a fleet
            // told the same R does not come back in one wave.
            self.advice.get_or_insert(ReconnectAdvice {
                reason: "retry_after".to_owned(),
                min_delay_ms: after,
                max_delay_ms: after.saturating_mul(2),
                message: None,
            });
        }
        self.lose_transport(now, DisconnectReason::TransportFailed { failure }, halt);
    }

    fn on_closed(&mut self, now: Instant, close: CloseInfo) {
        let halt = match close.disposition() {
            CloseDisposition::Terminal => Some(HaltReason::ServerClosed {
                close: close.clone(),
            }),
            CloseDisposition::AuthFailed => Some(HaltReason::AuthFailed),
            _ => None,
        };
        self.lose_transport(now, DisconnectReason::TransportClosed { close }, halt);
    }

    fn on_protocol_violation(&mut self, now: Instant, id: TransportId, error: DecodeError) {
        let (code, reason) = match error {
            DecodeError::TooLarge { .. } => (CloseCode::TOO_BIG, "frame too large"),
            _ => (CloseCode::PROTOCOL_ERROR, "malformed frame"),
        };
        self.push(Output::CloseTransport {
            id,
            code,
            reason: reason.into(),
        });
        self.lose_transport(now, DisconnectReason::ProtocolViolation { error }, None);
    }

    /// Close the current transport ourselves and move on without waiting
    /// for its close event.
    fn abandon(
        &mut self,
        now: Instant,
        id: TransportId,
        code: CloseCode,
        reason: DisconnectReason,
    ) {
        let text = match &reason {
            DisconnectReason::HeartbeatTimeout { .. } => "heartbeat timeout",
            DisconnectReason::ConnectTimeout => "connect timeout",
            _ => "abandoned",
        };
        self.push(Output::CloseTransport {
            id,
            code,
            reason: text.into(),
        });
        self.lose_transport(now, reason, None);
    }

    fn on_network(&mut self, now: Instant, online: bool) {
        if online == self.online {
            return;
        }
        self.online = online;
        if !online {
            match self.phase {
                Phase::Waiting { .. } => self.phase = Phase::Offline,
                Phase::Connecting { id, .. } | Phase::Handshaking { id, .. } => {
                    self.push(Output::CloseTransport {
                        id,
                        code: CloseCode::GOING_AWAY,
                        reason: "network offline".into(),
                    });
                    self.lose_transport(now, DisconnectReason::NetworkOffline, None);
                }
                // An open connection may survive; the heartbeat will tell.
                _ => {}
            }
            return;
        }
        if matches!(self.phase, Phase::Offline | Phase::Waiting { .. }) {
            // Online proves nothing about the server: start an attempt soon,
            // with a fresh backoff, spread so a fleet does not dial at once.
            // The server's own advice ("not before") still holds.
            self.backoff.reset();
            let window = self.config.online_delay().as_millis() as f64;
            let delay_ms = (self.rng.next_unit() * window).floor() as u64;
            let until = now + Duration::from_millis(delay_ms);
            self.phase = Phase::Waiting {
                until: self.not_before.map_or(until, |t| t.max(until)),
            };
        }
    }

    // ----- messages -----

    fn note_frame(&mut self, now: Instant) {
        if let Phase::Open {
            heartbeat, check, ..
        } = &mut self.phase
        {
            heartbeat.handle_frame(now);
            *check = None;
        }
    }

    fn on_message(&mut self, now: Instant, id: TransportId, message: ServerMessage) {
        if matches!(self.phase, Phase::Connecting { .. }) {
            // Frames before the open event: the driver reordered; treat the
            // transport as open first so nothing is lost.
            self.on_opened(now, id);
        }
        self.note_frame(now);
        match message {
            ServerMessage::Welcome(welcome) => self.on_welcome(now, id, welcome),
            ServerMessage::Ping => self.push(Output::Transmit {
                id,
                message: ClientMessage::Pong,
            }),
            ServerMessage::Pong => {}
            ServerMessage::Response(response) => {
                if let Some((request, outcome)) = self.registry.handle_response(response) {
                    self.emit(Event::Response {
                        id: request,
                        outcome,
                    });
                }
            }
            ServerMessage::Subscribed(msg) => {
                let mut out = Vec::new();
                self.subscriptions.handle_subscribed(msg, &mut out);
                self.apply_subscription_outputs(out);
                self.refresh_readiness(now);
            }
            ServerMessage::Unsubscribed(msg) => {
                let mut out = Vec::new();
                self.subscriptions
                    .handle_unsubscribed(now, msg, &mut self.rng, &mut out);
                self.apply_subscription_outputs(out);
                self.refresh_readiness(now);
            }
            ServerMessage::Publication(publication) => {
                let mut out = Vec::new();
                self.subscriptions
                    .handle_publication(now, publication, &mut out);
                self.apply_subscription_outputs(out);
                self.refresh_readiness(now);
            }
            ServerMessage::Reconnect(advice) => self.advice = Some(advice),
            ServerMessage::Error(body) => self.emit(Event::ServerError(body)),
        }
    }

    fn on_welcome(&mut self, now: Instant, id: TransportId, welcome: Welcome) {
        if !matches!(self.phase, Phase::Handshaking { .. }) {
            return;
        }
        if welcome.protocol != PROTOCOL_VERSION {
            // Retrying cannot help: the server will speak the same version next time.
            self.push(Output::CloseTransport {
                id,
                code: CloseCode::PROTOCOL_ERROR,
                reason: "unsupported protocol version".into(),
            });
            let error = DecodeError::Invalid {
                kind: MessageKind::Welcome,
                detail: format!("protocol {} is not {PROTOCOL_VERSION}", welcome.protocol),
            };
            let halt = HaltReason::ProtocolMismatch {
                server: welcome.protocol,
            };
            self.lose_transport(
                now,
                DisconnectReason::ProtocolViolation { error },
                Some(halt),
            );
            return;
        }
        // A server that pings keeps a healthy connection from ever being quiet
        // for long; probe only if it has been quiet for 1.5 of its intervals,
        // so a server-pinged connection sends no probes of its own.
        let server_ping = welcome
            .ping_interval_ms
            .filter(|&ms| ms > 0)
            .map(|ms| Duration::from_millis(ms.clamp(MIN_SERVER_PING_MS, MAX_SERVER_PING_MS)));
        let probe_interval = match server_ping {
            Some(ping) => self.config.probe_interval().max(ping.saturating_mul(3) / 2),
            None => self.config.probe_interval(),
        };
        let mut heartbeat = Heartbeat::new(now, probe_interval, self.config.probe_timeout());
        heartbeat.set_server_ping_interval(server_ping);
        self.phase = Phase::Open {
            id,
            heartbeat,
            check: None,
        };
        self.backoff.set_slots(welcome.pacing.map(|p| {
            PacingSlots::new(
                Duration::from_millis(p.period_ms),
                Duration::from_millis(p.phase_ms),
                now,
            )
        }));
        self.session_id = Some(welcome.session.clone());
        self.emit(Event::Connected {
            session: welcome.session,
        });
        let mut out = Vec::new();
        self.subscriptions.handle_protocol_up(now, &mut out);
        self.apply_subscription_outputs(out);
        self.refresh_readiness(now);
    }

    // ----- the reconnect controller -----

    /// The current transport is gone (failed, closed, or abandoned by us).
    /// This is the only place that decides what happens next.
    fn lose_transport(&mut self, now: Instant, reason: DisconnectReason, halt: Option<HaltReason>) {
        let was_open = matches!(self.phase, Phase::Open { .. });
        if let Phase::Open { heartbeat, .. } = &self.phase {
            self.stats.probes_sent = self
                .stats
                .probes_sent
                .saturating_add(heartbeat.probes_sent());
        }
        let advice = self.advice.take();
        if self.cooldown_deadline().is_some_and(|at| at <= now) {
            // Ready for the whole cooldown even if the timer has not run yet
            // (a throttled driver): the connection was proven stable.
            self.reset_backoff();
        }
        self.phase = Phase::Idle;
        self.drop_transport_state(now);

        let local = matches!(
            reason,
            DisconnectReason::TransportFailed {
                failure: Failure::Unreachable { .. }
            }
        );
        let retry = if let Some(halt) = halt {
            self.phase = Phase::Halted;
            Err(halt)
        } else if !self.online {
            self.phase = Phase::Offline;
            Ok(RetryPlan::WhenOnline)
        } else if local {
            Ok(self.schedule_local_retry(now))
        } else {
            self.schedule_reconnect(now, advice)
        };
        let plan = retry.clone().unwrap_or(RetryPlan::No);
        self.emit(if was_open {
            Event::Disconnected {
                reason,
                retry: plan,
            }
        } else {
            Event::ConnectFailed {
                reason,
                retry: plan,
            }
        });
        if let Err(halt) = retry {
            self.emit(Event::Halted { reason: halt });
        }
    }

    fn schedule_reconnect(
        &mut self,
        now: Instant,
        advice: Option<ReconnectAdvice>,
    ) -> Result<RetryPlan, HaltReason> {
        let attempts = self.backoff.attempt();
        if self
            .config
            .max_attempts()
            .is_some_and(|max| attempts >= max)
        {
            self.phase = Phase::Halted;
            return Err(HaltReason::Exhausted { attempts });
        }
        let advised = advice.is_some();
        if let Some(advice) = advice {
            self.deploy_backoff |= advice.is_deploy();
            self.backoff.advise(RetryWindow::from_advice(
                now,
                Duration::from_millis(advice.min_delay_ms),
                Duration::from_millis(advice.max_delay_ms),
            ));
        }
        let on_slot_grid = self.backoff.slots().is_some() && self.backoff.attempt() > 0;
        let mut delay = self.backoff.next_delay(now, &mut self.rng);
        if self.deploy_backoff && !advised && !on_slot_grid {
            // Deploy-related reconnects back off twice as long, except on the
            // server's slot grid, which already spreads the fleet.
            delay = delay.saturating_mul(2);
        }
        if advised {
            self.not_before = Some(now + delay);
        }
        self.phase = Phase::Waiting { until: now + delay };
        Ok(RetryPlan::After { delay })
    }

    /// This device has no route to the server: try again soon on a separate,
    /// short schedule. The attempts never reach the server, so they neither
    /// advance the backoff nor count toward `max_attempts`; the server's
    /// advice ("not before") still holds.
    fn schedule_local_retry(&mut self, now: Instant) -> RetryPlan {
        let delay = self.local_backoff.next_delay(now, &mut self.rng);
        let until = now + delay;
        let until = self.not_before.map_or(until, |t| t.max(until));
        self.phase = Phase::Waiting { until };
        RetryPlan::After {
            delay: until.saturating_duration_since(now),
        }
    }

    fn dial(&mut self, now: Instant) {
        self.not_before = None;
        self.next_transport = self.next_transport.saturating_add(1);
        let id = TransportId(self.next_transport);
        self.stats.transports_opened = self.stats.transports_opened.saturating_add(1);
        self.phase = Phase::Connecting {
            id,
            deadline: now + self.config.connect_timeout(),
        };
        self.push(Output::OpenTransport {
            id,
            attempt: self.backoff.attempt(),
        });
    }

    /// Leave `Idle`/`Halted` on the application's word: a fresh backoff, and
    /// channels the server refused get another chance (credentials may have
    /// been refreshed with [`Session::set_token`]).
    fn resume(&mut self, now: Instant) {
        self.reset_backoff();
        self.subscriptions.retry_refused();
        self.dial(now);
    }

    fn reset_backoff(&mut self) {
        self.backoff.reset();
        self.deploy_backoff = false;
    }

    /// When the backoff resets: after `reset_after` of continuous readiness,
    /// and only if there is something to reset.
    fn cooldown_deadline(&self) -> Option<Instant> {
        let since = self.ready_since?;
        if self.backoff.attempt() == 0 && !self.deploy_backoff {
            return None;
        }
        Some(since + self.config.reset_after())
    }

    /// Everything tied to the transport goes: readiness, requests in flight,
    /// confirmations. Positions and wanted channels stay.
    fn drop_transport_state(&mut self, now: Instant) {
        self.refresh_readiness(now);
        let mut settled = Vec::new();
        self.registry.settle_all(&mut settled);
        self.emit_settled(settled);
        self.subscriptions.handle_transport_down();
    }

    // ----- plumbing -----

    fn refresh_readiness(&mut self, now: Instant) {
        let transport = matches!(self.phase, Phase::Handshaking { .. } | Phase::Open { .. });
        let protocol = matches!(self.phase, Phase::Open { .. });
        let service = protocol && self.subscriptions.all_confirmed();
        let mut next = Readiness::default();
        next.set(Level::Transport, transport);
        next.set(Level::Protocol, protocol);
        next.set(Level::Service, service);
        if next == self.readiness {
            return;
        }
        let was_ready = self.readiness.ready();
        self.readiness = next;
        if next.ready() && !was_ready {
            self.ready_since = Some(now);
        } else if !next.ready() {
            self.ready_since = None;
        }
        self.emit(Event::ReadinessChanged {
            readiness: next,
            ready: next.ready(),
        });
    }

    fn apply_subscription_outputs(&mut self, out: Vec<SubscriptionOutput>) {
        let id = match &self.phase {
            Phase::Open { id, .. } => Some(*id),
            _ => None,
        };
        for item in out {
            match item {
                SubscriptionOutput::Send(message) => {
                    if let Some(id) = id {
                        self.push(Output::Transmit { id, message });
                    }
                }
                SubscriptionOutput::Event(event) => self.emit(event),
            }
        }
    }

    fn emit_settled(&mut self, settled: Vec<(RequestId, RequestOutcome)>) {
        for (id, outcome) in settled {
            self.emit(Event::Response { id, outcome });
        }
    }

    fn emit(&mut self, event: Event) {
        self.outputs.push_back(Output::Event(event));
    }

    fn push(&mut self, output: Output) {
        self.outputs.push_back(output);
    }

    /// Time only moves forward: an earlier `now` is clamped to the latest seen.
    fn advance(&mut self, now: Instant) -> Instant {
        self.now = self.now.max(now);
        self.now
    }
}
