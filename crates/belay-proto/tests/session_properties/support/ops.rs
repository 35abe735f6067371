//! What the generator produces: the setup of a run and the ops it applies
//! (transport facts, server messages, commands and time moves).

use std::time::Duration;

use belay_proto::backoff::BackoffPolicy;
use belay_proto::Config;

pub(crate) const CHANNELS: [&str; 4] = ["a", "b", "c", "never-subscribed"];

pub(crate) const EPOCHS: [&str; 2] = ["e1", "e2"];

pub(crate) const UNSUB_CODES: [&str; 4] = ["forbidden", "unavailable", "not_found", "moved"];

pub(crate) const ADVICE_REASONS: [&str; 4] = ["deploy", "restart", "overload", "maintenance"];

pub(crate) const CLOSE_CODES: [u16; 10] =
    [1000, 1001, 1006, 1008, 1012, 1013, 4000, 4001, 4003, 4029];

pub(crate) const MALFORMED: [&str; 9] = [
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

#[derive(Debug, Clone)]
pub(crate) struct Setup {
    pub(crate) policy: usize,
    pub(crate) max_attempts: Option<u32>,
    pub(crate) resubscribe: usize,
    pub(crate) seed: u64,
    pub(crate) start_at_once: bool,
    pub(crate) reset_after_ms: u64,
    pub(crate) connect_timeout_ms: u64,
    pub(crate) probe_interval_ms: u64,
    pub(crate) probe_timeout_ms: u64,
    pub(crate) request_timeout_ms: u64,
    pub(crate) subscribe_timeout_ms: u64,
    pub(crate) online_delay_ms: u64,
}

impl Setup {
    pub(crate) fn config(&self) -> Config {
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
pub(crate) enum Target {
    /// The current transport (or, if there is none, the last one opened).
    Current,
    /// One of the transports opened before that is not current (index mod count).
    Old(usize),
    /// An id the session never opened: 0 = `u64::MAX`, k = last opened + k.
    Future(u8),
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum FailureKind {
    Network,
    Rejected(u16),
    InvalidConfig,
}

/// A request id in a `response`: one still in flight, one the session
/// handed out (settled or not), both as index mod count, or any number.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ReqRef {
    InFlight(usize),
    Issued(usize),
    Bogus(u64),
}

#[derive(Debug, Clone)]
pub(crate) enum Msg {
    Welcome {
        /// Another protocol version than ours.
        mismatch: bool,
        ping_interval_ms: Option<u64>,
        pacing: Option<(u64, u64, Option<u64>)>,
        /// Credentials expiring this many ms after `welcome`.
        expires_in_ms: Option<u64>,
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
pub(crate) enum Fact {
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
    pub(crate) fn advice(&self) -> Option<bool> {
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
pub(crate) enum Op {
    Input(Target, Fact),
    /// `TransportOpened` then `welcome` (ping interval, pacing) on the current transport.
    Establish(Option<u64>, Option<(u64, u64, Option<u64>)>),
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
