//! Transport identity and the failures a driver reports.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Names one transport (one WebSocket, one SSE stream…) the session asked the
/// driver to open. Ids grow monotonically over the life of a session and are
/// never reused, so an input from a transport that has been replaced can
/// always be told apart from the current one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
// A value: the u64 is the whole id; drivers and the simulator build it as `TransportId(n)`.
#[allow(clippy::exhaustive_structs)]
pub struct TransportId(pub u64);

impl fmt::Display for TransportId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "transport#{}", self.0)
    }
}

/// Why a transport could not be opened, or failed without a close frame.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Failure {
    /// The attempt reached the server's side and failed there, or the driver
    /// cannot tell: connection refused, reset, TLS failure, timeout…
    Network {
        /// What the driver saw, for logs.
        #[serde(default)]
        detail: String,
    },
    /// The attempt never reached the server: this device has no route to it
    /// (network interface down, no route to host, name resolution impossible
    /// because there is no network). Such attempts cost the server nothing,
    /// so they are retried quickly and do not advance the backoff.
    Unreachable {
        /// What the driver saw, for logs.
        #[serde(default)]
        detail: String,
    },
    /// The HTTP upgrade was answered with a non-101 status.
    Rejected {
        /// The HTTP status. 401 and 403 are treated as authentication failures.
        status: u16,
        /// The response's `Retry-After` in ms (delta-seconds × 1000), if it
        /// had one. Taken as advice: the next dial is drawn uniformly in
        /// `[R, 2R)`, capped like every other server hint (spec §6).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
    },
    /// The driver cannot even try (malformed URL, unsupported scheme): this
    /// is a configuration error and is never retried.
    InvalidConfig {
        /// What is wrong.
        detail: String,
    },
}

impl Failure {
    /// An upgrade answered with `status` and no `Retry-After`.
    pub fn rejected(status: u16) -> Self {
        Failure::Rejected {
            status,
            retry_after_ms: None,
        }
    }

    /// A network failure with a detail message.
    pub fn network(detail: impl Into<String>) -> Self {
        Failure::Network {
            detail: detail.into(),
        }
    }

    /// A failure that never left this device, with a detail message.
    pub fn unreachable(detail: impl Into<String>) -> Self {
        Failure::Unreachable {
            detail: detail.into(),
        }
    }
}
