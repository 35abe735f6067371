//! Where the connection stands: the reconnect controller's state.

use serde::Serialize;

use crate::client::transport::TransportId;
use crate::heartbeat::Heartbeat;
use crate::time::Instant;

/// The connection's state, as the application may want to show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ConnectionState {
    /// Created; `start()` not called yet.
    Idle,
    /// Dialing a transport (or getting a token for it from the provider).
    Connecting,
    /// The transport is open; waiting for `welcome`.
    Handshaking,
    /// The session is established.
    Open,
    /// Waiting out a backoff delay before the next attempt.
    Waiting,
    /// The device is offline; the next attempt waits for `online`.
    Offline,
    /// Automatic reconnection stopped; `start`/`reconnect_now` resumes.
    Halted,
    /// `stop()` was called; final.
    Stopped,
}

/// Internal state with the data each state needs. Only `Connecting`,
/// `Handshaking` and `Open` own a transport, so "at most one live
/// transport" holds by construction.
#[derive(Debug, Clone)]
pub(crate) enum Phase {
    Idle,
    /// Waiting for the token provider's answer before a dial.
    Authorizing {
        deadline: Instant,
    },
    Connecting {
        id: TransportId,
        deadline: Instant,
    },
    Handshaking {
        id: TransportId,
        deadline: Instant,
    },
    Open {
        id: TransportId,
        heartbeat: Heartbeat,
        /// Deadline of a liveness check ([`super::Session::check_liveness`]);
        /// any inbound frame clears it.
        check: Option<Instant>,
    },
    Waiting {
        until: Instant,
    },
    Offline,
    Halted,
    Stopped,
}

impl Phase {
    /// The transport this phase owns, if any.
    pub(crate) fn transport(&self) -> Option<TransportId> {
        match self {
            Phase::Connecting { id, .. }
            | Phase::Handshaking { id, .. }
            | Phase::Open { id, .. } => Some(*id),
            _ => None,
        }
    }

    pub(crate) fn state(&self) -> ConnectionState {
        match self {
            Phase::Idle => ConnectionState::Idle,
            Phase::Authorizing { .. } | Phase::Connecting { .. } => ConnectionState::Connecting,
            Phase::Handshaking { .. } => ConnectionState::Handshaking,
            Phase::Open { .. } => ConnectionState::Open,
            Phase::Waiting { .. } => ConnectionState::Waiting,
            Phase::Offline => ConnectionState::Offline,
            Phase::Halted => ConnectionState::Halted,
            Phase::Stopped => ConnectionState::Stopped,
        }
    }

    /// The phase's own deadline (connect/handshake timeout, end of a wait,
    /// next heartbeat decision).
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Phase::Authorizing { deadline }
            | Phase::Connecting { deadline, .. }
            | Phase::Handshaking { deadline, .. } => Some(*deadline),
            Phase::Open {
                heartbeat, check, ..
            } => Some(check.map_or(heartbeat.poll_timeout(), |c| {
                c.min(heartbeat.poll_timeout())
            })),
            Phase::Waiting { until } => Some(*until),
            Phase::Idle | Phase::Offline | Phase::Halted | Phase::Stopped => None,
        }
    }
}
