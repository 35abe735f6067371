//! The relay's half: what it knows of one host, and so whether the host
//! is needed and what state its clients see.
//!
//! Needed means a client is subscribed to the host's channel, a call to
//! the host is waiting or running, or the last call ended less than the
//! grace ago. The state clients see is derived, never stored: `ready` while
//! the host's session holds its calls channel; otherwise `waking` while it
//! is needed, `offline` when it stopped beating, `asleep` else.
//!
//! Relays sharing a broker share their hosts: what the other nodes say of
//! a host (its last heartbeat there, a session of it held there, a node
//! needing it) comes in as a [`SharedHost`] and counts as if seen here.

use std::sync::Arc;
use std::time::Duration;

use crate::time::Instant;

use super::HostTiming;

/// What the other relays sharing a broker say of a host, read from the
/// broker (`belay_server::HostDirectory`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SharedHost {
    /// How long ago the host last called the heartbeat endpoint of any
    /// relay (`None`: never, or forgotten).
    pub beat_age: Option<Duration>,
    /// A session of the host holds its calls channel on another relay.
    pub attached_elsewhere: bool,
    /// Another relay needs the host (subscribers, calls, grace).
    pub needed_elsewhere: bool,
    /// The other relays holding a session of the host (their node ids),
    /// where the directory names them ([`SharedHost::held_on`]): a call
    /// delivered while only they held it settles `host_lost` once none of
    /// them does, even if the host is held elsewhere by then (its session
    /// there never saw the call).
    pub holders: Vec<Arc<str>>,
}

impl SharedHost {
    /// A view: last beat `beat_age` ago, attached and needed elsewhere.
    pub fn new(
        beat_age: Option<Duration>,
        attached_elsewhere: bool,
        needed_elsewhere: bool,
    ) -> Self {
        SharedHost {
            beat_age,
            attached_elsewhere,
            needed_elsewhere,
            holders: Vec::new(),
        }
    }

    /// The same, naming the relays that hold a session of the host
    /// (attached elsewhere when there are any).
    pub fn held_on(mut self, nodes: impl IntoIterator<Item = Arc<str>>) -> Self {
        self.holders = nodes.into_iter().collect();
        self.holders.sort_unstable();
        self.holders.dedup();
        self.attached_elsewhere = !self.holders.is_empty();
        self
    }

    /// The relays holding the host, sorted: those named, or one unnamed
    /// relay when it is held elsewhere but the directory did not say
    /// where; empty when it is held nowhere else.
    pub fn holding_relays(&self) -> Vec<Arc<str>> {
        if self.holders.is_empty() && self.attached_elsewhere {
            vec![Arc::from("")]
        } else {
            self.holders.clone()
        }
    }
}

/// A host's state as its clients see it (`$host-state:ID`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HostState {
    /// Nobody needs it; it holds no session.
    Asleep,
    /// Needed, and not connected yet: calls wait for it.
    Waking,
    /// Its session is up: calls go through now.
    Ready,
    /// It has not called the heartbeat endpoint for
    /// [`HostTiming::offline_after`]: calls fail at once.
    Offline,
}

impl HostState {
    /// The wire name (`asleep`, `waking`, `ready`, `offline`).
    pub fn as_str(self) -> &'static str {
        match self {
            HostState::Asleep => "asleep",
            HostState::Waking => "waking",
            HostState::Ready => "ready",
            HostState::Offline => "offline",
        }
    }
}

/// One host as the relay sees it. Small and `Copy`: the relay holds one
/// per registered host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostRecord {
    last_beat: Instant,
    /// Sessions of this host holding its calls channel (usually 0 or 1; a
    /// reconnect can overlap the old session's end).
    attached: u32,
    /// Client subscriptions to `$host:ID`.
    subscribers: u32,
    /// Calls waiting for the host or running on it.
    calls: u32,
    /// When the last call ended.
    last_call_end: Option<Instant>,
    /// A session of it is held on another relay ([`SharedHost`]).
    attached_elsewhere: bool,
    /// Another relay needs it ([`SharedHost`]).
    needed_elsewhere: bool,
}

impl HostRecord {
    /// A host whose first heartbeat arrived at `now`.
    pub fn new(now: Instant) -> Self {
        HostRecord {
            last_beat: now,
            attached: 0,
            subscribers: 0,
            calls: 0,
            last_call_end: None,
            attached_elsewhere: false,
            needed_elsewhere: false,
        }
    }

    /// What the other relays say of the host, read at `now`.
    pub fn handle_shared(&mut self, now: Instant, shared: SharedHost) {
        if let Some(age) = shared.beat_age {
            self.last_beat = self.last_beat.max(now.saturating_sub(age));
        }
        self.attached_elsewhere = shared.attached_elsewhere;
        self.needed_elsewhere = shared.needed_elsewhere;
    }

    /// A heartbeat from the host at `now`; the answer is
    /// [`needed`](Self::needed).
    pub fn handle_beat(&mut self, now: Instant) {
        self.last_beat = self.last_beat.max(now);
    }

    /// A session of the host now holds its calls channel.
    pub fn handle_attached(&mut self) {
        self.attached = self.attached.saturating_add(1);
    }

    /// A session of the host let go of its calls channel.
    pub fn handle_detached(&mut self, now: Instant) {
        self.attached = self.attached.saturating_sub(1);
        // Its session just ended: count from here, not from a beat that
        // may be an interval old.
        self.last_beat = self.last_beat.max(now);
    }

    /// A client subscribed to the host's channel.
    pub fn handle_subscribed(&mut self) {
        self.subscribers = self.subscribers.saturating_add(1);
    }

    /// A client's subscription to the host's channel ended.
    pub fn handle_unsubscribed(&mut self) {
        self.subscribers = self.subscribers.saturating_sub(1);
    }

    /// A call for the host arrived.
    pub fn handle_call_started(&mut self) {
        self.calls = self.calls.saturating_add(1);
    }

    /// A call ended (answered, refused or given up) at `now`.
    pub fn handle_call_ended(&mut self, now: Instant) {
        self.calls = self.calls.saturating_sub(1);
        self.last_call_end = Some(self.last_call_end.map_or(now, |at| at.max(now)));
    }

    /// Whether anyone needs the host at `now` (here or on another relay).
    pub fn needed(&self, now: Instant, timing: &HostTiming) -> bool {
        self.needed_elsewhere || self.needed_here(now, timing)
    }

    /// Whether anyone on this relay needs the host at `now`.
    pub fn needed_here(&self, now: Instant, timing: &HostTiming) -> bool {
        self.subscribers > 0
            || self.calls > 0
            || self
                .last_call_end
                .is_some_and(|end| now.saturating_duration_since(end) < timing.grace)
    }

    /// The state its clients see at `now`.
    pub fn state(&self, now: Instant, timing: &HostTiming) -> HostState {
        if self.is_attached() {
            HostState::Ready
        } else if now.saturating_duration_since(self.last_beat) >= timing.offline_after() {
            HostState::Offline
        } else if self.needed(now, timing) {
            HostState::Waking
        } else {
            HostState::Asleep
        }
    }

    /// Calls waiting or running.
    pub fn calls(&self) -> u32 {
        self.calls
    }

    /// Whether a session of the host holds its calls channel, here or on
    /// another relay.
    pub fn is_attached(&self) -> bool {
        self.attached > 0 || self.attached_elsewhere
    }

    /// Whether a session of the host holds its calls channel on this relay.
    pub fn is_attached_here(&self) -> bool {
        self.attached > 0
    }

    /// Whether the relay may forget the host at `now`: offline, with
    /// nothing that refers to it.
    pub fn is_forgettable(&self, now: Instant, timing: &HostTiming) -> bool {
        self.attached == 0
            && self.subscribers == 0
            && self.calls == 0
            && self.state(now, timing) == HostState::Offline
    }
}
