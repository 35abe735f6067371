//! Session properties under random interleavings, in virtual time.
//!
//! The generator mixes transport facts for the current transport and for
//! stale (replaced, or never opened) ones, network changes, commands and time
//! moves (small steps, jumps to `poll_timeout`, suspends, and an earlier
//! `now` now and then). The driver is model-light: it does not predict what
//! the session should do; it records what the session asked for (transports
//! opened and closed, requests accepted, readiness announced, delays
//! announced) and what it fed in, and checks after every step that the
//! session's answers stay consistent with that record.
//!
//! Each property is its own test and only checks its own invariants, so a
//! failure names the property that broke. Failing sequences shrink to a
//! minimal op list; plain `#[test]` reproducers at the end pin every bug found.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use belay_proto::backoff::{Backoff, BackoffPolicy, PacingSlots, RetryWindow, MAX_HINT_DELAY};
use belay_proto::message::{
    encode_server, ErrorBody, Pacing, Publication, ReconnectAdvice, Reply, Response, ServerMessage,
    Subscribed, Unsubscribed, Welcome, MAX_FRAME_LEN, PROTOCOL_VERSION,
};
use belay_proto::rng::{RandomSource, RecordedDraws, SplitMix64};
use belay_proto::{
    Call, CloseCode, CloseInfo, Config, ConnectionState, Event, Failure, Input, Instant, Output,
    Readiness, RequestError, RequestOutcome, RetryPlan, Session, SessionStats, SubscribeError,
    TransportId,
};
use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, RngSeed, TestCaseError, TestRunner};
use serde_json::json;

// ---------------------------------------------------------------------------
// Configuration of the runs
// ---------------------------------------------------------------------------

/// At least 1,000 cases (more if `PROPTEST_CASES` asks for more), a fixed
/// seed and the XorShift generator unless `PROPTEST_RNG_SEED` /
/// `PROPTEST_RNG_ALGORITHM` say otherwise, and no regression files.
fn proptest_config() -> ProptestConfig {
    let base = ProptestConfig::default();
    let rng_seed = match base.rng_seed {
        RngSeed::Random => RngSeed::Fixed(0xBE1A_7000),
        seed => seed,
    };
    // ChaCha (the default) dominates the run time in debug builds.
    let rng_algorithm = match std::env::var_os("PROPTEST_RNG_ALGORITHM") {
        Some(_) => base.rng_algorithm,
        None => RngAlgorithm::XorShift,
    };
    ProptestConfig {
        cases: base.cases.max(1000),
        failure_persistence: None,
        rng_seed,
        rng_algorithm,
        ..base
    }
}

/// Handle-timeout calls at one instant before the session must have nothing
/// left due at that instant (a zero-delay reconnect legitimately takes two).
const SPIN_LIMIT: usize = 16;

/// Jumps to `poll_timeout` in the final phase of the time property.
const MAX_JUMPS: usize = 10_000;

/// Jumps without `max_attempts`, where dialing legitimately never ends.
const UNBOUNDED_JUMPS: usize = 300;

const CHANNELS: [&str; 4] = ["a", "b", "c", "never-subscribed"];
const EPOCHS: [&str; 2] = ["e1", "e2"];
const UNSUB_CODES: [&str; 4] = ["forbidden", "unavailable", "not_found", "moved"];
const ADVICE_REASONS: [&str; 4] = ["deploy", "restart", "overload", "maintenance"];
const CLOSE_CODES: [u16; 10] = [1000, 1001, 1006, 1008, 1012, 1013, 4000, 4001, 4003, 4029];
const MALFORMED: [&str; 9] = [
    "",
    "not json",
    "[1,2,3]",
    "{}",
    r#"{"type":7}"#,
    r#"{"type":"welcome"}"#,
    r#"{"type":"response","id":"seven"}"#,
    r#"{"type":"publication","channel":"a"}"#,
    r#"{"type":"connect","protocol":1}"#,
];

// ---------------------------------------------------------------------------
// What the generator produces
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Setup {
    policy: usize,
    max_attempts: Option<u32>,
    resubscribe: usize,
    seed: u64,
    start_at_once: bool,
    reset_after_ms: u64,
    connect_timeout_ms: u64,
    probe_interval_ms: u64,
    probe_timeout_ms: u64,
    request_timeout_ms: u64,
    subscribe_timeout_ms: u64,
    online_delay_ms: u64,
}

impl Setup {
    fn config(&self) -> Config {
        let policies = BackoffPolicy::all_reference();
        let ms = Duration::from_millis;
        let mut config = Config::default();
        config
            .set_backoff(policies[self.policy].clone())
            .set_max_attempts(self.max_attempts)
            .set_resubscribe_backoff(policies[self.resubscribe].clone())
            .set_reset_after(ms(self.reset_after_ms))
            .set_connect_timeout(ms(self.connect_timeout_ms))
            .set_probe_interval(ms(self.probe_interval_ms))
            .set_probe_timeout(ms(self.probe_timeout_ms))
            .set_request_timeout(ms(self.request_timeout_ms))
            .set_subscribe_timeout(ms(self.subscribe_timeout_ms))
            .set_online_delay(ms(self.online_delay_ms));
        config
    }
}

/// Which transport an input names.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// The current transport (or, if there is none, the last one opened).
    Current,
    /// One of the transports opened before that is not current (index mod count).
    Old(usize),
    /// An id the session never opened: 0 = `u64::MAX`, k = last opened + k.
    Future(u8),
}

#[derive(Debug, Clone, Copy)]
enum FailureKind {
    Network,
    Rejected(u16),
    InvalidConfig,
}

/// A request id in a `response`: one still in flight, one the session
/// handed out (settled or not), both as index mod count, or any number.
#[derive(Debug, Clone, Copy)]
enum ReqRef {
    InFlight(usize),
    Issued(usize),
    Bogus(u64),
}

#[derive(Debug, Clone)]
enum Msg {
    Welcome {
        /// Another protocol version than ours.
        mismatch: bool,
        ping_interval_ms: Option<u64>,
        pacing: Option<(u64, u64)>,
    },
    Ping,
    Pong,
    Response {
        request: ReqRef,
        ok: bool,
    },
    Subscribed {
        channel: usize,
        epoch: usize,
        offset: u64,
        recovered: bool,
    },
    Unsubscribed {
        channel: usize,
        code: usize,
    },
    /// A publication at the channel's recovery position + `step` (in its
    /// epoch unless `other_epoch`), or at `step` if it has no position.
    Publication {
        channel: usize,
        other_epoch: bool,
        step: i8,
    },
    Reconnect {
        reason: usize,
        min_ms: u64,
        max_ms: u64,
    },
    Error,
}

#[derive(Debug, Clone)]
enum Fact {
    Opened,
    Failed(FailureKind),
    Closed(Option<u16>),
    /// An already decoded message.
    Message(Msg),
    /// The same message as a JSON text frame.
    Frame(Msg),
    /// A frame the codec rejects (index into `MALFORMED`; past its end: too large).
    Malformed(usize),
    /// A frame with a `type` from a newer server.
    UnknownType,
}

impl Fact {
    /// `Some(is_deploy)` if this fact carries reconnect advice.
    fn advice(&self) -> Option<bool> {
        match self {
            Fact::Message(Msg::Reconnect { reason, .. })
            | Fact::Frame(Msg::Reconnect { reason, .. }) => {
                Some(ADVICE_REASONS[*reason] == "deploy")
            }
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Input(Target, Fact),
    /// `TransportOpened` then `welcome` (ping interval, pacing) on the current transport.
    Establish(Option<u64>, Option<(u64, u64)>),
    /// `subscribed` for every channel on the current transport.
    ConfirmAll,
    Network(bool),
    Start,
    ReconnectNow,
    Request(Option<u64>),
    Subscribe(usize),
    Unsubscribe(usize),
    Stop,
    /// Move the clock forward by this many ms and run `handle_timeout`.
    Advance(u64),
    /// Jump to `poll_timeout` (even if it lies before the latest `now`).
    ToPollTimeout,
    /// A long jump (ms), as after a suspend.
    Suspend(u64),
    /// Move the driver's clock back by this many ms and run `handle_timeout`.
    Earlier(u64),
}

// ---------------------------------------------------------------------------
// Strategies
// ---------------------------------------------------------------------------

fn short_ms() -> impl Strategy<Value = u64> {
    prop_oneof![1u64..=20, 20u64..=2_000, 2_000u64..=15_000]
}

fn setup() -> impl Strategy<Value = Setup> {
    let policies = BackoffPolicy::all_reference().len();
    (
        (
            0..policies,
            prop_oneof![Just(None), (1u32..=10).prop_map(Some)],
            0..policies,
            any::<u64>(),
            prop::bool::weighted(0.9),
        ),
        (
            short_ms(),
            short_ms(),
            short_ms(),
            short_ms(),
            short_ms(),
            short_ms(),
            0u64..=2_000,
        ),
    )
        .prop_map(
            |(
                (policy, max_attempts, resubscribe, seed, start_at_once),
                (
                    reset_after_ms,
                    connect_timeout_ms,
                    probe_interval_ms,
                    probe_timeout_ms,
                    request_timeout_ms,
                    subscribe_timeout_ms,
                    online_delay_ms,
                ),
            )| Setup {
                policy,
                max_attempts,
                resubscribe,
                seed,
                start_at_once,
                reset_after_ms,
                connect_timeout_ms,
                probe_interval_ms,
                probe_timeout_ms,
                request_timeout_ms,
                subscribe_timeout_ms,
                online_delay_ms,
            },
        )
}

fn advice_ms() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..5_000, 0u64..400_000]
}

fn msg() -> impl Strategy<Value = Msg> {
    prop_oneof![
        3 => (
            prop::bool::weighted(0.05),
            proptest::option::of(prop_oneof![0u64..100, 100u64..60_000]),
            proptest::option::of((0u64..400_000, 0u64..400_000)),
        )
            .prop_map(|(mismatch, ping_interval_ms, pacing)| Msg::Welcome {
                mismatch,
                ping_interval_ms,
                pacing,
            }),
        2 => Just(Msg::Ping),
        2 => Just(Msg::Pong),
        10 => (
            prop_oneof![
                4 => any::<usize>().prop_map(ReqRef::InFlight),
                2 => any::<usize>().prop_map(ReqRef::Issued),
                1 => (0u64..1_000).prop_map(ReqRef::Bogus),
            ],
            any::<bool>(),
        )
            .prop_map(|(request, ok)| Msg::Response { request, ok }),
        5 => (0..CHANNELS.len(), 0..EPOCHS.len(), 0u64..6, any::<bool>()).prop_map(
            |(channel, epoch, offset, recovered)| Msg::Subscribed { channel, epoch, offset, recovered }
        ),
        2 => (0..CHANNELS.len(), 0..UNSUB_CODES.len())
            .prop_map(|(channel, code)| Msg::Unsubscribed { channel, code }),
        6 => (0..CHANNELS.len(), prop::bool::weighted(0.1), prop_oneof![4 => Just(1i8), 1 => -1i8..=3])
            .prop_map(|(channel, other_epoch, step)| Msg::Publication { channel, other_epoch, step }),
        2 => (0..ADVICE_REASONS.len(), advice_ms(), advice_ms())
            .prop_map(|(reason, min_ms, max_ms)| Msg::Reconnect { reason, min_ms, max_ms }),
        1 => Just(Msg::Error),
    ]
}

fn fact() -> impl Strategy<Value = Fact> {
    prop_oneof![
        3 => Just(Fact::Opened),
        1 => prop_oneof![
            Just(FailureKind::Network),
            proptest::sample::select(vec![401u16, 403, 500, 503]).prop_map(FailureKind::Rejected),
            Just(FailureKind::InvalidConfig),
        ]
        .prop_map(Fact::Failed),
        2 => proptest::option::of(proptest::sample::select(CLOSE_CODES.to_vec())).prop_map(Fact::Closed),
        16 => msg().prop_map(Fact::Message),
        3 => msg().prop_map(Fact::Frame),
        1 => (0..=MALFORMED.len()).prop_map(Fact::Malformed),
        1 => Just(Fact::UnknownType),
    ]
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        3 => any::<usize>().prop_map(Target::Old),
        1 => (0u8..4).prop_map(Target::Future),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    // Stop ends the interesting part of a run: keep it rare.
    prop_oneof![250 => op_but_stop(), 1 => Just(Op::Stop)]
}

fn op_but_stop() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => fact().prop_map(|f| Op::Input(Target::Current, f)),
        10 => (target(), fact()).prop_map(|(t, f)| Op::Input(t, f)),
        6 => (
            proptest::option::of(100u64..60_000),
            proptest::option::of((1u64..400_000, 0u64..400_000)),
        )
            .prop_map(|(ping, pacing)| Op::Establish(ping, pacing)),
        4 => Just(Op::ConfirmAll),
        4 => prop::bool::weighted(0.6).prop_map(Op::Network),
        4 => Just(Op::Start),
        3 => Just(Op::ReconnectNow),
        10 => proptest::option::of(prop_oneof![0u64..50, 0u64..20_000]).prop_map(Op::Request),
        6 => (0..3usize).prop_map(Op::Subscribe),
        2 => (0..3usize).prop_map(Op::Unsubscribe),
        12 => (0u64..3_000).prop_map(Op::Advance),
        12 => Just(Op::ToPollTimeout),
        2 => (60_000u64..7_200_000).prop_map(Op::Suspend),
        2 => (1u64..5_000).prop_map(Op::Earlier),
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), 1..150)
}

// ---------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------

/// Which invariants a run checks.
#[derive(Debug, Clone, Copy, Default)]
struct Checks {
    transports: bool,
    requests: bool,
    stale: bool,
    readiness: bool,
    delays: bool,
    stop: bool,
    time: bool,
}

impl Checks {
    fn all() -> Self {
        Checks {
            transports: true,
            requests: true,
            stale: true,
            readiness: true,
            delays: true,
            stop: true,
            time: true,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    deadline: Instant,
    settled: bool,
}

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

macro_rules! ensure {
    ($driver:expr, $cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err($driver.fail(format!($($fmt)+)));
        }
    };
}

struct Driver {
    session: Session,
    config: Config,
    checks: Checks,
    /// The clock the driver passes (it may go back).
    now: Instant,
    /// The latest `now` the session has seen: its own clock.
    latest: Instant,
    step: usize,
    op: String,
    /// Every transport the session asked to open, in order.
    opened: Vec<TransportId>,
    /// Opened and not ended (closed by the session, or reported ended while current).
    live: BTreeSet<TransportId>,
    /// Every request the session accepted.
    requests: BTreeMap<u64, Pending>,
    /// The readiness the last `ReadinessChanged` announced.
    announced: Readiness,
    /// Reconnect advice was fed on the current (or last) transport.
    advice_on_current: bool,
    /// Deploy advice was fed on a current transport at some point.
    deploy_seen: bool,
    /// `Event::Stopped` was emitted.
    stopped: bool,
}

fn transport_of(input: &Input) -> Option<TransportId> {
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
    fn new(setup: &Setup, checks: Checks) -> Self {
        let config = setup.config();
        Driver {
            session: Session::new(config.clone(), Instant::ZERO, setup.seed),
            config,
            checks,
            now: Instant::ZERO,
            latest: Instant::ZERO,
            step: 0,
            op: String::from("setup"),
            opened: Vec::new(),
            live: BTreeSet::new(),
            requests: BTreeMap::new(),
            announced: Readiness::default(),
            advice_on_current: false,
            deploy_seen: false,
            stopped: false,
        }
    }

    fn fail(&self, what: String) -> TestCaseError {
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

    fn run(&mut self, ops: &[Op]) -> Result<(), TestCaseError> {
        for op in ops {
            self.apply(op)?;
        }
        Ok(())
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        self.step += 1;
        self.op = format!("{op:?}");
        match op {
            Op::Input(target, fact) => {
                let id = self.resolve(*target);
                if self.session.current_transport() == Some(id) {
                    if let Some(deploy) = fact.advice() {
                        self.advice_on_current = true;
                        self.deploy_seen |= deploy;
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

    // ----- building inputs -----

    fn resolve(&self, target: Target) -> TransportId {
        let current = self.session.current_transport();
        match target {
            Target::Current => current
                .or_else(|| self.opened.last().copied())
                .unwrap_or(TransportId(1)),
            Target::Old(k) => {
                let old: Vec<TransportId> = self
                    .opened
                    .iter()
                    .copied()
                    .filter(|id| Some(*id) != current)
                    .collect();
                if old.is_empty() {
                    TransportId(0)
                } else {
                    old[k % old.len()]
                }
            }
            Target::Future(0) => TransportId(u64::MAX),
            Target::Future(k) => {
                let last = self.opened.last().map_or(0, |id| id.0);
                TransportId(last + u64::from(k))
            }
        }
    }

    fn message(&self, msg: &Msg) -> ServerMessage {
        match msg {
            Msg::Welcome {
                mismatch,
                ping_interval_ms,
                pacing,
            } => ServerMessage::Welcome(Welcome {
                session: format!("s-{}", self.step),
                protocol: if *mismatch {
                    PROTOCOL_VERSION + 1
                } else {
                    PROTOCOL_VERSION
                },
                ping_interval_ms: *ping_interval_ms,
                pacing: pacing.map(|(period_ms, phase_ms)| Pacing {
                    period_ms,
                    phase_ms,
                }),
            }),
            Msg::Ping => ServerMessage::Ping,
            Msg::Pong => ServerMessage::Pong,
            Msg::Response { request, ok } => {
                let pick = |ids: Vec<u64>, k: usize| match ids.len() {
                    0 => 1,
                    n => ids[k % n],
                };
                let id = match request {
                    ReqRef::InFlight(k) => pick(
                        self.requests
                            .iter()
                            .filter(|(_, p)| !p.settled)
                            .map(|(id, _)| *id)
                            .collect(),
                        *k,
                    ),
                    ReqRef::Issued(k) => pick(self.requests.keys().copied().collect(), *k),
                    ReqRef::Bogus(id) => *id,
                };
                let reply = if *ok {
                    Reply::Result(json!({ "echo": id }).into())
                } else {
                    Reply::Error(ErrorBody::new("boom", "it broke"))
                };
                ServerMessage::Response(Response { id, reply })
            }
            Msg::Subscribed {
                channel,
                epoch,
                offset,
                recovered,
            } => ServerMessage::Subscribed(Subscribed {
                channel: CHANNELS[*channel].into(),
                epoch: EPOCHS[*epoch].into(),
                offset: *offset,
                recovered: *recovered,
            }),
            Msg::Unsubscribed { channel, code } => ServerMessage::Unsubscribed(Unsubscribed {
                channel: CHANNELS[*channel].into(),
                code: UNSUB_CODES[*code].into(),
                reason: String::new(),
            }),
            Msg::Publication {
                channel,
                other_epoch,
                step,
            } => {
                let name = CHANNELS[*channel];
                let (mut epoch, base) = match self.session.subscriptions().position(name) {
                    Some(position) => (position.epoch.clone(), position.offset),
                    None => (EPOCHS[0].to_owned(), 0),
                };
                if *other_epoch {
                    epoch = if epoch == EPOCHS[0] {
                        EPOCHS[1]
                    } else {
                        EPOCHS[0]
                    }
                    .to_owned();
                }
                let offset = base.saturating_add_signed(i64::from(*step));
                ServerMessage::Publication(Publication {
                    channel: name.into(),
                    epoch,
                    offset,
                    data: json!(offset).into(),
                })
            }
            Msg::Reconnect {
                reason,
                min_ms,
                max_ms,
            } => ServerMessage::Reconnect(ReconnectAdvice {
                reason: ADVICE_REASONS[*reason].into(),
                min_delay_ms: *min_ms,
                max_delay_ms: *max_ms,
                message: None,
            }),
            Msg::Error => ServerMessage::Error(ErrorBody::new("oops", "not tied to a request")),
        }
    }

    fn build(&self, id: TransportId, fact: &Fact) -> Input {
        match fact {
            Fact::Opened => Input::TransportOpened(id),
            Fact::Failed(kind) => Input::TransportFailed(
                id,
                match kind {
                    FailureKind::Network => Failure::network("reset"),
                    FailureKind::Rejected(status) => Failure::rejected(*status),
                    FailureKind::InvalidConfig => Failure::InvalidConfig {
                        detail: "bad url".into(),
                    },
                },
            ),
            Fact::Closed(code) => Input::TransportClosed(
                id,
                match code {
                    Some(code) => CloseInfo::new(CloseCode(*code), "bye"),
                    None => CloseInfo::abnormal(),
                },
            ),
            Fact::Message(msg) => Input::Message(id, self.message(msg)),
            Fact::Frame(msg) => Input::Frame(id, encode_server(&self.message(msg))),
            Fact::Malformed(k) => Input::Frame(
                id,
                MALFORMED
                    .get(*k)
                    .map_or_else(|| "x".repeat(MAX_FRAME_LEN + 1), |s| (*s).to_owned()),
            ),
            Fact::UnknownType => Input::Frame(id, r#"{"type":"hologram","x":1}"#.into()),
        }
    }

    // ----- calling the session -----

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

    fn feed(&mut self, input: Input) -> Result<(), TestCaseError> {
        let was_stopped = self.stopped;
        let id = transport_of(&input);
        let stale = id.is_some() && id != self.session.current_transport();
        let before = stale.then(|| self.snapshot());
        if !stale {
            if let Input::TransportFailed(id, _) | Input::TransportClosed(id, _) = &input {
                // The driver saw it end: the transport is gone.
                self.live.remove(id);
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
        self.finish(out, was_stopped)
    }

    fn restart(&mut self, now: bool) -> Result<(), TestCaseError> {
        let was_stopped = self.stopped;
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
        self.finish(out, was_stopped)
    }

    fn request(&mut self, timeout: Option<u64>) -> Result<(), TestCaseError> {
        let was_stopped = self.stopped;
        let was_open = self.session.state() == ConnectionState::Open;
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
                        self.requests.keys().all(|old| *old < id.0),
                        "request id {id:?} reused or not increasing"
                    );
                }
                let timeout = timeout.map_or(self.config.request_timeout(), Duration::from_millis);
                self.requests.insert(
                    id.0,
                    Pending {
                        deadline: self.latest + timeout,
                        settled: false,
                    },
                );
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
        self.finish(out, was_stopped)
    }

    fn subscription(&mut self, channel: usize, want: bool) -> Result<(), TestCaseError> {
        let was_stopped = self.stopped;
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
        self.finish(out, was_stopped)
    }

    fn stop(&mut self) -> Result<(), TestCaseError> {
        let was_stopped = self.stopped;
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
        self.finish(out, was_stopped)
    }

    /// Run `handle_timeout` at `at`, then keep running it at the same instant
    /// while something is still due, as a driver whose timer fired does.
    fn timeout_at(&mut self, at: Instant) -> Result<(), TestCaseError> {
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
        let was_stopped = self.stopped;
        self.tick_clock();
        self.session.handle_timeout(self.now);
        let out = self.drain();
        self.finish(out, was_stopped)?;
        if self.checks.requests {
            for (id, pending) in &self.requests {
                ensure!(
                    self,
                    pending.settled || pending.deadline > self.latest,
                    "request {id} (deadline {:?}) unsettled after handle_timeout at {:?}",
                    pending.deadline,
                    self.latest
                );
            }
        }
        if self.checks.time {
            let next = self.session.poll_timeout();
            ensure!(
                self,
                next.map_or(true, |next| next >= self.latest),
                "after handle_timeout({:?}) poll_timeout is {next:?}, in the past",
                self.latest
            );
        }
        Ok(())
    }

    /// Jump from timeout to timeout with no other input. Returns whether the
    /// session went quiet (`poll_timeout() == None`) within `limit` jumps.
    fn jump(&mut self, limit: usize) -> Result<bool, TestCaseError> {
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

    // ----- checking -----

    /// Process the outputs of one call, then check the invariants.
    fn finish(&mut self, out: Vec<Output>, was_stopped: bool) -> Result<(), TestCaseError> {
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
                r.protocol == (state == ConnectionState::Open),
                "protocol level {} in state {state:?}",
                r.protocol
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

fn run(setup: &Setup, ops: &[Op], checks: Checks) -> Result<Driver, TestCaseError> {
    let mut driver = Driver::new(setup, checks);
    if setup.start_at_once {
        driver.apply(&Op::Start)?;
    }
    driver.run(ops)?;
    Ok(driver)
}

// ---------------------------------------------------------------------------
// The properties
// ---------------------------------------------------------------------------

/// Run `test` on cases drawn from `strategy` with [`proptest_config`],
/// shrinking a failure to a minimal case. (The `proptest!` macro would let
/// `PROPTEST_CASES` lower the case count below 1,000.)
fn check<S>(strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S: Strategy,
    S::Value: std::fmt::Debug,
{
    let mut runner = TestRunner::new(proptest_config());
    if let Err(error) = runner.run(&strategy, test) {
        panic!("{error}\n{runner}");
    }
}

/// At most one live transport, fresh increasing ids, no open while one is
/// live, and a pending reconnect (Waiting) never coexists with a transport.
#[test]
fn at_most_one_live_transport_and_one_pending_reconnect() {
    check((setup(), ops()), |(setup, ops)| {
        let checks = Checks {
            transports: true,
            ..Checks::default()
        };
        run(&setup, &ops, checks)?;
        Ok(())
    });
}

/// Every accepted request settles exactly once, never later than the
/// first `handle_timeout` at or after its deadline, and all settle on stop.
#[test]
fn every_request_settles_no_later_than_its_deadline() {
    check((setup(), ops()), |(setup, ops)| {
        let checks = Checks {
            requests: true,
            ..Checks::default()
        };
        let mut driver = run(&setup, &ops, checks)?;
        driver.step += 1;
        driver.op = "final stop".into();
        driver.stop()?;
        prop_assert!(driver.requests.values().all(|p| p.settled));
        Ok(())
    });
}

/// An input naming a transport that is not current changes nothing
/// observable and produces no output.
#[test]
fn stale_transport_inputs_never_change_state_or_output() {
    check((setup(), ops()), |(setup, ops)| {
        let checks = Checks {
            stale: true,
            ..Checks::default()
        };
        run(&setup, &ops, checks)?;
        Ok(())
    });
}

/// `is_ready` is the conjunction of the three levels, the levels respect
/// their dependencies, and `ReadinessChanged` is edge-triggered and tracks
/// `readiness()` exactly.
#[test]
fn ready_iff_all_three_levels() {
    check((setup(), ops()), |(setup, ops)| {
        let checks = Checks {
            readiness: true,
            ..Checks::default()
        };
        run(&setup, &ops, checks)?;
        Ok(())
    });
}

/// Every announced reconnect delay stays within its policy's cap (or the
/// hint cap after advice), doubled at most once after deploy advice.
#[test]
fn no_delay_exceeds_its_policys_cap() {
    check((setup(), ops()), |(setup, ops)| {
        let checks = Checks {
            delays: true,
            ..Checks::default()
        };
        let mut driver = run(&setup, &ops, checks)?;
        driver.jump(200)?;
        Ok(())
    });
}

/// `stop` emits at most one close and events ending with `Stopped`; after
/// it nothing produces output and nothing is scheduled.
#[test]
fn nothing_but_the_final_close_after_stop() {
    let after = proptest::collection::vec(op(), 1..60);
    check((setup(), ops(), after), |(setup, before, after)| {
        let checks = Checks {
            stop: true,
            ..Checks::default()
        };
        let mut driver = run(&setup, &before, checks)?;
        driver.step += 1;
        driver.op = "Stop (forced)".into();
        driver.stop()?;
        prop_assert!(driver.stopped);
        driver.run(&after)?;
        prop_assert!(driver.jump(10)?, "poll_timeout after stop");
        Ok(())
    });
}

/// `handle_timeout(now)` leaves nothing due before `now`, a busy loop at one
/// instant ends quickly, and timeout-to-timeout jumps keep moving: with
/// `max_attempts` they end in a quiet session.
#[test]
fn time_never_goes_backwards_in_timeouts() {
    check((setup(), ops()), |(setup, ops)| {
        let checks = Checks {
            time: true,
            ..Checks::default()
        };
        let mut driver = run(&setup, &ops, checks)?;
        // An unconfirmed subscribe legitimately repeats every
        // `subscribe_timeout` (1 ms here at worst) for as long as the
        // connection lives; drop the channels so the count of jumps measures
        // the reconnect machinery.
        for channel in 0..3 {
            driver.apply(&Op::Unsubscribe(channel))?;
        }
        if setup.max_attempts.is_some() {
            prop_assert!(
                driver.jump(MAX_JUMPS)?,
                "not quiet after {} jumps",
                MAX_JUMPS
            );
        } else {
            driver.jump(UNBOUNDED_JUMPS)?;
            driver.stop()?;
            prop_assert!(driver.jump(1)?, "poll_timeout after stop");
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------
// The backoff alone
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum BackoffOp {
    /// Advance the clock (ms), then ask for a delay.
    Delay(u64),
    Reset,
    Slots(Option<(u64, u64)>),
    Advise(u64, u64),
}

fn backoff_op() -> impl Strategy<Value = BackoffOp> {
    prop_oneof![
        10 => prop_oneof![0u64..100, 0u64..1_000_000].prop_map(BackoffOp::Delay),
        1 => Just(BackoffOp::Reset),
        2 => proptest::option::of((0u64..1_000_000, 0u64..1_000_000)).prop_map(BackoffOp::Slots),
        2 => (advice_ms(), advice_ms()).prop_map(|(min, max)| BackoffOp::Advise(min, max)),
    ]
}

fn draw() -> impl Strategy<Value = f64> {
    prop_oneof![
        8 => 0.0f64..1.0,
        1 => Just(0.0),
        1 => Just(1.0 - f64::EPSILON),
        1 => Just(1.0),
        1 => Just(f64::NAN),
        1 => Just(-0.5),
        1 => Just(7.0),
    ]
}

/// For every reference policy, whatever the draws, slots, advice and
/// (forward-moving) time, `next_delay` never exceeds `max_delay()` as it
/// stood before the call.
#[test]
fn backoff_next_delay_never_exceeds_max_delay() {
    let strategy = (
        0..BackoffPolicy::all_reference().len(),
        proptest::option::of(proptest::collection::vec(draw(), 0..20)),
        any::<u64>(),
        prop_oneof![0u64..1_000_000_000, Just(u64::MAX - 10_000_000)],
        proptest::collection::vec(backoff_op(), 1..200),
    );
    check(strategy, |(policy, recorded, seed, start, ops)| {
        let policy = BackoffPolicy::all_reference()[policy].clone();
        let mut backoff = Backoff::new(policy.clone());
        let mut rng: Box<dyn RandomSource> = match recorded {
            Some(draws) => Box::new(RecordedDraws::new(draws)),
            None => Box::new(SplitMix64::new(seed)),
        };
        let mut now = Instant::from_micros(start);
        for op in &ops {
            match op {
                BackoffOp::Delay(ms) => {
                    now = now + Duration::from_millis(*ms);
                    let max = backoff.max_delay();
                    let delay = backoff.next_delay(now, rng.as_mut());
                    prop_assert!(delay <= max, "{policy:?} at {now:?}: {delay:?} > {max:?}");
                }
                BackoffOp::Reset => backoff.reset(),
                BackoffOp::Slots(slots) => backoff.set_slots(slots.map(|(period, phase)| {
                    PacingSlots::new(
                        Duration::from_millis(period),
                        Duration::from_millis(phase),
                        now,
                    )
                })),
                BackoffOp::Advise(min, max) => backoff.advise(RetryWindow::from_advice(
                    now,
                    Duration::from_millis(*min),
                    Duration::from_millis(*max),
                )),
            }
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------
// Plain tests: a hand-written run with every check, and reproducers
// ---------------------------------------------------------------------------

/// One deterministic run through the main paths with every invariant on:
/// connect, subscribe, requests (answered, timed out, cut off), stale
/// inputs, advice, a deploy close, offline/online, a suspend, then stop.
#[test]
fn every_invariant_holds_on_a_hand_written_run() {
    let setup = Setup {
        policy: 8,
        max_attempts: Some(5),
        resubscribe: 3,
        seed: 7,
        start_at_once: true,
        reset_after_ms: 2_000,
        connect_timeout_ms: 3_000,
        probe_interval_ms: 5_000,
        probe_timeout_ms: 2_000,
        request_timeout_ms: 1_500,
        subscribe_timeout_ms: 1_000,
        online_delay_ms: 500,
    };
    let current = |fact| Op::Input(Target::Current, fact);
    let ops = vec![
        Op::Subscribe(0),
        Op::Establish(Some(25_000), Some((20_000, 3_000))),
        Op::ConfirmAll,
        Op::Request(None),
        Op::Request(Some(10_000)),
        current(Fact::Message(Msg::Response {
            request: ReqRef::InFlight(0),
            ok: true,
        })),
        Op::Advance(1_600),
        current(Fact::Message(Msg::Publication {
            channel: 0,
            other_epoch: false,
            step: 1,
        })),
        Op::Input(Target::Old(0), Fact::Message(Msg::Ping)),
        Op::Input(Target::Future(1), Fact::Opened),
        current(Fact::Message(Msg::Reconnect {
            reason: 0,
            min_ms: 1_000,
            max_ms: 2_000,
        })),
        current(Fact::Closed(Some(1012))),
        Op::ToPollTimeout,
        Op::Establish(None, None),
        Op::Network(false),
        current(Fact::Frame(Msg::Ping)),
        current(Fact::Closed(None)),
        Op::Network(true),
        Op::ToPollTimeout,
        current(Fact::Malformed(1)),
        Op::Suspend(3_600_000),
        Op::Earlier(1_000),
        Op::ToPollTimeout,
        Op::Stop,
        Op::Start,
        current(Fact::Opened),
        Op::Advance(10_000),
    ];
    let driver = run(&setup, &ops, Checks::all()).unwrap_or_else(|e| panic!("{e}"));
    assert!(driver.stopped);
    assert!(driver.requests.values().all(|p| p.settled));
    assert!(driver.opened.len() >= 3, "{:?}", driver.opened);
}

/// Reproducer (found by widening the generated timeouts to include zero):
/// with `subscribe_timeout = 0` an unconfirmed subscribe is due again at the
/// very instant it was sent, so `handle_timeout(now)` never catches up with
/// `poll_timeout()` and every call sends another `subscribe`: a driver that
/// runs its timer until nothing is due spins forever and floods the server.
/// The other timeouts at zero do not livelock. The core now raises the
/// confirmation timeout to a floor (`subscriptions::MIN_CONFIRM_TIMEOUT`).
#[test]
fn zero_subscribe_timeout_does_not_livelock_handle_timeout() {
    let mut config = Config::default();
    config.set_subscribe_timeout(Duration::ZERO);
    let now = Instant::from_millis(1_000);
    let mut session = Session::new(config, Instant::ZERO, 0);
    session.subscribe(now, "a").unwrap();
    session.start(now).unwrap();
    let id = TransportId(1);
    session.handle_input(now, Input::TransportOpened(id));
    let welcome = Welcome {
        session: "s-1".into(),
        protocol: PROTOCOL_VERSION,
        ping_interval_ms: None,
        pacing: None,
    };
    session.handle_input(now, Input::Message(id, ServerMessage::Welcome(welcome)));
    while session.poll_output().is_some() {}

    let mut calls = 0;
    let mut subscribes = 0;
    while session.poll_timeout().is_some_and(|due| due <= now) && calls < 100 {
        session.handle_timeout(now);
        calls += 1;
        while let Some(output) = session.poll_output() {
            if let Output::Transmit {
                message: belay_proto::message::ClientMessage::Subscribe(_),
                ..
            } = output
            {
                subscribes += 1;
            }
        }
    }
    assert!(
        calls < 100,
        "after {calls} handle_timeout({now:?}) calls poll_timeout is still {:?}; {subscribes} subscribes sent",
        session.poll_timeout()
    );
}
