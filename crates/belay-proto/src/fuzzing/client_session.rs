//! Fuzz target `client_session`: the client core, `crate::Session`,
//! driven in virtual time by a structured sequence of [`Step`]s — server
//! frames built as JSON text from a small model (or garbage), transport
//! facts for the transport the session asked to open (now and then for a
//! stale one), network changes, time moves and the application's commands —
//! with its invariants checked after every step.
//!
//! After **every** call into the session the driver drains every output and
//! checks, panicking with `client_session: invariant N (…) violated …`:
//!
//! 1. **At most one live transport** (spec §2.4, §7). A transport is live
//!    from its `OpenTransport` until the driver reports it failed or closed
//!    to the session, or the session closes it (`CloseTransport`). An
//!    `OpenTransport` while another transport is live, a reused id, a
//!    `Transmit` or `CloseTransport` on a transport that is not live, and a
//!    live set that differs from `Session::current_transport` all violate it.
//! 2. **Every request settles exactly once** (§4.3). Each id `request`
//!    returned gets exactly one `Event::Response`; none for an id never
//!    returned; `Timeout` not before the deadline; and after the input, once
//!    virtual time has moved an hour past the last step (past every
//!    request's deadline), every request has settled.
//! 3. **No publication delivered twice or skipped without an announcement**
//!    (§5.3, §5.6). Per channel the driver keeps the position the next
//!    delivery must follow: the one the channel was first confirmed at
//!    (`subscribed`, read back with `Subscriptions::position`), then the last
//!    publication delivered. A delivery must be in the same epoch at the
//!    next offset, unless `RecoveryFailed` for that channel came in between (that
//!    announces a gap; the position is then taken afresh from the session).
//!    A resume confirmed without `RecoveryFailed` (`recovered: true`) must
//!    leave the position where it was: otherwise what follows is skipped,
//!    repeated or from another epoch without an announcement. An
//!    `(epoch, offset)` is never delivered twice for a channel (the record is
//!    kept per epoch: a server that names an old epoch again after another
//!    one cannot be told apart by the client), and nothing is delivered for a
//!    channel the application does not want.
//! 4. **No busy loop; `poll_timeout` is never in the past** after
//!    `handle_timeout` at that instant. The driver fires every deadline that
//!    is due (after each step, and in order while time moves), and fails if
//!    `poll_timeout` is earlier than the instant `handle_timeout` just ran at,
//!    or if more than [`SPIN_LIMIT`] calls at one instant leave something
//!    due. (A panic inside the session is a crash as well.)
//! 5. **Nothing after `Stopped`** (§6.5): no output follows `Event::Stopped`;
//!    a stopped session holds no timer, transport, readiness or request.
//! 6. **Readiness is consistent**: `ReadinessChanged` never repeats, its
//!    `ready` is the aggregate, the levels nest and follow the connection
//!    state, and the last one announced is `readiness()`.
//!
//! The checks of 1–6 are the one checker's,
//! [`ClientInvariants`](crate::testing::invariants::ClientInvariants), which
//! Pair and the session property tests use too; this driver adds the ones
//! about its own calls (results of `request`, `subscribe`, `unsubscribe`)
//! and the busy-loop bound.
//!
//! Inputs are decoded with `arbitrary` ([`decode_session`]); [`encode_session`]
//! is the exact inverse, for writing seed inputs
//! (`fuzz/examples/client_session_seeds.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::message::{ClientMessage, StreamPosition, MAX_FRAME_LEN};
use crate::testing::invariants::{ClientChecks, ClientInvariants, Violation};
use crate::{
    Call, CloseCode, CloseInfo, Config, Event, Failure, Input, Instant, Output, RequestError,
    RequestOutcome, Session, SubscribeError, TransportId,
};
use arbitrary::{Arbitrary, Unstructured};
use serde_json::{json, Value};

mod encode;
pub mod seeds;
#[cfg(test)]
mod tests;

pub use encode::encode_session;

// ---------------------------------------------------------------------------
// The model the input picks from
// ---------------------------------------------------------------------------

/// The channel names the application can want (`other` is never in a seed).
pub const CHANNELS: [&str; 3] = ["news", "feed", "other"];
/// The epochs a server frame can name.
pub const EPOCHS: [&str; 2] = ["a", "b"];
/// Close codes a `Closed` fact picks from (every code of spec §7, 1005,
/// and two unlisted ones).
pub const CLOSE_CODES: [u16; 19] = [
    1000, 1001, 1002, 1005, 1006, 1007, 1008, 1009, 1011, 1012, 1013, 4000, 4001, 4003, 4008, 4009,
    4029, 3999, 4999,
];
/// HTTP statuses a rejected upgrade picks from (plus any `u16`).
pub const STATUSES: [u16; 6] = [401, 403, 429, 503, 500, 404];
/// `unsubscribed` codes: the four final ones, then retrying ones.
pub const UNSUB_CODES: [&str; 7] = [
    "forbidden",
    "unauthorized",
    "not_found",
    "bad_request",
    "unavailable",
    "lagged",
    "moved",
];
/// `reconnect` reasons (`deploy` doubles later delays).
pub const ADVICE_REASONS: [&str; 5] = ["deploy", "restart", "overload", "maintenance", "other"];
/// `error` codes.
pub const ERROR_CODES: [&str; 4] = ["bad_request", "rate_limited", "internal", "made_up"];
/// Frames that do not decode (or decode to a known type in the wrong
/// direction): each closes the transport with 1002.
pub const MALFORMED: [&str; 12] = [
    "",
    "not json",
    "[1]",
    "{}",
    r#"{"type":1}"#,
    r#"{"type":"response","id":1}"#,
    r#"{"type":"response","id":1,"result":1,"error":{"code":"x"}}"#,
    r#"{"type":"subscribe","channel":"news"}"#,
    r#"{"type":"welcome"}"#,
    r#"{"type":"publication","channel":"news","epoch":"a","offset":-1}"#,
    r#"{"type":"ping"} {"type":"ping"}"#,
    r#"{"type":"ping","type":"pong"}"#,
];

/// `handle_timeout` calls at one instant after which something still due
/// is a busy loop (invariant 4). A zero-delay redial legitimately takes two.
pub const SPIN_LIMIT: usize = 1_000;

/// `handle_timeout` calls in one move of time after which the driver gives
/// up on the session ever running out of work (invariant 4): the shortest
/// timer (100 ms, `MIN_CONFIRM_TIMEOUT`) fires 36,000 times an hour.
pub const WALK_LIMIT: usize = 1_000_000;

/// How far past the last step the driver moves time at the end (every
/// request deadline is at most 65.5 s after its request).
pub const FINAL_ADVANCE: Duration = Duration::from_secs(3_600);

/// Text taken from the input as a little-endian `u16` length and that many
/// bytes (fewer if the input ends), invalid UTF-8 replaced — writable back,
/// unlike `String`'s own `Arbitrary`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FuzzText(pub String);

impl<'a> Arbitrary<'a> for FuzzText {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let len = usize::from(u16::arbitrary(u)?).min(u.len());
        Ok(FuzzText(
            String::from_utf8_lossy(u.bytes(len)?).into_owned(),
        ))
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (2, None)
    }
}

/// A channel of [`CHANNELS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Chan {
    /// `news`.
    News,
    /// `feed`.
    Feed,
    /// `other`.
    Other,
}

impl Chan {
    /// Its name.
    pub fn name(self) -> &'static str {
        CHANNELS[self as usize]
    }
}

/// An epoch of [`EPOCHS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Epoch {
    /// `a`.
    A,
    /// `b`.
    B,
}

impl Epoch {
    /// Its name.
    pub fn name(self) -> &'static str {
        EPOCHS[self as usize]
    }
}

/// The session's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Setup {
    /// `Config::default()`.
    Default,
    /// The default with `max_attempts = Some(n % 4)`.
    MaxAttempts(u8),
    /// Short timers: connect 1 s, probe 1 s + 500 ms, requests 1 s,
    /// subscribe 100 ms, reset after 1 s, online delay 100 ms.
    ShortTimers,
    /// Every timer the config has set to zero (the subscribe timeout is
    /// raised to 100 ms by the core), except the connect timeout: 1 ms, so
    /// that a transport can open at all.
    ZeroTimers,
}

impl Setup {
    /// The configuration it stands for.
    pub fn config(self) -> Config {
        let mut config = Config::default();
        match self {
            Setup::Default => {}
            Setup::MaxAttempts(n) => {
                config.set_max_attempts(Some(u32::from(n % 4)));
            }
            Setup::ShortTimers => {
                config
                    .set_connect_timeout(Duration::from_secs(1))
                    .set_probe_interval(Duration::from_secs(1))
                    .set_probe_timeout(Duration::from_millis(500))
                    .set_request_timeout(Duration::from_secs(1))
                    .set_subscribe_timeout(Duration::from_millis(100))
                    .set_reset_after(Duration::from_secs(1))
                    .set_online_delay(Duration::from_millis(100));
            }
            Setup::ZeroTimers => {
                config
                    .set_connect_timeout(Duration::from_millis(1))
                    .set_probe_interval(Duration::ZERO)
                    .set_probe_timeout(Duration::ZERO)
                    .set_request_timeout(Duration::ZERO)
                    .set_subscribe_timeout(Duration::ZERO)
                    .set_reset_after(Duration::ZERO)
                    .set_online_delay(Duration::ZERO);
            }
        }
        config
    }
}

/// `welcome.ping_interval_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum PingInterval {
    /// Absent.
    Absent,
    /// `0`: the server does not ping.
    Zero,
    /// A few ms (raised to 1,000 by the client).
    Millis(u16),
    /// Whole seconds.
    Seconds(u8),
    /// Any value at all.
    Any(u64),
}

impl PingInterval {
    fn ms(self) -> Option<u64> {
        match self {
            PingInterval::Absent => None,
            PingInterval::Zero => Some(0),
            PingInterval::Millis(ms) => Some(u64::from(ms)),
            PingInterval::Seconds(s) => Some(u64::from(s) * 1_000),
            PingInterval::Any(ms) => Some(ms),
        }
    }
}

/// Which request a `response` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum ReqRef {
    /// The (n mod count)-th request still in flight (the latest issued if none).
    InFlight(u8),
    /// The latest request issued, settled or not.
    Latest,
    /// Any id.
    Any(u64),
}

/// A frame from the server, built as JSON text when the step runs.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum ServerFrame {
    /// `welcome`, protocol 1.
    Welcome {
        /// `ping_interval_ms`.
        ping: PingInterval,
        /// `pacing`: `period_ms`, `phase_ms`.
        pacing: Option<(u32, u32)>,
    },
    /// `welcome` naming this protocol version.
    WelcomeProtocol(u32),
    /// `ping`.
    Ping,
    /// `pong`.
    Pong,
    /// `response` with a result, or an `internal` error.
    Response {
        /// Whose.
        to: ReqRef,
        /// An error instead of a result.
        error: bool,
    },
    /// `subscribed` with anything in it.
    Subscribed {
        /// Channel.
        channel: Chan,
        /// Epoch.
        epoch: Epoch,
        /// Offset.
        offset: u8,
        /// `recovered`.
        recovered: bool,
    },
    /// The honest answer to the last `subscribe` sent for the channel on
    /// this transport: its `since` with `recovered: true`, or epoch `a`,
    /// offset 0 for a first subscribe.
    Resumed(Chan),
    /// `publication` with anything in it.
    Publication {
        /// Channel.
        channel: Chan,
        /// Epoch.
        epoch: Epoch,
        /// Offset.
        offset: u8,
    },
    /// The `publication` right after the channel's position in the session
    /// (epoch `a`, offset 1 without one).
    NextPublication(Chan),
    /// `unsubscribed` with a code of [`UNSUB_CODES`].
    Unsubscribed {
        /// Channel.
        channel: Chan,
        /// Index into [`UNSUB_CODES`].
        code: u8,
    },
    /// `reconnect` advice.
    Reconnect {
        /// Index into [`ADVICE_REASONS`].
        reason: u8,
        /// `min_delay_ms`.
        min_delay_ms: u32,
        /// `max_delay_ms`.
        max_delay_ms: u32,
    },
    /// `error` with a code of [`ERROR_CODES`].
    Error(u8),
    /// A type the client does not know (skipped, proof of life).
    UnknownType,
    /// One of [`MALFORMED`].
    Malformed(u8),
    /// Any text.
    Garbage(FuzzText),
    /// A frame one byte over `MAX_FRAME_LEN`.
    TooLarge,
}

/// How a transport failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum FuzzFailure {
    /// `Failure::Network`.
    Network,
    /// `Failure::Unreachable`.
    Unreachable,
    /// `Failure::rejected` with a status of [`STATUSES`].
    Rejected(u8),
    /// `Failure::rejected` with any status.
    RejectedAny(u16),
    /// `Failure::InvalidConfig`.
    InvalidConfig,
    /// `Failure::Rejected` with a status of [`STATUSES`] and a `Retry-After`
    /// of this many ms.
    RejectedRetryAfter(u8, u32),
}

impl FuzzFailure {
    fn failure(self) -> Failure {
        match self {
            FuzzFailure::Network => Failure::network("connection reset"),
            FuzzFailure::Unreachable => Failure::unreachable("no route to host"),
            FuzzFailure::Rejected(i) => {
                Failure::rejected(STATUSES[usize::from(i) % STATUSES.len()])
            }
            FuzzFailure::RejectedAny(status) => Failure::rejected(status),
            FuzzFailure::InvalidConfig => Failure::InvalidConfig {
                detail: "bad url".into(),
            },
            FuzzFailure::RejectedRetryAfter(i, ms) => Failure::Rejected {
                status: STATUSES[usize::from(i) % STATUSES.len()],
                retry_after_ms: Some(u64::from(ms)),
            },
        }
    }
}

/// How a transport closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum FuzzClose {
    /// No close frame (1006 as browsers report it).
    Abnormal,
    /// A code of [`CLOSE_CODES`].
    Listed(u8),
    /// Any code.
    Any(u16),
}

impl FuzzClose {
    fn info(self) -> CloseInfo {
        match self {
            FuzzClose::Abnormal => CloseInfo::abnormal(),
            FuzzClose::Listed(i) => CloseInfo::new(
                CloseCode(CLOSE_CODES[usize::from(i) % CLOSE_CODES.len()]),
                "fuzz",
            ),
            FuzzClose::Any(code) => CloseInfo::new(CloseCode(code), "fuzz"),
        }
    }
}

/// A transport fact, for [`Step::Stale`].
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum Fact {
    /// `TransportOpened`.
    Opened,
    /// `TransportFailed`.
    Failed(FuzzFailure),
    /// `TransportClosed`.
    Closed(FuzzClose),
    /// `Frame`.
    Frame(ServerFrame),
}

/// Which stale transport a [`Step::Stale`] fact names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Stale {
    /// The one opened before the latest (id 0 if none).
    Previous,
    /// An id the session never issued (0).
    Never,
}

/// How far time moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Advance {
    /// Microseconds.
    Micros(u16),
    /// Milliseconds.
    Millis(u16),
    /// Seconds.
    Seconds(u8),
    /// To `poll_timeout`, if it is within an hour.
    ToDeadline,
}

/// One step of the input.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum Step {
    /// A frame on the latest transport the session asked to open.
    Frame(ServerFrame),
    /// The latest transport opened.
    Opened,
    /// The latest transport failed.
    Failed(FuzzFailure),
    /// The latest transport closed.
    Closed(FuzzClose),
    /// A fact about a transport that is not the latest.
    Stale(Stale, Fact),
    /// The device's network went off (`false`) or on.
    Network(bool),
    /// Time moves; every deadline on the way fires in order.
    Advance(Advance),
    /// `start`.
    Start,
    /// `stop`.
    Stop,
    /// `request("echo", params)`, with its own timeout (ms) and an
    /// idempotency key if asked.
    Request {
        /// The params (a number).
        params: u8,
        /// `Call::with_timeout` in ms.
        timeout_ms: Option<u16>,
        /// `Call::with_idempotency_key`.
        idem: bool,
    },
    /// `subscribe`.
    Subscribe(Chan),
    /// `unsubscribe`.
    Unsubscribe(Chan),
    /// `reconnect_now`.
    ReconnectNow,
    /// `check_liveness`.
    CheckLiveness,
}

/// The whole input: a configuration, the session's random seed and the steps.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub struct SessionInput {
    /// Configuration.
    pub setup: Setup,
    /// `Session::new`'s random seed.
    pub seed: u64,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// The input `data` stands for (`None` if `arbitrary` rejects it).
pub fn decode_session(data: &[u8]) -> Option<SessionInput> {
    SessionInput::arbitrary_take_rest(Unstructured::new(data)).ok()
}

/// Decode `data` and [`run`] it; what a corpus replay calls.
pub fn client_session(data: &[u8]) -> Option<SessionOutcome> {
    decode_session(data).map(|input| run(&input))
}

// ---------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------

/// What a run did (for tests that the harness reaches the session's logic).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionOutcome {
    /// Steps run.
    pub steps: usize,
    /// `OpenTransport` outputs.
    pub transports: usize,
    /// `Connected` events.
    pub connected: usize,
    /// Requests `request` accepted.
    pub requests: usize,
    /// Requests settled by a `response` (result or error).
    pub answered: usize,
    /// Requests settled with `Timeout`.
    pub timed_out: usize,
    /// Requests settled with `ConnectionClosed`.
    pub connection_closed: usize,
    /// `Subscribed` events.
    pub subscribed: usize,
    /// `Subscribed { recovered: true }` events.
    pub recovered: usize,
    /// `RecoveryFailed` events.
    pub recovery_failed: usize,
    /// `Publication` events.
    pub publications: usize,
    /// Whether `Stopped` was emitted.
    pub stopped: bool,
}

const INVARIANTS: [&str; 8] = [
    "",
    "at most one live transport",
    "every request settles exactly once",
    "no publication delivered twice or skipped without an announcement",
    "no busy loop, poll_timeout never in the past",
    "nothing after Stopped",
    "readiness is consistent",
    "reconnect delays are bounded",
];

struct Driver {
    session: Session,
    config: Config,
    now: Instant,
    step: usize,
    /// The one checker (`testing::invariants`): every batch of outputs and
    /// the session's state after it.
    invariants: ClientInvariants,
    /// Every request id `request` returned.
    requests: BTreeSet<u64>,
    /// The `since` of the last `subscribe` sent per channel on the latest transport.
    sent_subscribe: BTreeMap<String, Option<StreamPosition>>,
    too_large: Option<String>,
    outcome: SessionOutcome,
}

/// Run one input through a fresh session, checking every invariant after
/// every step (panics naming the invariant that broke).
pub fn run(input: &SessionInput) -> SessionOutcome {
    let mut driver = Driver::new(input.setup, input.seed);
    for (index, step) in input.steps.iter().enumerate() {
        driver.step = index;
        driver.apply(step);
        driver.outcome.steps += 1;
    }
    driver.step = input.steps.len();
    driver.finish();
    driver.outcome
}

impl Driver {
    fn new(setup: Setup, seed: u64) -> Self {
        let config = setup.config();
        Driver {
            session: Session::new(config.clone(), Instant::ZERO, seed),
            // Invariants 1–6 of `testing::invariants` (the fuzzer feeds no
            // advice to bound delays by).
            invariants: ClientInvariants::new(
                &config,
                ClientChecks {
                    delays: false,
                    ..ClientChecks::all()
                },
            ),
            config,
            now: Instant::ZERO,
            step: 0,
            requests: BTreeSet::new(),
            sent_subscribe: BTreeMap::new(),
            too_large: None,
            outcome: SessionOutcome::default(),
        }
    }

    #[track_caller]
    fn violated(&self, invariant: usize, what: impl std::fmt::Display) -> ! {
        panic!(
            "client_session: invariant {invariant} ({}) violated at step {} ({:?}, state {:?}): {what}",
            INVARIANTS[invariant],
            self.step,
            self.now,
            self.session.state()
        )
    }

    /// A broken invariant of the checker.
    #[track_caller]
    fn broken(&self, violation: Violation) -> ! {
        let Violation {
            invariant, detail, ..
        } = violation;
        self.violated(usize::from(invariant.number()), detail)
    }

    fn opened(&self) -> &[TransportId] {
        self.invariants.opened()
    }

    fn current(&self) -> TransportId {
        self.opened().last().copied().unwrap_or(TransportId(0))
    }

    fn stale(&self, which: Stale) -> TransportId {
        match which {
            Stale::Previous if self.opened().len() >= 2 => self.opened()[self.opened().len() - 2],
            _ => TransportId(0),
        }
    }

    fn apply(&mut self, step: &Step) {
        let now = self.now;
        match step {
            Step::Frame(frame) => {
                let text = self.frame_text(frame);
                self.feed(Input::Frame(self.current(), text));
            }
            Step::Opened => self.feed(Input::TransportOpened(self.current())),
            Step::Failed(failure) => {
                self.feed(Input::TransportFailed(self.current(), failure.failure()))
            }
            Step::Closed(close) => self.feed(Input::TransportClosed(self.current(), close.info())),
            Step::Stale(which, fact) => {
                let id = self.stale(*which);
                let input = match fact {
                    Fact::Opened => Input::TransportOpened(id),
                    Fact::Failed(failure) => Input::TransportFailed(id, failure.failure()),
                    Fact::Closed(close) => Input::TransportClosed(id, close.info()),
                    Fact::Frame(frame) => Input::Frame(id, self.frame_text(frame)),
                };
                self.feed(input);
            }
            Step::Network(online) => self.feed(Input::Network { online: *online }),
            Step::Advance(advance) => {
                let target = match *advance {
                    Advance::Micros(us) => now + Duration::from_micros(u64::from(us)),
                    Advance::Millis(ms) => now + Duration::from_millis(u64::from(ms)),
                    Advance::Seconds(s) => now + Duration::from_secs(u64::from(s)),
                    Advance::ToDeadline => match self.session.poll_timeout() {
                        Some(at) if at <= now + FINAL_ADVANCE => at,
                        _ => now,
                    },
                };
                self.advance_to(target);
            }
            Step::Start => {
                let _ = self.session.start(now);
                self.drain();
            }
            Step::Stop => {
                self.session.stop(now);
                self.drain();
            }
            Step::Request {
                params,
                timeout_ms,
                idem,
            } => self.request(*params, *timeout_ms, *idem),
            Step::Subscribe(chan) => {
                let result = self.session.subscribe(now, chan.name());
                self.subscribed(*chan, result);
                self.drain();
            }
            Step::Unsubscribe(chan) => {
                let result = self.session.unsubscribe(now, chan.name());
                self.unsubscribed(*chan, result);
                self.drain();
            }
            Step::ReconnectNow => {
                let _ = self.session.reconnect_now(now);
                self.drain();
            }
            Step::CheckLiveness => {
                self.session.check_liveness(now);
                self.drain();
            }
        }
        // A driver fires whatever is due at once.
        self.advance_to(self.now);
    }

    /// Feed one input and drain. A failure or close of the live transport
    /// is reported to the session, so the transport is no longer live.
    fn feed(&mut self, input: Input) {
        if let Input::TransportFailed(id, _) | Input::TransportClosed(id, _) = &input {
            self.invariants.transport_ended(*id);
        }
        self.session.handle_input(self.now, input);
        self.drain();
    }

    fn request(&mut self, params: u8, timeout_ms: Option<u16>, idem: bool) {
        let mut call = Call::new("echo", json!(params));
        if let Some(ms) = timeout_ms {
            call = call.with_timeout(Duration::from_millis(u64::from(ms)));
        }
        if idem {
            call = call.with_idempotency_key(format!("k{}", params % 4));
        }
        let timeout = timeout_ms.map_or(self.config.request_timeout(), |ms| {
            Duration::from_millis(u64::from(ms))
        });
        let result = self.session.request(self.now, call);
        if let Ok(id) = result {
            if !self.requests.insert(id.0) {
                self.violated(2, format!("request returned {id:?} a second time"));
            }
            self.invariants.request_accepted(id, self.now + timeout);
            self.outcome.requests += 1;
        } else if result == Err(RequestError::Stopped) && !self.invariants.stopped() {
            self.violated(5, "request refused as Stopped before Event::Stopped");
        }
        self.drain();
    }

    fn subscribed(&mut self, chan: Chan, result: Result<(), SubscribeError>) {
        let name = chan.name();
        match result {
            Ok(()) => {
                if let Err(violation) = self.invariants.subscribe_accepted(name) {
                    self.broken(violation);
                }
            }
            Err(SubscribeError::AlreadySubscribed(_)) if !self.invariants.is_wanted(name) => {
                self.violated(
                    3,
                    format!("subscribe({name:?}): AlreadySubscribed, but it was never accepted"),
                );
            }
            Err(_) => {}
        }
    }

    fn unsubscribed(&mut self, chan: Chan, result: Result<(), SubscribeError>) {
        let name = chan.name();
        match result {
            Ok(()) => {
                if let Err(violation) = self.invariants.unsubscribe_accepted(name) {
                    self.broken(violation);
                }
            }
            Err(SubscribeError::NotSubscribed(_)) if self.invariants.is_wanted(name) => {
                self.violated(
                    3,
                    format!("unsubscribe({name:?}): NotSubscribed, but it is"),
                );
            }
            Err(_) => {}
        }
    }

    /// Fire every deadline up to `target`, in order, then set the clock to
    /// `target` (invariant 4 on the way).
    fn advance_to(&mut self, target: Instant) {
        let mut spin_at = None;
        let mut spins = 0;
        let mut calls = 0;
        while let Some(due) = self.session.poll_timeout() {
            if due > target {
                break;
            }
            let at = due.max(self.now);
            if spin_at == Some(at) {
                spins += 1;
            } else {
                spin_at = Some(at);
                spins = 1;
            }
            if spins > SPIN_LIMIT {
                self.violated(
                    4,
                    format!("{SPIN_LIMIT} handle_timeout calls at {at:?} and poll_timeout is still {due:?}: a busy loop"),
                );
            }
            calls += 1;
            if calls > WALK_LIMIT {
                self.violated(
                    4,
                    format!("{WALK_LIMIT} handle_timeout calls before {target:?}: the session never runs out of work"),
                );
            }
            self.now = at;
            self.session.handle_timeout(at);
            self.drain();
            if let Err(violation) = self.invariants.after_timeout(at, &self.session) {
                self.broken(violation);
            }
        }
        self.now = self.now.max(target);
    }

    /// The end of the input: time moves an hour on, past every request's
    /// deadline; every request must have settled.
    fn finish(&mut self) {
        self.advance_to(self.now + FINAL_ADVANCE);
        if let Err(violation) = self.invariants.finish(&self.session) {
            self.broken(violation);
        }
    }

    // ----- outputs -----

    /// Drain every output, check the batch and the session after it, then
    /// note what the frames and the outcome need.
    fn drain(&mut self) {
        let outputs: Vec<Output> = std::iter::from_fn(|| self.session.poll_output()).collect();
        if let Err(violation) = self.invariants.batch(self.now, &self.session, &outputs) {
            self.broken(violation);
        }
        for output in outputs {
            match output {
                Output::OpenTransport { .. } => {
                    self.sent_subscribe.clear();
                    self.outcome.transports += 1;
                }
                Output::Transmit {
                    message: ClientMessage::Subscribe(subscribe),
                    ..
                } => {
                    self.sent_subscribe
                        .insert(subscribe.channel, subscribe.since);
                }
                Output::Event(event) => self.count(&event),
                _ => {}
            }
        }
    }

    /// The outcome's counts.
    fn count(&mut self, event: &Event) {
        let outcome = &mut self.outcome;
        match event {
            Event::Connected { .. } => outcome.connected += 1,
            Event::Stopped => outcome.stopped = true,
            Event::Response { outcome: o, .. } => match o {
                RequestOutcome::Timeout => outcome.timed_out += 1,
                RequestOutcome::ConnectionClosed => outcome.connection_closed += 1,
                _ => outcome.answered += 1,
            },
            Event::Subscribed { recovered, .. } => {
                outcome.subscribed += 1;
                outcome.recovered += usize::from(*recovered);
            }
            Event::RecoveryFailed { .. } => outcome.recovery_failed += 1,
            Event::Publication(_) => outcome.publications += 1,
            _ => {}
        }
    }

    // ----- frames -----

    fn request_id(&self, to: ReqRef) -> u64 {
        let latest = self.requests.iter().next_back().copied().unwrap_or(1);
        match to {
            ReqRef::InFlight(n) => {
                let unsettled: Vec<u64> =
                    self.invariants.unsettled().iter().map(|id| id.0).collect();
                if unsettled.is_empty() {
                    latest
                } else {
                    unsettled[usize::from(n) % unsettled.len()]
                }
            }
            ReqRef::Latest => latest,
            ReqRef::Any(id) => id,
        }
    }

    fn frame_text(&mut self, frame: &ServerFrame) -> String {
        let value: Value = match frame {
            ServerFrame::Welcome { ping, pacing } => {
                let mut welcome = json!({
                    "type": "welcome",
                    "session": format!("s-{}", self.opened().len()),
                    "protocol": 1,
                });
                if let Some(ms) = ping.ms() {
                    welcome["ping_interval_ms"] = json!(ms);
                }
                if let Some((period_ms, phase_ms)) = pacing {
                    welcome["pacing"] = json!({"period_ms": period_ms, "phase_ms": phase_ms});
                }
                welcome
            }
            ServerFrame::WelcomeProtocol(protocol) => {
                json!({"type": "welcome", "session": "s-other", "protocol": protocol})
            }
            ServerFrame::Ping => json!({"type": "ping"}),
            ServerFrame::Pong => json!({"type": "pong"}),
            ServerFrame::Response { to, error } => {
                let id = self.request_id(*to);
                if *error {
                    json!({"type": "response", "id": id, "error": {"code": "internal", "message": "fuzz"}})
                } else {
                    json!({"type": "response", "id": id, "result": {"echo": id}})
                }
            }
            ServerFrame::Subscribed {
                channel,
                epoch,
                offset,
                recovered,
            } => json!({
                "type": "subscribed",
                "channel": channel.name(),
                "epoch": epoch.name(),
                "offset": offset,
                "recovered": recovered,
            }),
            ServerFrame::Resumed(channel) => {
                let (epoch, offset, recovered) = match self.sent_subscribe.get(channel.name()) {
                    Some(Some(since)) => (since.epoch.clone(), since.offset, true),
                    _ => (EPOCHS[0].to_owned(), 0, false),
                };
                json!({
                    "type": "subscribed",
                    "channel": channel.name(),
                    "epoch": epoch,
                    "offset": offset,
                    "recovered": recovered,
                })
            }
            ServerFrame::Publication {
                channel,
                epoch,
                offset,
            } => json!({
                "type": "publication",
                "channel": channel.name(),
                "epoch": epoch.name(),
                "offset": offset,
                "data": {"n": offset},
            }),
            ServerFrame::NextPublication(channel) => {
                let (epoch, offset) = match self.session.subscriptions().position(channel.name()) {
                    Some(position) => (position.epoch.clone(), position.offset.saturating_add(1)),
                    None => (EPOCHS[0].to_owned(), 1),
                };
                json!({
                    "type": "publication",
                    "channel": channel.name(),
                    "epoch": epoch,
                    "offset": offset,
                    "data": {"n": offset},
                })
            }
            ServerFrame::Unsubscribed { channel, code } => json!({
                "type": "unsubscribed",
                "channel": channel.name(),
                "code": UNSUB_CODES[usize::from(*code) % UNSUB_CODES.len()],
                "reason": "fuzz",
            }),
            ServerFrame::Reconnect {
                reason,
                min_delay_ms,
                max_delay_ms,
            } => json!({
                "type": "reconnect",
                "reason": ADVICE_REASONS[usize::from(*reason) % ADVICE_REASONS.len()],
                "min_delay_ms": min_delay_ms,
                "max_delay_ms": max_delay_ms,
            }),
            ServerFrame::Error(code) => json!({
                "type": "error",
                "code": ERROR_CODES[usize::from(*code) % ERROR_CODES.len()],
                "message": "fuzz",
            }),
            ServerFrame::UnknownType => json!({"type": "announcement", "text": "hello"}),
            ServerFrame::Malformed(i) => {
                return MALFORMED[usize::from(*i) % MALFORMED.len()].into()
            }
            ServerFrame::Garbage(text) => return text.0.clone(),
            ServerFrame::TooLarge => {
                return self
                    .too_large
                    .get_or_insert_with(|| "x".repeat(MAX_FRAME_LEN + 1))
                    .clone()
            }
        };
        value.to_string()
    }
}
