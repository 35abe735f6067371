//! Why a call to a host failed, with the error code and message the relay
//! answers its caller (spec/PROTOCOL.md §10.3).

use std::time::Duration;

use crate::host::HostTiming;
use crate::message::ErrorBody;

/// Why a call to a host was refused or failed. The first four refuse a
/// call at once ([`HostCalls::handle_call`](super::HostCalls::handle_call));
/// the others settle a call that started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HostCallError {
    /// No host of that id has registered (`not_found`).
    #[error("no such host has registered")]
    UnknownHost,
    /// The host stopped calling the heartbeat endpoint (`host_offline`).
    #[error("the host is offline")]
    Offline,
    /// The host has as many calls as it may (`rate_limited`).
    #[error("the host has as many calls as it may")]
    HostBusy,
    /// This caller holds its share of the host's calls (`rate_limited`).
    #[error("this caller holds its share of the host's calls")]
    CallerBusy,
    /// The host did not wake within the wake bound (`host_asleep`).
    #[error("the host did not wake within the wake bound")]
    Asleep,
    /// The host's session ended after the call was delivered; it may have
    /// run (`host_lost`).
    #[error("the host's session ended during the call")]
    Lost,
    /// Delivered, and not answered by the deadline (`timeout`).
    #[error("the host did not answer in time")]
    Timeout,
}

impl HostCallError {
    /// The error code the caller reads.
    pub fn code(self) -> &'static str {
        match self {
            HostCallError::UnknownHost => "not_found",
            HostCallError::Offline => "host_offline",
            HostCallError::HostBusy | HostCallError::CallerBusy => "rate_limited",
            HostCallError::Asleep => "host_asleep",
            HostCallError::Lost => "host_lost",
            HostCallError::Timeout => "timeout",
        }
    }

    /// When the caller may retry: in a second when the host or its share
    /// is full, after one heartbeat interval when the host did not wake.
    pub fn retry_after(self, timing: &HostTiming) -> Option<Duration> {
        match self {
            HostCallError::HostBusy | HostCallError::CallerBusy => Some(Duration::from_secs(1)),
            HostCallError::Asleep => Some(timing.heartbeat_interval),
            _ => None,
        }
    }

    /// The error the relay answers a call to `host` with.
    pub fn error_body(self, host: &str, timing: &HostTiming) -> ErrorBody {
        let message = match self {
            HostCallError::UnknownHost => format!("no host {host:?} has registered"),
            HostCallError::Offline => format!(
                "host {host:?} has not called the heartbeat endpoint for {} ms",
                timing.offline_after().as_millis()
            ),
            HostCallError::HostBusy => format!("host {host:?} has as many calls as it may"),
            HostCallError::CallerBusy => {
                format!("this connection holds its share of host {host:?}'s calls")
            }
            HostCallError::Asleep => format!(
                "host {host:?} did not wake within {} ms (one heartbeat interval plus the connect allowance)",
                timing.wake_bound().as_millis()
            ),
            HostCallError::Lost => {
                "the host's session ended during the call; it may have run".to_owned()
            }
            HostCallError::Timeout => format!("host {host:?} did not answer in time"),
        };
        let mut body = ErrorBody::new(self.code(), message);
        body.retry_after_ms = self
            .retry_after(timing)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        body
    }
}
