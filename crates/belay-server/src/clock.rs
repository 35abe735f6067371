//! The server's clock, as the core sees it.

use std::time::Instant as StdInstant;

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
