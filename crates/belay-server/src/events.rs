//! A live feed of what the server does, for the demo page and operators.

use serde::Serialize;

/// One thing that happened.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ServerEvent {
    /// Milliseconds since the server started.
    pub at_ms: u64,
    /// `connect`, `disconnect`, `reap`, `fault`, `drain`, `admission_refused`.
    pub kind: &'static str,
    /// Details for a human.
    pub detail: String,
    /// Connections open after the event.
    pub connections: i64,
}
