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
//!
//! The code is split by concern: this file holds the facade (getters,
//! commands, `handle_input`, `handle_timeout`); `calls` the commands that
//! ask the server for something (requests, subscriptions); `reconnect` the reconnect
//! controller (transport facts, what happens after a transport is lost,
//! dialing); `messages` what each server message does; `outputs` the output
//! queue and readiness changes; `switch` the move to a new transport at a
//! quiet moment (the SSE fallback's switch back); `io` and `phase` the types.

mod calls;
mod credentials;
mod io;
mod messages;
mod outputs;
mod phase;
mod reconnect;
mod switch;

pub use credentials::TokenError;
pub(crate) use credentials::{REFRESH_FROM, REFRESH_SPREAD};
pub use io::{Call, Input, Output, RequestError, SessionStats, Stopped, SubscribeError};
pub use phase::ConnectionState;

use std::collections::VecDeque;
use std::time::Duration;

use crate::backoff::Backoff;
use crate::client::config::Config;
use crate::client::event::{DisconnectReason, Event, RetryPlan};
use crate::client::readiness::Readiness;
use crate::client::registry::RequestRegistry;
use crate::client::subscriptions::Subscriptions;
use crate::client::transport::TransportId;
use crate::close::CloseCode;
use crate::heartbeat::{HeartbeatAction, LivenessFailure};
use crate::message::{
    decode_server, decode_server_binary, ClientMessage, DecodeError, ReconnectAdvice, ServerMessage,
};
use crate::rng::SplitMix64;
use crate::time::Instant;
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
    TokenTimeout,
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
    /// The server advised a reconnect on the open transport: no new
    /// request goes out on it, and the session leaves it (closing it
    /// itself) once no request is in flight.
    leaving: bool,
    /// A move to a new transport at the next quiet moment, and the bound
    /// on the wait for one (`switch.rs`).
    switch_by: Option<Instant>,
    /// When to ask for a new token and when the current one expires.
    credentials: credentials::Credentials,
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
            credentials: credentials::Credentials::new(Backoff::new(config.backoff())),
            config,
            now,
            rng: SplitMix64::new(rng_seed),
            phase: Phase::Idle,
            deploy_backoff: false,
            advice: None,
            leaving: false,
            switch_by: None,
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

    /// Whether the session is leaving its open transport on the server's
    /// advice: it sends no new request on it and closes it once no request
    /// is in flight (the protocol readiness level is down meanwhile).
    pub fn is_leaving(&self) -> bool {
        self.leaving
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
            self.switch_deadline(),
            self.credentials
                .ask_at
                .filter(|_| matches!(self.phase, Phase::Open { .. })),
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
                self.dial_or_ask(now);
                Ok(())
            }
            _ => self.start(now),
        }
    }

    /// Move the session to a new transport at once: close the current one
    /// (1000 `transport replaced`) and dial again without a backoff delay
    /// (a driver switching between WebSocket and the SSE fallback,
    /// [`TransportChoice`](crate::TransportChoice)). Requests in flight
    /// settle as for any lost transport, so call it when none is; the
    /// subscriptions resume from their positions. Emits `Disconnected`
    /// with [`DisconnectReason::Replaced`](crate::DisconnectReason). Does
    /// nothing unless Open.
    pub fn replace_transport(&mut self, now: Instant) -> Result<(), Stopped> {
        match self.phase {
            Phase::Stopped => Err(Stopped),
            Phase::Open { id, .. } => {
                let now = self.advance(now);
                self.push(Output::CloseTransport {
                    id,
                    code: CloseCode::NORMAL,
                    reason: "transport replaced".into(),
                });
                self.lose_transport(now, DisconnectReason::Replaced, None);
                Ok(())
            }
            _ => Ok(()),
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
            | Input::BinaryFrame(id, _)
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
            Input::Frame(id, text) => self.on_decoded(now, id, decode_server(&text)),
            Input::BinaryFrame(id, bytes) => {
                self.on_decoded(now, id, decode_server_binary(&bytes));
            }
            Input::Message(id, message) => self.on_message(now, id, message),
            Input::Network { online } => self.on_network(now, online),
        }
        self.switch_if_quiet(now);
    }

    /// A frame the session decoded (JSON or binary: the same rules).
    fn on_decoded(
        &mut self,
        now: Instant,
        id: TransportId,
        decoded: Result<ServerMessage, DecodeError>,
    ) {
        match decoded {
            Ok(message) => self.on_message(now, id, message),
            Err(DecodeError::UnknownType { .. }) => {
                // A newer server's message: proof of life, otherwise skipped.
                self.stats.unknown_frames = self.stats.unknown_frames.saturating_add(1);
                self.note_frame(now, None);
            }
            Err(error) => self.on_protocol_violation(now, id, error),
        }
    }

    /// Run whatever is due at `now`. Idempotent; early calls do nothing.
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.advance(now);
        let mut settled = Vec::new();
        self.registry.handle_timeout(now, &mut settled);
        self.emit_settled(settled);
        self.leave_if_idle(now);

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
            Phase::Authorizing { deadline } if *deadline <= now => Due::TokenTimeout,
            _ => Due::Nothing,
        };
        match due {
            Due::Nothing => {}
            Due::Abandon(id, code, reason) => self.abandon(now, id, code, reason),
            Due::Probe(id) => self.push(Output::Transmit {
                id,
                message: ClientMessage::Ping,
            }),
            Due::Dial => self.dial_or_ask(now),
            Due::TokenTimeout => self.token_ask_timed_out(now),
        }

        if matches!(self.phase, Phase::Open { .. }) {
            let mut out = Vec::new();
            self.subscriptions.handle_timeout(now, &mut out);
            self.apply_subscription_outputs(out);
        }
        self.ask_for_token_if_due(now);
        if self.cooldown_deadline().is_some_and(|at| at <= now) {
            // Ready for the whole cooldown: the connection is proven stable.
            self.reset_backoff();
        }
    }

    // ----- plumbing -----

    /// Time only moves forward: an earlier `now` is clamped to the latest seen.
    fn advance(&mut self, now: Instant) -> Instant {
        self.now = self.now.max(now);
        self.now
    }
}
