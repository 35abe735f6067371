//! The server's clock: the one place belay-server reads time. The core
//! sees it as [`Instant`]s since the server started ([`Clock`]); I/O
//! deadlines (a TLS handshake, a PROXY header, a wait on another node) are
//! on tokio's clock ([`deadline_in`], [`left_until`]), and credentials
//! expire at std instants ([`std_now`]); epochs and execution names that
//! must differ from a previous process's take the wall clock ([`unix_nanos`]).

use std::time::{Duration, Instant as StdInstant};

use belay_proto::Instant;

/// Converts the monotonic clock into core [`Instant`]s since server start.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    origin: StdInstant,
}

impl Clock {
    pub(crate) fn new() -> Self {
        Clock {
            origin: StdInstant::now(),
        }
    }

    /// Now, on the core's scale.
    pub(crate) fn now(&self) -> Instant {
        Instant::from_elapsed(self.origin.elapsed())
    }

    /// A std instant on the core's scale (instants before the server
    /// started count as its start).
    pub(crate) fn core_instant(self, at: StdInstant) -> Instant {
        Instant::from_elapsed(at.saturating_duration_since(self.origin))
    }

    /// The std instant for a core instant (for `tokio::time::sleep_until`).
    pub(crate) fn to_std(self, at: Instant) -> StdInstant {
        self.origin + at.elapsed_since_origin()
    }
}

/// Now on the std clock (a credential's expiry is a std instant).
pub(crate) fn std_now() -> StdInstant {
    StdInstant::now()
}

/// The instant `after` from now on tokio's clock, for an I/O deadline.
pub(crate) fn deadline_in(after: Duration) -> tokio::time::Instant {
    tokio::time::Instant::now() + after
}

/// Time left until `deadline` on tokio's clock (zero once passed).
pub(crate) fn left_until(deadline: tokio::time::Instant) -> Duration {
    deadline.saturating_duration_since(tokio::time::Instant::now())
}

/// Nanoseconds since the Unix epoch on the wall clock (0 if it is set
/// before 1970): what makes an epoch or a name differ from the last
/// process's.
pub(crate) fn unix_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}
