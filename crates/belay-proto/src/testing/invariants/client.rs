//! [`ClientInvariants`]: the client `Session`'s invariants, checked on
//! every batch of outputs and on its state after it.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::backoff::MAX_HINT_DELAY;
use crate::message::{ClientMessage, StreamPosition};
use crate::time::Instant;
use crate::transport::TransportId;
use crate::{Config, Event, Output, Readiness, RequestId, RetryPlan, Session};

use super::requests::Requests;
use super::streams::Streams;
use super::{ClientChecks, Invariant, Violation};

/// The client's invariants, for any driver of a [`Session`]: the driver
/// reports what it did (requests accepted, subscribes, transports it told
/// the session ended, advice it fed) and hands over every batch of outputs
/// with [`batch`](Self::batch); each check returns the first
/// [`Violation`].
///
/// 1. At most one live transport; ids fresh and increasing; `Transmit` and
///    `CloseTransport` only on the live one; the live one is the session's.
/// 2. Every request settles exactly once, `Timeout` not before its
///    deadline, all by [`finish`](Self::finish) and on stop; the unsettled
///    ones are the session's `requests_in_flight`, and `poll_timeout` is no
///    later than the earliest deadline.
/// 3. No publication delivered twice or skipped without an announcement.
/// 4. `poll_timeout` never in the past after `handle_timeout`.
/// 5. Nothing after `Stopped`; stopped means no timer, transport,
///    readiness or request.
/// 6. Readiness: events never repeat, `ready` is the aggregate, the levels
///    nest, the announced readiness is `readiness()`, and the levels match
///    the connection state.
/// 7. Reconnect delays within the backoff's maximum (or the advice's, or
///    twice that after a deploy).
#[derive(Debug)]
pub struct ClientInvariants {
    checks: ClientChecks,
    max_delay: Duration,
    opened: Vec<TransportId>,
    live: BTreeSet<TransportId>,
    requests: Requests,
    streams: Streams,
    announced: Readiness,
    advice_on_current: bool,
    deploy_seen: bool,
    stopped: bool,
}

impl ClientInvariants {
    /// A checker for a session made with `config`, checking `checks`.
    pub fn new(config: &Config, checks: ClientChecks) -> Self {
        ClientInvariants {
            checks,
            max_delay: config.backoff().max_delay(),
            opened: Vec::new(),
            live: BTreeSet::new(),
            requests: Requests::default(),
            streams: Streams::default(),
            announced: Readiness::default(),
            advice_on_current: false,
            deploy_seen: false,
            stopped: false,
        }
    }

    // ----- what the driver did -----

    /// `request` returned `id`; it must settle by `deadline`.
    pub fn request_accepted(&mut self, id: RequestId, deadline: Instant) {
        self.requests.accepted(id, deadline);
    }

    /// `subscribe(channel)` returned `Ok`.
    pub fn subscribe_accepted(&mut self, channel: &str) -> Result<(), Violation> {
        self.streams
            .wanted(channel)
            .map_err(|e| Violation::new(Invariant::Streams, e))
    }

    /// `unsubscribe(channel)` returned `Ok`.
    pub fn unsubscribe_accepted(&mut self, channel: &str) -> Result<(), Violation> {
        self.streams
            .unwanted(channel)
            .map_err(|e| Violation::new(Invariant::Streams, e))
    }

    /// The driver reported `id` failed or closed to the session.
    pub fn transport_ended(&mut self, id: TransportId) {
        self.live.remove(&id);
    }

    /// Reconnect advice (`deploy`: a deploy's) was fed on the current
    /// transport: later delays may be longer.
    pub fn advice_fed(&mut self, deploy: bool) {
        self.advice_on_current = true;
        self.deploy_seen |= deploy;
    }

    // ----- getters -----

    /// Every transport the session asked to open, in order.
    pub fn opened(&self) -> &[TransportId] {
        &self.opened
    }

    /// Whether `Stopped` was emitted.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Requests known (accepted or seen on the wire) and not settled.
    pub fn unsettled(&self) -> Vec<RequestId> {
        self.requests.unsettled()
    }

    /// Whether `channel` is wanted, as far as the checker knows.
    pub fn is_wanted(&self, channel: &str) -> bool {
        self.streams.is_wanted(channel)
    }

    // ----- checks -----

    /// Check one batch of outputs (everything `poll_output` gave after one
    /// call at `now`), then the session's state.
    pub fn batch(
        &mut self,
        now: Instant,
        session: &Session,
        outputs: &[Output],
    ) -> Result<(), Violation> {
        for output in outputs {
            if self.checks.stop && self.stopped {
                let what = format!("{output:?} after Event::Stopped");
                return Err(Violation::new(Invariant::NothingAfterStop, what));
            }
            self.output(now, session, output)?;
        }
        self.state(session)
    }

    /// After `handle_timeout(at)` (and its batch): every request whose
    /// deadline has come has settled, and the next deadline is not in the
    /// past.
    pub fn after_timeout(&self, at: Instant, session: &Session) -> Result<(), Violation> {
        if self.checks.requests {
            self.requests.due_by(at)?;
        }
        match session.poll_timeout() {
            Some(next) if self.checks.time && next < at => Err(Violation::new(
                Invariant::Time,
                format!("after handle_timeout({at:?}) poll_timeout is {next:?}, in the past"),
            )),
            _ => Ok(()),
        }
    }

    /// The end of a run, once time has passed every deadline: every request
    /// has settled.
    pub fn finish(&self, session: &Session) -> Result<(), Violation> {
        match self.checks.requests {
            true => self.requests.all_settled(session),
            false => Ok(()),
        }
    }

    fn output(
        &mut self,
        now: Instant,
        session: &Session,
        output: &Output,
    ) -> Result<(), Violation> {
        let transports = |what: String| Violation::new(Invariant::OneTransport, what);
        match output {
            Output::OpenTransport { id, .. } => {
                if self.checks.transports && !self.live.is_empty() {
                    let what = format!("OpenTransport {id} while {:?} is live", self.live);
                    return Err(transports(what));
                }
                if let Some(last) = self.opened.last().filter(|l| **l >= *id) {
                    if self.checks.transports {
                        let what = format!("OpenTransport {id} after {last}: ids must be fresh");
                        return Err(transports(what));
                    }
                }
                self.opened.push(*id);
                self.live.insert(*id);
                self.advice_on_current = false;
            }
            Output::CloseTransport { id, .. } => {
                if !self.live.remove(id) && self.checks.transports {
                    let what = format!("CloseTransport {id}, which is not live ({:?})", self.live);
                    return Err(transports(what));
                }
            }
            Output::Transmit { id, message } => {
                if self.checks.transports && !self.live.contains(id) {
                    let what = format!("Transmit {message:?} on {id}, not live ({:?})", self.live);
                    return Err(transports(what));
                }
                if let ClientMessage::Request(request) = message {
                    // A driver that does not report requests (Pair) learns
                    // them here, without their deadline.
                    self.requests.learned(request.id);
                }
            }
            Output::Event(event) => self.event(now, session, event)?,
        }
        Ok(())
    }

    fn event(&mut self, now: Instant, session: &Session, event: &Event) -> Result<(), Violation> {
        let streams = |what: String| Violation::new(Invariant::Streams, what);
        match event {
            Event::ReadinessChanged { readiness, ready } => {
                if self.checks.readiness {
                    let readiness_violation = |what| Violation::new(Invariant::Readiness, what);
                    if *readiness == self.announced {
                        let what = format!("ReadinessChanged repeats {readiness:?}");
                        return Err(readiness_violation(what));
                    }
                    if *ready != readiness.ready() {
                        let what = format!("ReadinessChanged ready = {ready} for {readiness:?}");
                        return Err(readiness_violation(what));
                    }
                }
                self.announced = *readiness;
            }
            Event::Response { id, outcome } => {
                let settled = self.requests.settle(now, *id, outcome);
                if self.checks.requests {
                    settled?;
                }
            }
            Event::Disconnected { retry, .. } | Event::ConnectFailed { retry, .. } => {
                if let (RetryPlan::After { delay }, true) = (retry, self.checks.delays) {
                    let mut bound = self.max_delay;
                    if self.advice_on_current {
                        bound = bound.max(MAX_HINT_DELAY);
                    }
                    if self.deploy_seen {
                        bound = bound.saturating_mul(2);
                    }
                    if *delay > bound {
                        let what = format!(
                            "{event:?}: delay {delay:?} exceeds {bound:?} (advice {}, deploy {})",
                            self.advice_on_current, self.deploy_seen
                        );
                        return Err(Violation::new(Invariant::Delays, what));
                    }
                }
            }
            Event::Stopped => self.stopped = true,
            Event::Subscribed { channel, recovered } if self.checks.streams => {
                let result = self.streams.subscribed(channel, *recovered, session);
                result.map_err(streams)?;
            }
            Event::RecoveryFailed { channel } if self.checks.streams => {
                self.streams
                    .recovery_failed(channel, session)
                    .map_err(streams)?;
            }
            Event::Publication(p) if self.checks.streams => {
                let position = StreamPosition {
                    epoch: p.epoch.clone(),
                    offset: p.offset,
                };
                let result = self.streams.deliver(&p.channel, position, session);
                result.map_err(streams)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// The session's state after a batch.
    fn state(&mut self, session: &Session) -> Result<(), Violation> {
        if self.checks.streams {
            let result = self.streams.end_of_batch(session);
            result.map_err(|e| Violation::new(Invariant::Streams, e))?;
        }
        let state = session.state();
        let current = session.current_transport();
        if self.checks.transports {
            super::state::transports(&self.live, state, current)?;
        }
        if self.checks.requests {
            super::state::requests(&self.requests.open(), session, self.stopped)?;
        }
        if self.checks.readiness {
            super::state::readiness(self.announced, session)?;
        }
        if self.checks.stop {
            super::state::stopped(self.stopped, session)?;
        }
        Ok(())
    }
}
