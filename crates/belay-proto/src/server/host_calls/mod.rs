//! [`HostCalls`]: the life of every `$call` to a resident host, and the
//! relay's table of hosts it needs (spec/PROTOCOL.md §10, docs/HOSTS.md).

mod calls;
mod error;
mod table;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use crate::host::{HostState, HostTiming};
use crate::message::{Payload, Reply};

pub use calls::HostCalls;
pub use error::HostCallError;

/// How long a delivered call may wait for its host's answer beyond the
/// wake bound, from the call's start: 10 s.
pub const DEFAULT_ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// The bounds and timing of [`HostCalls`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostCallsConfig {
    /// The relay's host timing (heartbeat interval, connect allowance,
    /// grace, offline threshold).
    pub timing: HostTiming,
    /// Most hosts recorded at once (offline hosts nobody refers to are
    /// forgotten to make room). Default 10,000.
    pub max_hosts: usize,
    /// Most calls waiting or running per host; one caller holds at most
    /// [`max_calls_per_caller`](crate::host::max_calls_per_caller) of them.
    /// Default 64.
    pub max_calls_per_host: usize,
    /// A delivered call's deadline is its start plus
    /// [`HostTiming::call_deadline`] of this. Default
    /// [`DEFAULT_ANSWER_TIMEOUT`].
    pub answer_timeout: Duration,
    /// The id of the first call; the next ones count up from it. Nodes
    /// sharing a broker share the hosts' `$host-calls:ID` channels, so each
    /// starts at a different (random) point: a delivery or an answer is
    /// never mistaken for another node's call of the same host. Default 0.
    pub first_call_id: u64,
}

impl Default for HostCallsConfig {
    fn default() -> Self {
        HostCallsConfig {
            timing: HostTiming::default(),
            max_hosts: 10_000,
            max_calls_per_host: 64,
            answer_timeout: DEFAULT_ANSWER_TIMEOUT,
            first_call_id: 0,
        }
    }
}

impl HostCallsConfig {
    /// With this host timing.
    pub fn with_timing(mut self, timing: HostTiming) -> Self {
        self.timing = timing;
        self
    }

    /// With at most `hosts` records and `calls` calls per host.
    pub fn with_bounds(mut self, hosts: usize, calls: usize) -> Self {
        self.max_hosts = hosts;
        self.max_calls_per_host = calls;
        self
    }

    /// With `timeout` for a woken host to answer.
    pub fn with_answer_timeout(mut self, timeout: Duration) -> Self {
        self.answer_timeout = timeout;
        self
    }

    /// Number calls from `id` on ([`first_call_id`](Self::first_call_id)).
    pub fn with_first_call_id(mut self, id: u64) -> Self {
        self.first_call_id = id;
        self
    }
}

/// A call's id: the `call` of its delivery and of the host's `$answer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CallId(u64);

impl CallId {
    /// The id a host's `$answer` names.
    pub fn from_u64(id: u64) -> Self {
        CallId(id)
    }

    /// The id on the wire.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

/// A `$call` whose params and access were checked by the driver.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CallRequest {
    /// The host called.
    pub host: Arc<str>,
    /// Who calls (one connection): the unit of the per-caller share.
    pub caller: Arc<str>,
    /// The host's method.
    pub method: String,
    /// Its params.
    pub params: Payload,
}

impl CallRequest {
    /// A call of `method` with `params` on `host` by `caller`.
    pub fn new(
        host: impl Into<Arc<str>>,
        caller: impl Into<Arc<str>>,
        method: impl Into<String>,
        params: Payload,
    ) -> Self {
        CallRequest {
            host: host.into(),
            caller: caller.into(),
            method: method.into(),
            params,
        }
    }
}

/// A call to publish on the host's `$host-calls:ID` channel.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Delivery {
    /// The call's id (`call` on the wire).
    pub call: CallId,
    /// The host it goes to.
    pub host: Arc<str>,
    /// The host's method.
    pub method: String,
    /// Its params.
    pub params: Payload,
}

/// What the driver must do.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HostCallOutput {
    /// Publish the call on `$host-calls:ID`. If that fails, end the call
    /// with [`HostCalls::handle_call_ended`] and tell its caller why.
    Deliver(Delivery),
    /// The call is over (and no longer counts): answer its caller with the
    /// host's reply or the relay's error.
    Settled {
        /// The call.
        call: CallId,
        /// The host it was for.
        host: Arc<str>,
        /// The host's reply, or why there is none.
        outcome: Result<Reply, HostCallError>,
    },
    /// The host's state as clients see it changed: publish it on
    /// `$host-state:ID`.
    StateChanged {
        /// The host.
        host: Arc<str>,
        /// Its new state.
        state: HostState,
    },
}

/// What a heartbeat is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BeatAnswer {
    /// Whether anyone needs the host now (it should hold a session).
    pub needed: bool,
    /// Its state.
    pub state: HostState,
}

/// One host, as a listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostView {
    /// Its id.
    pub host: Arc<str>,
    /// Its state.
    pub state: HostState,
    /// Whether anyone needs it.
    pub needed: bool,
    /// Calls waiting for it or running on it.
    pub calls: u32,
}

/// A new host while [`HostCallsConfig::max_hosts`] are recorded and none
/// can be forgotten.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the relay holds as many hosts as it may")]
#[non_exhaustive]
pub struct RegistryFull;

/// An `$answer` that matches no call waiting for this host's answer
/// (answered already, settled, another host's, or never delivered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no call {} waits for an answer from this host", .0.as_u64())]
#[non_exhaustive]
pub struct NoSuchCall(pub CallId);
