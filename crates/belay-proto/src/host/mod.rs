//! Idle sleep for resident hosts (spec/PROTOCOL.md §10, docs/HOSTS.md).
//!
//! A resident host (an agent on a user's machine, a device, an edge
//! worker) is reached by clients through the relay (the Belay server). It
//! already calls the relay's control plane at an interval to say it is
//! alive; the reply says whether anyone needs the host now, and the host
//! holds its Belay session only while the answer is yes.
//!
//! ```text
//!   host                                  relay
//!   IdleSleep ── heartbeat (HTTP) ──────▶ HostRecord::needed
//!       ▲      ◀── {"needed": true|false} ┘  (a subscriber, a call in
//!       │                                     flight, or one within the grace)
//!       └─ poll_action: Connect / Disconnect ─▶ the Belay session
//! ```
//!
//! Both halves are pure and clock-free, like [`crate::heartbeat`]: the host
//! side is [`IdleSleep`], fed the heartbeat outcomes; the relay side is
//! [`HostRecord`], fed what the relay sees of a host (its session
//! attaching, subscribers, calls). [`HostTiming`] holds the numbers both
//! sides agree on and the bound a caller waits for a sleeping host.
//!
//! ```
//! use std::time::Duration;
//! use belay_proto::host::{Beat, HostAction, IdleSleep, IdleSleepConfig};
//! use belay_proto::Instant;
//!
//! let mut sleep = IdleSleep::new(IdleSleepConfig::default().with_min_awake(Duration::from_secs(30)));
//! sleep.handle_beat(Instant::from_millis(0), Beat::Answered { needed: Some(true) });
//! assert_eq!(sleep.poll_action(), Some(HostAction::Connect));
//! // Nobody needs it, but it woke less than the minimum awake time ago.
//! sleep.handle_beat(Instant::from_millis(15_000), Beat::Answered { needed: Some(false) });
//! assert_eq!(sleep.poll_action(), None);
//! sleep.handle_beat(Instant::from_millis(30_000), Beat::Answered { needed: Some(false) });
//! assert_eq!(sleep.poll_action(), Some(HostAction::Disconnect));
//! ```

mod idle_sleep;
mod record;
mod timing;

pub use idle_sleep::{Beat, HostAction, IdleSleep, IdleSleepConfig, IdleSleepStats};
pub use record::{HostRecord, HostState, SharedHost};
pub use timing::HostTiming;

/// The channel a host publishes to and its clients subscribe to:
/// `$host:ID`.
pub const HOST_CHANNEL_PREFIX: &str = "$host:";
/// The channel the relay delivers calls on; only the host `ID` may
/// subscribe: `$host-calls:ID`.
pub const CALLS_CHANNEL_PREFIX: &str = "$host-calls:";
/// The channel the relay publishes the host's state on: `$host-state:ID`.
pub const STATE_CHANNEL_PREFIX: &str = "$host-state:";
/// The longest host id, in bytes.
pub const MAX_HOST_ID_LEN: usize = 128;

/// The most calls one caller (one connection) may hold on one host at
/// once: a quarter of the host's `max_calls` (rounded up, at least one).
/// A fixed share, not a dynamic one, because a slot cannot be taken back
/// from a call already waiting: whatever one caller does, at least four
/// callers are served at once, and a caller refused its share retries
/// (`rate_limited`) while its own calls end.
///
/// ```
/// use belay_proto::host::max_calls_per_caller;
///
/// assert_eq!(max_calls_per_caller(64), 16);
/// assert_eq!(max_calls_per_caller(3), 1);
/// assert_eq!(max_calls_per_caller(0), 1);
/// ```
pub fn max_calls_per_caller(max_calls: usize) -> usize {
    max_calls.div_ceil(4).max(1)
}

/// Which of the three host channels `channel` is, and the host's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostChannel<'a> {
    /// `$host:ID`: the host's publications.
    Data(&'a str),
    /// `$host-calls:ID`: calls to the host.
    Calls(&'a str),
    /// `$host-state:ID`: the host's state.
    State(&'a str),
}

impl<'a> HostChannel<'a> {
    /// Parse `channel`; `None` when it is not a host channel or its id is
    /// not a valid host id ([`valid_host_id`]).
    pub fn parse(channel: &'a str) -> Option<Self> {
        let (kind, id): (fn(&'a str) -> Self, _) =
            if let Some(id) = channel.strip_prefix(CALLS_CHANNEL_PREFIX) {
                (HostChannel::Calls, id)
            } else if let Some(id) = channel.strip_prefix(STATE_CHANNEL_PREFIX) {
                (HostChannel::State, id)
            } else if let Some(id) = channel.strip_prefix(HOST_CHANNEL_PREFIX) {
                (HostChannel::Data, id)
            } else {
                return None;
            };
        valid_host_id(id).then(|| kind(id))
    }

    /// The host's id.
    pub fn host(&self) -> &'a str {
        match *self {
            HostChannel::Data(id) | HostChannel::Calls(id) | HostChannel::State(id) => id,
        }
    }
}

/// Whether `id` may name a host: 1 to [`MAX_HOST_ID_LEN`] bytes of ASCII
/// letters, digits, `-`, `_` and `.`.
pub fn valid_host_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_HOST_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Whether `channel` starts like a host channel (`$host:`, `$host-calls:`,
/// `$host-state:`), valid id or not: the relay's, never a client's to
/// publish to unless it is the host's own `$host:ID`.
pub fn is_host_channel(channel: &str) -> bool {
    [
        HOST_CHANNEL_PREFIX,
        CALLS_CHANNEL_PREFIX,
        STATE_CHANNEL_PREFIX,
    ]
    .iter()
    .any(|prefix| channel.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_channels_parse_to_their_kind_and_id() {
        assert_eq!(
            HostChannel::parse("$host:pc-1"),
            Some(HostChannel::Data("pc-1"))
        );
        assert_eq!(
            HostChannel::parse("$host-calls:pc-1"),
            Some(HostChannel::Calls("pc-1"))
        );
        assert_eq!(
            HostChannel::parse("$host-state:pc-1"),
            Some(HostChannel::State("pc-1"))
        );
        assert_eq!(HostChannel::parse("$host:"), None);
        assert_eq!(HostChannel::parse("$host:a b"), None);
        assert_eq!(HostChannel::parse("news"), None);
        assert!(is_host_channel("$host:a b"));
        assert!(!is_host_channel("$hostess"));
        assert!(!valid_host_id(&"x".repeat(MAX_HOST_ID_LEN + 1)));
    }
}
