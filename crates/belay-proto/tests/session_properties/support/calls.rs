//! Calling the session: each call records what the session asked for and
//! hands its outputs to the checks.

use std::time::Duration;

use belay_proto::{
    Call, ConnectionState, Event, Input, Instant, Output, Readiness, RequestError, RequestOutcome,
    SessionStats, SubscribeError, TransportId,
};
use proptest::test_runner::TestCaseError;
use serde_json::json;

use super::driver::Driver;
use super::ops::CHANNELS;

/// Handle-timeout calls at one instant before the session must have nothing
/// left due at that instant (a zero-delay reconnect legitimately takes two).
pub(crate) const SPIN_LIMIT: usize = 16;

/// What must not change when a stale input arrives.
#[derive(Debug, Clone, PartialEq)]
struct Snapshot {
    state: ConnectionState,
    readiness: Readiness,
    poll_timeout: Option<Instant>,
    requests_in_flight: usize,
    current: Option<TransportId>,
    attempt: u32,
    session_id: Option<String>,
    late_responses: u64,
    subscribed: Vec<bool>,
    stats: SessionStats,
}

pub(crate) fn transport_of(input: &Input) -> Option<TransportId> {
    match input {
        Input::TransportOpened(id)
        | Input::TransportFailed(id, _)
        | Input::TransportClosed(id, _)
        | Input::Frame(id, _)
        | Input::Message(id, _) => Some(*id),
        _ => None,
    }
}

impl Driver {
    fn tick_clock(&mut self) {
        self.latest = self.latest.max(self.now);
    }

    fn drain(&mut self) -> Vec<Output> {
        std::iter::from_fn(|| self.session.poll_output()).collect()
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            state: self.session.state(),
            readiness: self.session.readiness(),
            poll_timeout: self.session.poll_timeout(),
            requests_in_flight: self.session.requests_in_flight(),
            current: self.session.current_transport(),
            attempt: self.session.attempt(),
            session_id: self.session.session_id().map(str::to_owned),
            late_responses: self.session.late_responses(),
            subscribed: CHANNELS
                .iter()
                .map(|c| self.session.subscriptions().is_subscribed(c))
                .collect(),
            stats: self.session.stats(),
        }
    }

    pub(crate) fn feed(&mut self, input: Input) -> Result<(), TestCaseError> {
        let was_stopped = self.invariants.stopped();
        let id = transport_of(&input);
        let stale = id.is_some() && id != self.session.current_transport();
        let before = stale.then(|| self.snapshot());
        if !stale {
            if let Input::TransportFailed(id, _) | Input::TransportClosed(id, _) = &input {
                // The driver saw it end: the transport is gone.
                self.invariants.transport_ended(*id);
            }
        }
        self.tick_clock();
        self.session.handle_input(self.now, input);
        let out = self.drain();
        if let (Some(before), true) = (before, self.checks.stale) {
            ensure!(
                self,
                out.is_empty(),
                "a stale input produced output: {out:?}"
            );
            let mut after = self.snapshot();
            let counted = if was_stopped { 0 } else { 1 };
            ensure!(
                self,
                after.stats.stale_inputs == before.stats.stale_inputs + counted,
                "stale input not counted: {:?} -> {:?}",
                before.stats,
                after.stats
            );
            after.stats.stale_inputs = before.stats.stale_inputs;
            ensure!(
                self,
                after == before,
                "a stale input changed the session:\n before {before:?}\n after  {after:?}"
            );
        }
        self.finish(out)
    }

    pub(crate) fn restart(&mut self, now: bool) -> Result<(), TestCaseError> {
        let was_stopped = self.invariants.stopped();
        self.tick_clock();
        let result = if now {
            self.session.reconnect_now(self.now)
        } else {
            self.session.start(self.now)
        };
        let out = self.drain();
        if self.checks.stop {
            ensure!(
                self,
                result.is_err() == was_stopped,
                "start/reconnect_now returned {result:?} (stopped: {was_stopped})"
            );
        }
        self.finish(out)
    }

    pub(crate) fn request(&mut self, timeout: Option<u64>) -> Result<(), TestCaseError> {
        let was_stopped = self.invariants.stopped();
        // Open and taking requests (not leaving an advised transport).
        let was_open = self.session.state() == ConnectionState::Open && !self.session.is_leaving();
        let mut call = Call::new("echo", json!({ "step": self.step }));
        if let Some(ms) = timeout {
            call = call.with_timeout(Duration::from_millis(ms));
        }
        self.tick_clock();
        let result = self.session.request(self.now, call);
        let out = self.drain();
        match result {
            Ok(id) => {
                if self.checks.requests {
                    ensure!(self, was_open, "request {id:?} accepted while not open");
                    ensure!(
                        self,
                        self.requests.iter().all(|old| *old < id.0),
                        "request id {id:?} reused or not increasing"
                    );
                }
                let timeout = timeout.map_or(self.config.request_timeout(), Duration::from_millis);
                self.requests.insert(id.0);
                self.invariants.request_accepted(id, self.latest + timeout);
            }
            Err(error) => {
                if self.checks.requests {
                    ensure!(self, out.is_empty(), "a refused request produced {out:?}");
                    ensure!(
                        self,
                        !was_open || was_stopped,
                        "request refused ({error:?}) while open"
                    );
                }
                if self.checks.stop {
                    let expected = if was_stopped {
                        RequestError::Stopped
                    } else {
                        RequestError::NotReady
                    };
                    ensure!(self, error == expected, "request refused with {error:?}");
                }
            }
        }
        self.finish(out)
    }

    pub(crate) fn subscription(&mut self, channel: usize, want: bool) -> Result<(), TestCaseError> {
        let was_stopped = self.invariants.stopped();
        self.tick_clock();
        let result = if want {
            self.session.subscribe(self.now, CHANNELS[channel])
        } else {
            self.session.unsubscribe(self.now, CHANNELS[channel])
        };
        let out = self.drain();
        if self.checks.stop && was_stopped {
            ensure!(
                self,
                result == Err(SubscribeError::Stopped),
                "(un)subscribe after stop returned {result:?}"
            );
        }
        self.finish(out)
    }

    pub(crate) fn stop(&mut self) -> Result<(), TestCaseError> {
        let was_stopped = self.invariants.stopped();
        let current = self.session.current_transport();
        self.tick_clock();
        self.session.stop(self.now);
        let out = self.drain();
        if self.checks.stop && !was_stopped {
            let closes: Vec<TransportId> = out
                .iter()
                .filter_map(|o| match o {
                    Output::CloseTransport { id, .. } => Some(*id),
                    _ => None,
                })
                .collect();
            let expected: Vec<TransportId> = current.into_iter().collect();
            ensure!(
                self,
                closes == expected,
                "stop closed {closes:?}, the current transport was {current:?}: {out:?}"
            );
            ensure!(
                self,
                matches!(out.last(), Some(Output::Event(Event::Stopped))),
                "stop did not end with Stopped: {out:?}"
            );
            for output in &out[..out.len() - 1] {
                let allowed = matches!(
                    output,
                    Output::CloseTransport { .. }
                        | Output::Event(
                            Event::Response {
                                outcome: RequestOutcome::ConnectionClosed,
                                ..
                            } | Event::ReadinessChanged { .. }
                                | Event::Disconnected { .. }
                        )
                );
                ensure!(self, allowed, "stop emitted {output:?}: {out:?}");
            }
        }
        self.finish(out)
    }

    /// Run `handle_timeout` at `at`, then keep running it at the same instant
    /// while something is still due, as a driver whose timer fired does.
    pub(crate) fn timeout_at(&mut self, at: Instant) -> Result<(), TestCaseError> {
        self.now = at;
        self.timeout_once()?;
        let mut spins = 0;
        while let Some(due) = self.session.poll_timeout() {
            if due > self.latest {
                break;
            }
            spins += 1;
            if spins > SPIN_LIMIT {
                ensure!(
                    self,
                    !self.checks.time,
                    "handle_timeout({:?}) ran {spins} times and {due:?} is still due",
                    self.latest
                );
                break;
            }
            self.timeout_once()?;
        }
        Ok(())
    }

    fn timeout_once(&mut self) -> Result<(), TestCaseError> {
        self.tick_clock();
        self.session.handle_timeout(self.now);
        let out = self.drain();
        self.finish(out)?;
        let checked = self.invariants.after_timeout(self.latest, &self.session);
        checked.map_err(|violation| self.fail(violation.to_string()))
    }

    /// Jump from timeout to timeout with no other input. Returns whether the
    /// session went quiet (`poll_timeout() == None`) within `limit` jumps.
    pub(crate) fn jump(&mut self, limit: usize) -> Result<bool, TestCaseError> {
        for _ in 0..limit {
            let Some(at) = self.session.poll_timeout() else {
                return Ok(true);
            };
            self.step += 1;
            self.op = format!("jump to {at:?}");
            let before = self.latest;
            self.timeout_at(at.max(self.now))?;
            if self.checks.time {
                let next = self.session.poll_timeout();
                ensure!(
                    self,
                    next.map_or(true, |next| next > self.latest) || self.latest > before,
                    "a jump to {at:?} made no progress (next {next:?})"
                );
            }
        }
        Ok(self.session.poll_timeout().is_none())
    }

    /// Check the outputs of one call and the session after it with the one
    /// checker (anything after `Stopped` included).
    pub(crate) fn finish(&mut self, out: Vec<Output>) -> Result<(), TestCaseError> {
        let checked = self.invariants.batch(self.latest, &self.session, &out);
        checked.map_err(|violation| self.fail(violation.to_string()))
    }
}
