//! Close codes and what each one means for reconnecting.
//!
//! | code | name | who sends it | client reaction |
//! |------|------|--------------|-----------------|
//! | 1000 | normal | either side | terminal: the server ended the session on purpose |
//! | 1001 | going away | server shutting down; client going offline while connecting | retry |
//! | 1002 | protocol error | either | retry |
//! | 1006 | (abnormal) | never sent: observed when no close frame arrived | retry |
//! | 1007 | invalid data | either | retry |
//! | 1008 | policy violation | server | terminal |
//! | 1009 | message too big | either (a frame over the 1 MiB limit) | retry |
//! | 1011 | internal error | server | retry |
//! | 1012 | service restart | server | retry, following the server's advice |
//! | 1013 | try again later | server (overload) | retry, following the server's advice |
//! | 4000 | heartbeat timeout | either (the peer stopped answering) | retry |
//! | 4001 | unauthorized | server | terminal, credentials must be refreshed |
//! | 4003 | forbidden | server | terminal |
//! | 4008 | handshake timeout | server (no `connect` in time); client (no open or `welcome` in time) | retry |
//! | 4009 | slow consumer | server (client did not read fast enough) | retry |
//! | 4029 | rate limited | server | retry, following the server's advice |

use std::fmt;

use serde::{Deserialize, Serialize};

/// A WebSocket close code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
// A value: the u16 is the whole close code (the constants below, or any code a peer sends).
#[allow(clippy::exhaustive_structs)]
pub struct CloseCode(pub u16);

impl CloseCode {
    /// 1000: normal closure.
    pub const NORMAL: CloseCode = CloseCode(1000);
    /// 1001: the endpoint is going away.
    pub const GOING_AWAY: CloseCode = CloseCode(1001);
    /// 1002: protocol error.
    pub const PROTOCOL_ERROR: CloseCode = CloseCode(1002);
    /// 1006: no close frame was received. Observed only, never sent.
    pub const ABNORMAL: CloseCode = CloseCode(1006);
    /// 1007: invalid frame payload.
    pub const INVALID_DATA: CloseCode = CloseCode(1007);
    /// 1008: policy violation.
    pub const POLICY_VIOLATION: CloseCode = CloseCode(1008);
    /// 1009: message too big.
    pub const TOO_BIG: CloseCode = CloseCode(1009);
    /// 1011: internal server error.
    pub const INTERNAL_ERROR: CloseCode = CloseCode(1011);
    /// 1012: service restart.
    pub const SERVICE_RESTART: CloseCode = CloseCode(1012);
    /// 1013: try again later.
    pub const TRY_AGAIN_LATER: CloseCode = CloseCode(1013);
    /// 4000: the peer stopped answering heartbeats.
    pub const HEARTBEAT_TIMEOUT: CloseCode = CloseCode(4000);
    /// 4001: authentication failed or expired.
    pub const UNAUTHORIZED: CloseCode = CloseCode(4001);
    /// 4003: authenticated but not allowed.
    pub const FORBIDDEN: CloseCode = CloseCode(4003);
    /// 4008: the handshake did not complete in time.
    pub const HANDSHAKE_TIMEOUT: CloseCode = CloseCode(4008);
    /// 4009: the client read too slowly.
    pub const SLOW_CONSUMER: CloseCode = CloseCode(4009);
    /// 4029: too many requests or connections.
    pub const RATE_LIMITED: CloseCode = CloseCode(4029);

    /// What a client should do after the server closed with this code.
    pub fn disposition(self) -> CloseDisposition {
        match self {
            CloseCode::NORMAL | CloseCode::POLICY_VIOLATION | CloseCode::FORBIDDEN => {
                CloseDisposition::Terminal
            }
            CloseCode::UNAUTHORIZED => CloseDisposition::AuthFailed,
            CloseCode::SERVICE_RESTART | CloseCode::TRY_AGAIN_LATER | CloseCode::RATE_LIMITED => {
                CloseDisposition::RetryWithAdvice
            }
            _ => CloseDisposition::Retry,
        }
    }
}

impl fmt::Display for CloseCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// How a client reacts to a close code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CloseDisposition {
    /// Do not reconnect until the application says so.
    Terminal,
    /// Do not reconnect: credentials must be refreshed first.
    AuthFailed,
    /// Reconnect, honouring the server's `reconnect` advice if it sent one.
    RetryWithAdvice,
    /// Reconnect with the normal backoff.
    Retry,
}

/// What the driver observed when a transport closed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CloseInfo {
    /// The code from the peer's close frame; `None` when no close frame
    /// arrived (what browsers report as 1006).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<CloseCode>,
    /// The reason text from the close frame.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

impl CloseInfo {
    /// A close frame with `code` and `reason`.
    pub fn new(code: CloseCode, reason: impl Into<String>) -> Self {
        CloseInfo {
            code: Some(code),
            reason: reason.into(),
        }
    }

    /// The connection ended without a close frame.
    pub fn abnormal() -> Self {
        CloseInfo::default()
    }

    /// What the client should do; a missing close frame means retry.
    pub fn disposition(&self) -> CloseDisposition {
        self.code
            .map_or(CloseDisposition::Retry, CloseCode::disposition)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_policy_and_forbidden_closes_are_terminal() {
        for code in [
            CloseCode::NORMAL,
            CloseCode::POLICY_VIOLATION,
            CloseCode::FORBIDDEN,
        ] {
            assert_eq!(code.disposition(), CloseDisposition::Terminal, "{code}");
        }
        assert_eq!(
            CloseCode::UNAUTHORIZED.disposition(),
            CloseDisposition::AuthFailed
        );
    }

    #[test]
    fn restart_and_try_again_later_retry_with_the_servers_advice() {
        for code in [
            CloseCode::SERVICE_RESTART,
            CloseCode::TRY_AGAIN_LATER,
            CloseCode::RATE_LIMITED,
        ] {
            assert_eq!(
                code.disposition(),
                CloseDisposition::RetryWithAdvice,
                "{code}"
            );
        }
    }

    #[test]
    fn everything_else_including_a_missing_close_frame_retries() {
        for code in [1001, 1002, 1006, 1011, 4000, 4009, 3999, 4999] {
            assert_eq!(
                CloseCode(code).disposition(),
                CloseDisposition::Retry,
                "{code}"
            );
        }
        assert_eq!(CloseInfo::abnormal().disposition(), CloseDisposition::Retry);
    }
}
