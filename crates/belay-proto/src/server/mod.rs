//! The server's decisions, as pure types driven by explicit time.
//!
//! Like the client core, none of these types does I/O, reads a clock or
//! draws randomness: the server driver (sockets, timers, the broker) passes
//! `now` in and acts on the answers, so the same decisions run in the real
//! server, the simulator and the tests.
//!
//! ```text
//!  TCP accept      ──▶ SourceTable (per source, pending upgrades)         (HTTP 429 / 503)
//!  upgrade request ──▶ UpgradeDecision: origin, draining, source, admission (HTTP 403 / 429 / 503, or 1013 in-band)
//!                      (SourceTable::admit, TokenBucket: the accept rate)
//!  connection      ──▶ Limits::handshake_deadline                         (4008)
//!                      Limits::check_frame_len, RateLimiter               (1009, rate_limited, 4029)
//!                      Limits::heartbeat (reaps the silent)               (4000)
//!                      Limits::check_outbound                             (4009)
//!  request {idem}  ──▶ IdempotencyCache                                   (at most one execution)
//!  subscribe       ──▶ ChannelLog::recover                                (subscribed + replay)
//!                      can_resume, LiveFollow (a store shared by nodes)   (replay + live in step, or unavailable)
//!  publish         ──▶ ChannelLog::publish                                (offsets, bounded history)
//!  $call / $answer ──▶ HostCalls: wake, deliver, answer, deadlines        (host_asleep, host_lost, timeout)
//!  SSE send        ──▶ SendOrder: one at a time, in number order          (204, 409 + 1002)
//!  deploy          ──▶ DrainPlan                                          (503, advice, 1012)
//!  every welcome   ──▶ FleetPacing: slot grid, restart advice             (pacing, reconnect)
//! ```
//!
//! Every breach is a [`Violation`], and [`Violation::response`] is the one
//! table of what the server answers to each.

mod admission;
mod channel;
mod channel_pattern;
mod cluster_capacity;
mod connection;
mod drain;
mod fleet;
mod forwarded;
mod history;
mod host_calls;
mod idempotency;
mod limits;
mod live_follow;
mod namespaces;
mod node;
mod outbound_share;
mod rate;
mod resume;
mod send_order;
mod sources;
mod sse_answer;
mod upgrade;
mod violation;
mod work_share;

pub use admission::TokenBucket;
pub use channel::{
    check_channel_name, is_reserved_channel, payload_depth, ChannelNameError,
    DEFAULT_MAX_CHANNEL_LEN, MAX_PAYLOAD_DEPTH, RESERVED_CHANNEL_PREFIX,
};
pub use channel_pattern::ChannelPattern;
pub use cluster_capacity::ClusterCapacity;
pub use connection::{
    AuthVerdict, Connection, Event, Frame, Input, JoinAnswer, OutboundRoom, Output, Phase, Ticket,
    TransportError, MAX_BEFORE_WELCOME,
};
pub use drain::{DrainConfig, DrainPhase, DrainPlan};
pub use fleet::FleetPacing;
pub use forwarded::{
    parse_proxy_header, IpRange, IpRangeError, ProxyHeader, TrustedProxies, MAX_PROXY_HEADER,
};
pub use history::{ChannelLog, Recovery, MAX_OFFSET};
pub use host_calls::{
    BeatAnswer, CallId, CallRequest, Delivery, HostCallError, HostCallOutput, HostCalls,
    HostCallsConfig, HostView, NoSuchCall, RegistryFull, DEFAULT_ANSWER_TIMEOUT,
};
pub use idempotency::{
    lost_attempt, params_digest, Begin, IdempotencyCache, SharedOutcome, DEFAULT_IN_FLIGHT_LIMIT,
    DEFAULT_MAX_BYTES, ENTRY_OVERHEAD,
};
pub use limits::{Limits, MIN_PING_INTERVAL, MIN_PONG_TIMEOUT};
pub use live_follow::{Inconsistent, LiveFollow, Lost, Offer};
pub use namespaces::{Access, ChannelOptions, Namespaces};
pub use node::{
    max_publication_frame_len, AccessRoute, Caller, ConnectionHandle, ConnectionOrder, Identity,
    KeyedAdmit, KeyedRun, Lifecycle, Node, NodeConfig, NodeEvent, NodeOutput, PresenceChange,
    PresenceKind, PublicationRefused, ReservedCall, ANSWER_METHOD, CALL_METHOD, EPOCH_ALLOWANCE,
    PRESENCE_CHANNEL_PREFIX, PRESENCE_METHOD, PRESENCE_STATS_METHOD, PUBLISH_METHOD,
    USER_CHANNEL_PREFIX,
};
pub use outbound_share::{fair_share_admits, fair_share_room, FAIR_SHARE};
pub use rate::{RateDecision, RateLimiter};
pub use resume::{can_resume, HeldHistory};
pub use send_order::{SendOrder, SendVerdict};
pub use sources::{SourceKey, SourceLimits, SourceTable};
pub use sse_answer::{BadBody, HttpAnswer, SseAnswer};
pub use upgrade::{UpgradeDecision, UpgradeVerdict, DRAINING_RETRY_AFTER};
pub use violation::{Violation, ViolationResponse};
pub use work_share::{work_units, WorkPacer, MAX_WORK_WAIT, WORK_UNIT_BYTES};
