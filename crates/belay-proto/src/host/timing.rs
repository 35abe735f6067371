//! The numbers the relay and its hosts share, and the wake bound.
//!
//! A call to a sleeping host is answered only after the host's next
//! heartbeat learns it is needed and its session connects: at worst one
//! heartbeat interval plus the connect time. The relay waits that long
//! before refusing the call (`host_asleep`), and a caller's deadline must
//! be longer still, or the first call after a quiet period fails although
//! a little more patience would have succeeded.

use std::time::Duration;

/// The relay's host timing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostTiming {
    /// How often hosts call the heartbeat endpoint (the relay tells them
    /// in every reply). Default 15 s.
    pub heartbeat_interval: Duration,
    /// How long a host may take from a `needed: true` answer to a session
    /// that holds its calls channel (connect, welcome, subscribe).
    /// Default 5 s.
    pub connect_allowance: Duration,
    /// How long after its last call ended a host stays needed, so a
    /// conversation of several calls does not put it to sleep between
    /// them. Default 60 s.
    pub grace: Duration,
    /// A host that has not called the heartbeat endpoint for this many
    /// intervals, and holds no session, is offline: calls to it fail at
    /// once instead of waiting. Default 3.
    pub offline_after_beats: u32,
}

impl Default for HostTiming {
    fn default() -> Self {
        HostTiming {
            heartbeat_interval: Duration::from_secs(15),
            connect_allowance: Duration::from_secs(5),
            grace: Duration::from_secs(60),
            offline_after_beats: 3,
        }
    }
}

impl HostTiming {
    /// With hosts beating every `interval`.
    pub fn with_heartbeat_interval(mut self, interval: Duration) -> Self {
        self.heartbeat_interval = interval;
        self
    }

    /// With `allowance` for a woken host to connect.
    pub fn with_connect_allowance(mut self, allowance: Duration) -> Self {
        self.connect_allowance = allowance;
        self
    }

    /// With hosts needed for `grace` after their last call.
    pub fn with_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// The longest a call waits for a sleeping host to be ready: one
    /// heartbeat interval plus the connect allowance.
    pub fn wake_bound(&self) -> Duration {
        self.heartbeat_interval
            .saturating_add(self.connect_allowance)
    }

    /// A caller's deadline for a call whose method itself may take
    /// `method_time`: the wake bound plus that.
    pub fn call_deadline(&self, method_time: Duration) -> Duration {
        self.wake_bound().saturating_add(method_time)
    }

    /// How long without a heartbeat makes a detached host offline.
    pub fn offline_after(&self) -> Duration {
        self.heartbeat_interval
            .saturating_mul(self.offline_after_beats.max(1))
    }
}
