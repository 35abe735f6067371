//! [`ErrorCode`]: the wire's error codes (spec/PROTOCOL.md §4.5), typed.

use std::fmt;

/// The `code` of a server's error (spec/PROTOCOL.md §4.5).
///
/// A code this client does not know (a newer server's, an application's)
/// is kept as [`ErrorCode::Other`] with its text; the protocol says to treat
/// it like [`ErrorCode::Internal`], which [`ErrorCode::is_known`] helps with.
/// Compares with its wire text too:
///
/// ```
/// use belay_client::ErrorCode;
///
/// let code = ErrorCode::from("rate_limited");
/// assert_eq!(code, ErrorCode::RateLimited);
/// assert_eq!(code, "rate_limited");
/// assert_eq!(ErrorCode::from("teapot"), ErrorCode::Other("teapot".into()));
/// assert_eq!(ErrorCode::Forbidden.as_str(), "forbidden");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The request is malformed or its params are invalid.
    BadRequest,
    /// No such method.
    UnknownMethod,
    /// Credentials missing, invalid or expired.
    Unauthorized,
    /// Authenticated, but not allowed to do this.
    Forbidden,
    /// The target of the method does not exist.
    NotFound,
    /// Too many requests: retry after `retry_after_ms` if given.
    RateLimited,
    /// The service behind the server is temporarily unavailable.
    Unavailable,
    /// Unexpected server failure: the request may have run.
    Internal,
    /// The server gave up on the method: the request may have run.
    Timeout,
    /// The request or its result exceeds a server limit.
    TooLarge,
    /// `$call`: the host did not wake within the wake bound.
    HostAsleep,
    /// `$call`: the host stopped calling the heartbeat endpoint.
    HostOffline,
    /// `$call`: the host's session ended after the call reached it.
    HostLost,
    /// A subscription fell too far behind (in `unsubscribed`).
    Lagged,
    /// A code this client does not know, as the server sent it.
    Other(String),
}

/// Every known code with its wire text.
const KNOWN: [(ErrorCode, &str); 14] = [
    (ErrorCode::BadRequest, "bad_request"),
    (ErrorCode::UnknownMethod, "unknown_method"),
    (ErrorCode::Unauthorized, "unauthorized"),
    (ErrorCode::Forbidden, "forbidden"),
    (ErrorCode::NotFound, "not_found"),
    (ErrorCode::RateLimited, "rate_limited"),
    (ErrorCode::Unavailable, "unavailable"),
    (ErrorCode::Internal, "internal"),
    (ErrorCode::Timeout, "timeout"),
    (ErrorCode::TooLarge, "too_large"),
    (ErrorCode::HostAsleep, "host_asleep"),
    (ErrorCode::HostOffline, "host_offline"),
    (ErrorCode::HostLost, "host_lost"),
    (ErrorCode::Lagged, "lagged"),
];

impl ErrorCode {
    /// The code's wire text.
    pub fn as_str(&self) -> &str {
        match self {
            ErrorCode::Other(text) => text,
            known => KNOWN
                .iter()
                .find(|(code, _)| code == known)
                .map_or("internal", |(_, text)| text),
        }
    }

    /// Whether this is one of the registered codes (not [`ErrorCode::Other`]).
    pub fn is_known(&self) -> bool {
        !matches!(self, ErrorCode::Other(_))
    }
}

impl From<&str> for ErrorCode {
    fn from(text: &str) -> Self {
        KNOWN.iter().find(|(_, known)| *known == text).map_or_else(
            || ErrorCode::Other(text.to_owned()),
            |(code, _)| code.clone(),
        )
    }
}

impl From<String> for ErrorCode {
    fn from(text: String) -> Self {
        match ErrorCode::from(text.as_str()) {
            ErrorCode::Other(_) => ErrorCode::Other(text),
            known => known,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for ErrorCode {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_code_round_trips_through_its_text() {
        for (code, text) in &KNOWN {
            assert_eq!(ErrorCode::from(*text), *code);
            assert_eq!(code.as_str(), *text);
            assert!(code.is_known());
        }
    }

    #[test]
    fn an_unknown_code_keeps_its_text() {
        let code = ErrorCode::from(String::from("quota_exceeded"));
        assert_eq!(code, ErrorCode::Other("quota_exceeded".into()));
        assert_eq!(code.as_str(), "quota_exceeded");
        assert!(!code.is_known());
        assert_eq!(code.to_string(), "quota_exceeded");
    }
}
