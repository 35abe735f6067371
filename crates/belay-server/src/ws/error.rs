//! Why the codec gave up on a peer, and the close code each reason asks for.

use std::io;

/// Why the codec gave up on the peer.
#[derive(Debug)]
pub(crate) enum WsError {
    /// The socket failed.
    Io(io::Error),
    /// The peer broke the framing rules (close 1002).
    Protocol(&'static str),
    /// A message longer than the limit (close 1009).
    TooBig,
    /// A text message or close reason that is not UTF-8 (close 1007).
    InvalidUtf8,
}

impl WsError {
    /// The close code the protocol asks for, if a close can still be sent.
    pub(crate) fn close_code(&self) -> Option<u16> {
        match self {
            WsError::Io(_) => None,
            WsError::Protocol(_) => Some(1002),
            WsError::TooBig => Some(1009),
            WsError::InvalidUtf8 => Some(1007),
        }
    }

    /// A short reason for the close frame.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            WsError::Io(_) => "",
            WsError::Protocol(why) => why,
            WsError::TooBig => "message too big",
            WsError::InvalidUtf8 => "invalid utf-8",
        }
    }
}

impl std::fmt::Display for WsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WsError::Io(e) => write!(f, "i/o error: {e}"),
            other => f.write_str(other.reason()),
        }
    }
}
