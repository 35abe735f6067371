//! The model-light driver: what it records of a run, and how it applies an op.

use std::collections::BTreeSet;
use std::time::Duration;

use belay_proto::testing::invariants::{ClientChecks, ClientInvariants};
use belay_proto::{Config, Input, Instant, Session};
use proptest::test_runner::TestCaseError;

use super::ops::{Msg, Op, Setup};

/// Which invariants a run checks.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Checks {
    pub(crate) transports: bool,
    pub(crate) requests: bool,
    pub(crate) stale: bool,
    pub(crate) readiness: bool,
    pub(crate) delays: bool,
    pub(crate) stop: bool,
    pub(crate) time: bool,
    pub(crate) streams: bool,
}

impl Checks {
    pub(crate) fn all() -> Self {
        Checks {
            transports: true,
            requests: true,
            stale: true,
            readiness: true,
            delays: true,
            stop: true,
            time: true,
            streams: true,
        }
    }

    /// The one checker's groups these turn on (`stale` is the driver's own).
    fn checker(self) -> ClientChecks {
        let mut checks = ClientChecks::none();
        checks.transports = self.transports;
        checks.requests = self.requests;
        checks.readiness = self.readiness;
        checks.delays = self.delays;
        checks.stop = self.stop;
        checks.time = self.time;
        checks.streams = self.streams;
        checks
    }
}

pub(crate) struct Driver {
    pub(crate) session: Session,
    pub(crate) config: Config,
    pub(crate) checks: Checks,
    /// The clock the driver passes (it may go back).
    pub(crate) now: Instant,
    /// The latest `now` the session has seen: its own clock.
    pub(crate) latest: Instant,
    pub(crate) step: usize,
    pub(crate) op: String,
    /// The one checker (`belay_proto::testing::invariants`): the outputs
    /// of every call and the session's state after it, against what the
    /// driver reported (requests accepted, transports ended, advice fed).
    pub(crate) invariants: ClientInvariants,
    /// Every request id the session returned.
    pub(crate) requests: BTreeSet<u64>,
}

impl Driver {
    pub(crate) fn new(setup: &Setup, checks: Checks) -> Self {
        let config = setup.config();
        Driver {
            invariants: ClientInvariants::new(&config, checks.checker()),
            session: Session::new(config.clone(), Instant::ZERO, setup.seed),
            config,
            checks,
            now: Instant::ZERO,
            latest: Instant::ZERO,
            step: 0,
            op: String::from("setup"),
            requests: BTreeSet::new(),
        }
    }

    pub(crate) fn fail(&self, what: String) -> TestCaseError {
        TestCaseError::fail(format!(
            "step {} `{}` at {:?} (state {:?}, current {:?}): {}",
            self.step,
            self.op,
            self.latest,
            self.session.state(),
            self.session.current_transport(),
            what
        ))
    }

    pub(crate) fn run(&mut self, ops: &[Op]) -> Result<(), TestCaseError> {
        for op in ops {
            self.apply(op)?;
        }
        Ok(())
    }

    pub(crate) fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        self.step += 1;
        self.op = format!("{op:?}");
        match op {
            Op::Input(target, fact) => {
                let id = self.resolve(*target);
                if self.session.current_transport() == Some(id) {
                    if let Some(deploy) = fact.advice() {
                        self.invariants.advice_fed(deploy);
                    }
                }
                let input = self.build(id, fact);
                self.feed(input)
            }
            Op::Establish(ping_interval_ms, pacing) => {
                let Some(id) = self.session.current_transport() else {
                    return Ok(());
                };
                self.feed(Input::TransportOpened(id))?;
                let welcome = self.message(&Msg::Welcome {
                    mismatch: false,
                    ping_interval_ms: *ping_interval_ms,
                    pacing: *pacing,
                    expires_in_ms: None,
                });
                self.feed(Input::Message(id, welcome))
            }
            Op::ConfirmAll => {
                let Some(id) = self.session.current_transport() else {
                    return Ok(());
                };
                for channel in 0..3 {
                    let confirm = self.message(&Msg::Subscribed {
                        channel,
                        epoch: 0,
                        offset: 0,
                        recovered: true,
                    });
                    self.feed(Input::Message(id, confirm))?;
                }
                Ok(())
            }
            Op::Network(online) => self.feed(Input::Network { online: *online }),
            Op::Start => self.restart(false),
            Op::ReconnectNow => self.restart(true),
            Op::Request(timeout) => self.request(*timeout),
            Op::Subscribe(channel) => self.subscription(*channel, true),
            Op::Unsubscribe(channel) => self.subscription(*channel, false),
            Op::Stop => self.stop(),
            Op::Advance(ms) => self.timeout_at(self.now + Duration::from_millis(*ms)),
            Op::ToPollTimeout => match self.session.poll_timeout() {
                Some(at) => self.timeout_at(at),
                None => self.timeout_at(self.now + Duration::from_secs(1)),
            },
            Op::Suspend(ms) => self.timeout_at(self.now + Duration::from_millis(*ms)),
            Op::Earlier(ms) => self.timeout_at(self.now - Duration::from_millis(*ms)),
        }
    }
}
