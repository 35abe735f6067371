//! The checks after every call: outputs against the driver's record, then
//! the session's state against itself; each guarded by its `Checks` flag.

use std::collections::BTreeSet;

use belay_proto::backoff::MAX_HINT_DELAY;
use belay_proto::{
    ConnectionState, Event, Instant, Output, Readiness, RequestOutcome, RetryPlan, TransportId,
};
use proptest::test_runner::TestCaseError;

use super::driver::Driver;

impl Driver {
    /// Process the outputs of one call, then check the invariants.
    pub(crate) fn finish(
        &mut self,
        out: Vec<Output>,
        was_stopped: bool,
    ) -> Result<(), TestCaseError> {
        if self.checks.stop && was_stopped {
            ensure!(self, out.is_empty(), "output after stop: {out:?}");
        }
        let opens = out
            .iter()
            .filter(|o| matches!(o, Output::OpenTransport { .. }))
            .count();
        if self.checks.transports {
            ensure!(
                self,
                opens <= 1,
                "{opens} transports opened at once: {out:?}"
            );
        }
        for output in &out {
            self.output(output)?;
        }
        if self.checks.readiness
            && out
                .iter()
                .any(|o| matches!(o, Output::Event(Event::ReadinessChanged { .. })))
        {
            ensure!(
                self,
                self.announced == self.session.readiness(),
                "last ReadinessChanged {:?} differs from readiness() {:?}",
                self.announced,
                self.session.readiness()
            );
        }
        self.invariants()
    }

    fn output(&mut self, output: &Output) -> Result<(), TestCaseError> {
        if self.checks.stop {
            ensure!(self, !self.stopped, "{output:?} after Event::Stopped");
        }
        match output {
            Output::OpenTransport { id, .. } => {
                if self.checks.transports {
                    ensure!(
                        self,
                        self.live.is_empty(),
                        "opened {id:?} while {:?} is live",
                        self.live
                    );
                    ensure!(
                        self,
                        self.opened.last().map_or(true, |last| last < id),
                        "opened {id:?} after {:?}: ids must be fresh and increasing",
                        self.opened.last()
                    );
                }
                self.opened.push(*id);
                self.live.insert(*id);
                self.advice_on_current = false;
            }
            Output::CloseTransport { id, .. } => {
                if self.checks.transports {
                    ensure!(
                        self,
                        self.live.contains(id),
                        "closed {id:?} which is not live ({:?})",
                        self.live
                    );
                }
                self.live.remove(id);
            }
            Output::Transmit { id, message } if self.checks.transports => {
                ensure!(
                    self,
                    self.live.contains(id),
                    "transmit {message:?} on {id:?} which is not live ({:?})",
                    self.live
                );
            }
            Output::Event(event) => self.event(event)?,
            _ => {}
        }
        Ok(())
    }

    fn event(&mut self, event: &Event) -> Result<(), TestCaseError> {
        match event {
            Event::ReadinessChanged { readiness, ready } => {
                if self.checks.readiness {
                    ensure!(
                        self,
                        *readiness != self.announced,
                        "ReadinessChanged repeats {readiness:?}"
                    );
                    ensure!(
                        self,
                        *ready == readiness.ready(),
                        "ReadinessChanged ready = {ready} for {readiness:?}"
                    );
                }
                self.announced = *readiness;
            }
            Event::Response { id, outcome } => {
                let latest = self.latest;
                let entry = self.requests.get_mut(&id.0);
                let (known, settled, deadline) = match entry {
                    Some(pending) => {
                        let settled = pending.settled;
                        pending.settled = true;
                        (true, settled, pending.deadline)
                    }
                    None => (false, false, Instant::ZERO),
                };
                if self.checks.requests {
                    ensure!(self, known, "response for unknown request {id:?}");
                    ensure!(self, !settled, "request {id:?} settled twice ({outcome:?})");
                    if matches!(outcome, RequestOutcome::Timeout) {
                        ensure!(
                            self,
                            latest >= deadline,
                            "request {id:?} timed out at {latest:?} before its deadline {deadline:?}"
                        );
                    }
                }
            }
            Event::Disconnected { retry, .. } | Event::ConnectFailed { retry, .. } => {
                if let (RetryPlan::After { delay }, true) = (retry, self.checks.delays) {
                    let mut bound = self.config.backoff().max_delay();
                    if self.advice_on_current {
                        bound = bound.max(MAX_HINT_DELAY);
                    }
                    if self.deploy_seen {
                        bound = bound.saturating_mul(2);
                    }
                    ensure!(
                        self,
                        *delay <= bound,
                        "{event:?}: delay {delay:?} exceeds {bound:?} (advice {}, deploy {})",
                        self.advice_on_current,
                        self.deploy_seen
                    );
                }
            }
            Event::Stopped => self.stopped = true,
            _ => {}
        }
        Ok(())
    }

    fn invariants(&self) -> Result<(), TestCaseError> {
        let state = self.session.state();
        let current = self.session.current_transport();
        if self.checks.transports {
            let expected: BTreeSet<TransportId> = current.into_iter().collect();
            ensure!(
                self,
                self.live == expected,
                "live transports {:?}, but the session owns {current:?}",
                self.live
            );
            let owns = matches!(
                state,
                ConnectionState::Connecting | ConnectionState::Handshaking | ConnectionState::Open
            );
            ensure!(
                self,
                owns == current.is_some(),
                "state {state:?} with current transport {current:?}"
            );
        }
        if self.checks.requests {
            let unsettled: Vec<(u64, Instant)> = self
                .requests
                .iter()
                .filter(|(_, p)| !p.settled)
                .map(|(id, p)| (*id, p.deadline))
                .collect();
            ensure!(
                self,
                unsettled.len() == self.session.requests_in_flight(),
                "{} requests unsettled, the session has {} in flight",
                unsettled.len(),
                self.session.requests_in_flight()
            );
            if let Some(earliest) = unsettled.iter().map(|(_, d)| *d).min() {
                let poll = self.session.poll_timeout();
                ensure!(
                    self,
                    poll.is_some_and(|p| p <= earliest),
                    "poll_timeout {poll:?} is after the earliest request deadline {earliest:?}"
                );
            }
            if self.stopped {
                ensure!(
                    self,
                    unsettled.is_empty(),
                    "unsettled after stop: {unsettled:?}"
                );
            }
        }
        if self.checks.readiness {
            let r = self.session.readiness();
            ensure!(
                self,
                self.session.is_ready() == (r.transport && r.protocol && r.service),
                "is_ready {} for {r:?}",
                self.session.is_ready()
            );
            ensure!(
                self,
                !r.protocol || r.transport,
                "protocol without transport: {r:?}"
            );
            ensure!(
                self,
                !r.service || r.protocol,
                "service without protocol: {r:?}"
            );
            ensure!(
                self,
                self.announced == r,
                "readiness() is {r:?}, the events announced {:?}",
                self.announced
            );
            ensure!(
                self,
                r.protocol == (state == ConnectionState::Open && !self.session.is_leaving()),
                "protocol level {} in state {state:?} (leaving: {})",
                r.protocol,
                self.session.is_leaving()
            );
            ensure!(
                self,
                r.transport
                    == matches!(state, ConnectionState::Handshaking | ConnectionState::Open),
                "transport level {} in state {state:?}",
                r.transport
            );
        }
        if self.checks.stop {
            ensure!(
                self,
                self.stopped == (state == ConnectionState::Stopped),
                "state {state:?} but Stopped emitted: {}",
                self.stopped
            );
            if self.stopped {
                let poll = self.session.poll_timeout();
                ensure!(self, poll.is_none(), "poll_timeout {poll:?} after stop");
                ensure!(self, current.is_none(), "transport {current:?} after stop");
                ensure!(
                    self,
                    self.session.readiness() == Readiness::default(),
                    "readiness {:?} after stop",
                    self.session.readiness()
                );
                ensure!(
                    self,
                    self.session.requests_in_flight() == 0,
                    "requests in flight after stop"
                );
            }
        }
        Ok(())
    }
}
