//! The driver's side of the SSE fallback: which kind each live transport
//! is, the facts [`TransportChoice`] (belay-proto, which decides) is fed
//! with, and the WebSocket probes it asks for. A probe that opens yields
//! the bound the driver hands to `Session::replace_transport_when_quiet`
//! (the session picks the moment). Without a choice (the fallback turned
//! off) every dial is a WebSocket and nothing is probed.

use std::collections::HashMap;
use std::sync::Arc;

use belay_proto::{DialOutcome, Failure, Instant, TransportChoice, TransportId, TransportKind};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::transport::{self, Target};

pub(crate) struct Fallback {
    choice: Option<TransportChoice>,
    /// Each live transport's kind, and whether it opened.
    kinds: HashMap<TransportId, (TransportKind, bool)>,
    /// The kind of the last transport that opened.
    current: TransportKind,
    /// Where a probe reports whether its WebSocket opened.
    probes_tx: mpsc::UnboundedSender<bool>,
    pub(crate) probes: mpsc::UnboundedReceiver<bool>,
}

impl Fallback {
    pub(crate) fn new(choice: Option<TransportChoice>) -> Self {
        let (probes_tx, probes) = mpsc::unbounded_channel();
        Fallback {
            choice,
            kinds: HashMap::new(),
            current: TransportKind::WebSocket,
            probes_tx,
            probes,
        }
    }

    /// The kind of the last transport that opened.
    pub(crate) fn current(&self) -> TransportKind {
        self.current
    }

    /// When a probe is next due.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        self.choice.as_ref().and_then(TransportChoice::poll_timeout)
    }

    /// The kind a new dial `id` uses.
    pub(crate) fn dial(&mut self, id: TransportId) -> TransportKind {
        let kind = self
            .choice
            .as_ref()
            .map_or(TransportKind::WebSocket, TransportChoice::next);
        self.kinds.insert(id, (kind, false));
        kind
    }

    pub(crate) fn opened(&mut self, now: Instant, id: TransportId) {
        if let Some((kind, opened)) = self.kinds.get_mut(&id) {
            *opened = true;
            self.current = *kind;
            if let Some(choice) = &mut self.choice {
                choice.handle_dial(now, *kind, &DialOutcome::Opened);
            }
        }
    }

    /// Transport `id` failed; only a failure before it opened says
    /// anything about the path. Returns what the session is to be told
    /// ([`TransportChoice::failure_for_session`]).
    pub(crate) fn failed(&mut self, now: Instant, id: TransportId, failure: Failure) -> Failure {
        match (self.kinds.remove(&id), &mut self.choice) {
            (Some((kind, false)), Some(choice)) => {
                choice.handle_dial(now, kind, &DialOutcome::Failed(failure.clone()));
                choice.failure_for_session(kind, failure)
            }
            _ => failure,
        }
    }

    /// Transport `id` is gone (closed, or closed by us).
    pub(crate) fn forget(&mut self, id: TransportId) {
        self.kinds.remove(&id);
    }

    /// Start a WebSocket probe on `tasks` when one is due.
    pub(crate) fn probe(&mut self, now: Instant, target: &Arc<Target>, tasks: &mut JoinSet<()>) {
        let Some(choice) = &mut self.choice else {
            return;
        };
        if choice.poll_probe(now) {
            let (target, report) = (Arc::clone(target), self.probes_tx.clone());
            tasks.spawn(async move {
                let _ = report.send(transport::probe(target).await);
            });
        }
    }

    /// A probe ended; if it opened, the bound by which the session is to
    /// have moved back to WebSocket ([`TransportChoice::poll_switch`]).
    pub(crate) fn probed(&mut self, now: Instant, opened: bool) -> Option<Instant> {
        let choice = self.choice.as_mut()?;
        choice.handle_probe(now, opened);
        choice.poll_switch()
    }
}
