//! The transport column: whether the clients may use WebSockets in a
//! repetition, or find them blocked throughout and run on the SSE + HTTP
//! fallback (spec/PROTOCOL.md §1.7).

use std::fmt;
use std::str::FromStr;

/// What the path between client and server lets through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LabTransport {
    /// Everything: the clients use WebSockets (and fall back only when a
    /// fault makes them).
    WebSocket,
    /// The fault proxy answers every upgrade `403` from the start
    /// (`refuse_upgrades`, docs/PROXY.md): the Belay clients run on the
    /// fallback, and the fault comes on top.
    Sse,
}

impl LabTransport {
    /// Every transport, in table order.
    pub const ALL: [LabTransport; 2] = [LabTransport::WebSocket, LabTransport::Sse];

    /// The name on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            LabTransport::WebSocket => "websocket",
            LabTransport::Sse => "sse",
        }
    }
}

impl fmt::Display for LabTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LabTransport {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LabTransport::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| format!("unknown transport {s:?} (websocket, sse)"))
    }
}
