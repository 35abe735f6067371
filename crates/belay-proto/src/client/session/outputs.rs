//! How the session queues what the driver must do and what the application
//! is told: outputs, events, and readiness changes.

use super::{Output, Phase, Session};
use crate::client::event::Event;
use crate::client::readiness::{Level, Readiness};
use crate::client::registry::{RequestId, RequestOutcome};
use crate::client::subscriptions::SubscriptionOutput;
use crate::time::Instant;

impl Session {
    pub(super) fn refresh_readiness(&mut self, now: Instant) {
        let transport = matches!(self.phase, Phase::Handshaking { .. } | Phase::Open { .. });
        let protocol = matches!(self.phase, Phase::Open { .. }) && !self.leaving;
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

    pub(super) fn apply_subscription_outputs(&mut self, out: Vec<SubscriptionOutput>) {
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

    pub(super) fn emit_settled(&mut self, settled: Vec<(RequestId, RequestOutcome)>) {
        for (id, outcome) in settled {
            self.emit(Event::Response { id, outcome });
        }
    }

    pub(super) fn emit(&mut self, event: Event) {
        self.outputs.push_back(Output::Event(event));
    }

    pub(super) fn push(&mut self, output: Output) {
        self.outputs.push_back(output);
    }
}
