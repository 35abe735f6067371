//! [`TransportChoice`]: which transport the next dial uses, WebSocket or
//! the SSE + HTTP fallback (spec/PROTOCOL.md §1.7), decided from how the
//! dials went, and when to move back. Pure and clock-free like the rest of
//! the core; a driver asks it at every `OpenTransport` and tells it how
//! each dial and each probe ended. [`SendRetry`] (in [`send_retry`]) is the
//! fallback's other rule: what a driver does with a send that was not
//! answered `204`.
//!
//! ```text
//!   Direct ── WebSocket failed before open ──▶ next dial: SSE ── opened ──▶ Fallback
//!     ▲        (network error, or refused                 └─ failed ─▶ next dial: WebSocket
//!     │         other than 401/429/503)
//!     │
//!   Fallback: every dial is SSE; every `retry_websocket_every` a probe (a
//!     WebSocket opened and closed at once, no session).
//!     Probe opened ──▶ switching: the next dial is a WebSocket, and
//!       poll_switch() hands the driver a bound `by` (now + switch_within)
//!       for Session::replace_transport_when_quiet(now, by)
//!     WebSocket opened ──▶ Direct;  WebSocket failed ──▶ back to SSE
//! ```
//!
//! The moment of the switch is the session's, because only the session
//! knows when it is quiet: it keeps taking requests on the stream and
//! moves at the first moment none is in flight; if that moment has not
//! come by `by`, it stops taking new ones (refused `NotReady`, never sent)
//! until the last is answered, and moves then.
//!
//! A refusal the server itself gives (401, 429, 503) says nothing about a
//! blocked upgrade (the fallback is refused the same way), so it does not
//! count. A blocked upgrade fails in one of the other ways: the proxy
//! resets the connection, answers it itself (400, 403, 502…), or passes it
//! on without its `Upgrade` header (the server answers 400).

use std::time::Duration;

use crate::time::Instant;
use crate::transport::Failure;

pub mod send_retry;

pub use send_retry::{SendOutcome, SendRetry, SendRetryPolicy, SendStep};

/// A transport a dial can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportKind {
    /// A WebSocket (`/ws`).
    WebSocket,
    /// An SSE stream and POSTs (`/sse`).
    Sse,
}

/// When to fall back and when to try WebSocket again.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FallbackConfig {
    /// WebSocket dials in a row that failed before opening, after which the
    /// next dial tries the fallback.
    pub after_failures: u32,
    /// While on the fallback, how often a WebSocket is tried again.
    pub retry_websocket_every: Duration,
    /// Once a probe opened, how long the session may wait for a quiet
    /// moment (no request in flight) before it stops taking new requests
    /// to make one ([`TransportChoice::poll_switch`]).
    pub switch_within: Duration,
}

impl Default for FallbackConfig {
    fn default() -> Self {
        FallbackConfig {
            after_failures: 1,
            retry_websocket_every: Duration::from_secs(60),
            switch_within: Duration::from_secs(30),
        }
    }
}

impl FallbackConfig {
    /// Set [`after_failures`](Self::after_failures) (at least 1).
    pub fn set_after_failures(&mut self, failures: u32) -> &mut Self {
        self.after_failures = failures.max(1);
        self
    }

    /// Set [`retry_websocket_every`](Self::retry_websocket_every).
    pub fn set_retry_websocket_every(&mut self, every: Duration) -> &mut Self {
        self.retry_websocket_every = every;
        self
    }

    /// Set [`switch_within`](Self::switch_within).
    pub fn set_switch_within(&mut self, within: Duration) -> &mut Self {
        self.switch_within = within;
        self
    }
}

/// How a dial ended, as far as the choice cares.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DialOutcome {
    /// The transport opened.
    Opened,
    /// It failed before opening.
    Failed(Failure),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Direct,
    Fallback,
}

/// Which transport the next dial uses (see the [module](self) docs).
#[derive(Debug, Clone)]
pub struct TransportChoice {
    config: FallbackConfig,
    mode: Mode,
    /// WebSocket dials in a row that failed before opening (counted ones).
    ws_failures: u32,
    /// The next dial's transport.
    next: TransportKind,
    /// On the fallback: when the next probe starts.
    probe_at: Option<Instant>,
    probing: bool,
    /// A probe opened: the next dial is a WebSocket, until a WebSocket
    /// dial ends (opened: Direct; failed: back to SSE).
    switching: bool,
    /// The bound on the wait for a quiet moment, until the driver takes it
    /// ([`poll_switch`](TransportChoice::poll_switch)).
    switch_by: Option<Instant>,
    /// A WebSocket upgrade was answered 403 and the session was told of a
    /// network failure instead, until the fallback shows whose 403 it was.
    forbidden_deferred: bool,
}

impl TransportChoice {
    /// Start on WebSocket.
    pub fn new(config: FallbackConfig) -> Self {
        TransportChoice {
            config,
            mode: Mode::Direct,
            ws_failures: 0,
            next: TransportKind::WebSocket,
            probe_at: None,
            probing: false,
            switching: false,
            switch_by: None,
            forbidden_deferred: false,
        }
    }

    /// Whether sessions run on the fallback now.
    pub fn on_fallback(&self) -> bool {
        self.mode == Mode::Fallback
    }

    /// The transport the next dial uses.
    pub fn next(&self) -> TransportKind {
        self.next
    }

    /// A dial on `kind` ended with `outcome`.
    pub fn handle_dial(&mut self, now: Instant, kind: TransportKind, outcome: &DialOutcome) {
        match (kind, outcome) {
            (TransportKind::WebSocket, DialOutcome::Opened) => {
                self.forbidden_deferred = false;
                self.mode = Mode::Direct;
                self.ws_failures = 0;
                self.probe_at = None;
                self.switching = false;
                self.switch_by = None;
                self.next = TransportKind::WebSocket;
            }
            (TransportKind::WebSocket, DialOutcome::Failed(failure)) => {
                if counts(failure) {
                    self.ws_failures = self.ws_failures.saturating_add(1);
                }
                // A switch whose WebSocket failed is over: back to the stream.
                self.switching = false;
                self.switch_by = None;
                if self.mode == Mode::Fallback || self.ws_failures >= self.config.after_failures {
                    self.next = TransportKind::Sse;
                }
            }
            (TransportKind::Sse, DialOutcome::Opened) => {
                // The 403 was the path's: WebSockets are blocked.
                self.forbidden_deferred = false;
                if self.mode == Mode::Direct {
                    self.mode = Mode::Fallback;
                    self.probe_at = None;
                }
                // Probes restart from here (also after a switch that failed).
                if self.probe_at.is_none() && !self.probing && !self.switching {
                    self.probe_at = Some(now.saturating_add(self.config.retry_websocket_every));
                }
                if !self.switching {
                    self.next = TransportKind::Sse;
                }
            }
            // The server may be down, or the block gone: try the other.
            (TransportKind::Sse, DialOutcome::Failed(_)) => self.next = TransportKind::WebSocket,
        }
    }

    /// What the session is to be told of a dial on `kind` that failed with
    /// `failure`, once [`handle_dial`](Self::handle_dial) has heard of it.
    /// A WebSocket upgrade answered 403 would halt the session as an
    /// authorization failure, but a proxy that blocks WebSockets answers
    /// 403 too. So:
    ///
    /// * on the fallback (a stream opened on this path before), a 403 to a
    ///   WebSocket is the path's: the session is told of a network failure;
    /// * otherwise, while the next dial is the fallback, the 403 is
    ///   reported as a network failure too (the session retries, on SSE),
    ///   and the fallback's dial decides whose it was: its stream opens
    ///   (the path's); it is refused 429 or 503 (the server, busy, is
    ///   reachable over HTTP: retry); it fails in any other way (refused
    ///   403 or 401, or unreachable: the session is told of the 403 after
    ///   all, and halts).
    ///
    /// Every other failure is passed on as it is.
    pub fn failure_for_session(&mut self, kind: TransportKind, failure: Failure) -> Failure {
        match (kind, failure) {
            (TransportKind::WebSocket, Failure::Rejected { status: 403, .. })
                if self.next == TransportKind::Sse =>
            {
                self.forbidden_deferred = self.mode == Mode::Direct;
                Failure::network(
                    "the upgrade was answered 403 (a proxy that blocks WebSockets?): trying the fallback",
                )
            }
            (TransportKind::Sse, failure) if self.forbidden_deferred => {
                self.forbidden_deferred = false;
                match failure {
                    Failure::Rejected {
                        status: 429 | 503, ..
                    } => failure,
                    _ => Failure::rejected(403),
                }
            }
            (_, failure) => failure,
        }
    }

    /// When [`poll_probe`](Self::poll_probe) next has something to say:
    /// on the fallback, with no probe running and no switch under way.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match (self.mode, self.probing, self.switching) {
            (Mode::Fallback, false, false) => self.probe_at,
            _ => None,
        }
    }

    /// Whether to start a WebSocket probe now (at most one at a time; its
    /// end goes to [`handle_probe`](Self::handle_probe)).
    pub fn poll_probe(&mut self, now: Instant) -> bool {
        let due = self.poll_timeout().is_some_and(|at| now >= at);
        if due {
            self.probing = true;
        }
        due
    }

    /// The probe opened a WebSocket (`true`) or did not (the next probe
    /// is due `retry_websocket_every` from `now`). One that opened starts
    /// the switch: the next dial is a WebSocket, and
    /// [`poll_switch`](Self::poll_switch) has the bound.
    pub fn handle_probe(&mut self, now: Instant, opened: bool) {
        self.probing = false;
        if self.mode != Mode::Fallback {
            return;
        }
        if opened {
            self.switching = true;
            self.switch_by = Some(now.saturating_add(self.config.switch_within));
            self.probe_at = None;
            self.next = TransportKind::WebSocket;
        } else {
            self.probe_at = Some(now.saturating_add(self.config.retry_websocket_every));
        }
    }

    /// Once after a probe opened: the instant by which the session is to
    /// have made its quiet moment. The driver hands it to
    /// [`Session::replace_transport_when_quiet`](crate::Session::replace_transport_when_quiet);
    /// the dial that follows is a WebSocket.
    pub fn poll_switch(&mut self) -> Option<Instant> {
        self.switch_by.take()
    }

    /// Whether a probe opened and no WebSocket dial has ended since.
    pub fn is_switching(&self) -> bool {
        self.switching
    }
}

/// Whether a failed WebSocket dial may be a blocked upgrade.
fn counts(failure: &Failure) -> bool {
    match failure {
        Failure::Network { .. } => true,
        Failure::Rejected { status, .. } => !matches!(status, 429 | 503 | 401),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
