//! Which client an agent runs: Belay's, the naive baseline, or one of the
//! real peers (socket.io-client, partysocket, reconnecting-websocket), each
//! in the lab process, in Node or in headless Chromium.

use std::fmt;
use std::str::FromStr;

/// Which client an agent runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ClientKind {
    /// The naive baseline ([`naive`](super::naive)): trusts socket events.
    Naive,
    /// `belay-client` with its default policy.
    Belay,
    /// The Python SDK (crates/belay-python: belay-client behind a native
    /// extension) in a Python process, through its lab agent
    /// (crates/belay-python/lab/agent.py).
    Python,
    /// The browser client (clients/js) in headless Chromium, via
    /// `clients/js/lab/agent.mjs`.
    Browser,
    /// The naive baseline in headless Chromium (same page, `--mode naive`).
    BrowserNaive,
    /// socket.io-client 4.8.3 with its defaults, in Node, against the lab's
    /// socket.io app (`peers/lab/server.mjs`) with socket.io's defaults.
    SocketIo,
    /// socket.io-client configured as its docs recommend for reliability
    /// (`ackTimeout` + `retries`), against the socket.io app with
    /// `connectionStateRecovery` and a 1 s heartbeat.
    SocketIoTuned,
    /// partysocket 1.3.0's reconnecting WebSocket (its defaults) under a
    /// minimal Belay-protocol app, in Node, against `belay serve --demo`.
    PartySocket,
    /// reconnecting-websocket 4.4.0 (its defaults) under the same minimal
    /// app, in Node, against `belay serve --demo`.
    Rws,
    /// [`ClientKind::SocketIo`] in headless Chromium.
    BrowserSocketIo,
    /// [`ClientKind::SocketIoTuned`] in headless Chromium.
    BrowserSocketIoTuned,
    /// [`ClientKind::PartySocket`] in headless Chromium.
    BrowserPartySocket,
    /// [`ClientKind::Rws`] in headless Chromium.
    BrowserRws,
}

impl ClientKind {
    /// Every kind, in table order.
    pub const ALL: [ClientKind; 13] = [
        ClientKind::Naive,
        ClientKind::Belay,
        ClientKind::Python,
        ClientKind::BrowserNaive,
        ClientKind::Browser,
        ClientKind::SocketIo,
        ClientKind::SocketIoTuned,
        ClientKind::PartySocket,
        ClientKind::Rws,
        ClientKind::BrowserSocketIo,
        ClientKind::BrowserSocketIoTuned,
        ClientKind::BrowserPartySocket,
        ClientKind::BrowserRws,
    ];

    /// The real peers, in table order.
    pub const PEERS: [ClientKind; 8] = [
        ClientKind::SocketIo,
        ClientKind::SocketIoTuned,
        ClientKind::PartySocket,
        ClientKind::Rws,
        ClientKind::BrowserSocketIo,
        ClientKind::BrowserSocketIoTuned,
        ClientKind::BrowserPartySocket,
        ClientKind::BrowserRws,
    ];

    /// The name used on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            ClientKind::Naive => "naive",
            ClientKind::Belay => "belay",
            ClientKind::Python => "python",
            ClientKind::BrowserNaive => "browser-naive",
            ClientKind::Browser => "browser",
            ClientKind::SocketIo => "socketio",
            ClientKind::SocketIoTuned => "socketio-tuned",
            ClientKind::PartySocket => "partysocket",
            ClientKind::Rws => "rws",
            ClientKind::BrowserSocketIo => "browser-socketio",
            ClientKind::BrowserSocketIoTuned => "browser-socketio-tuned",
            ClientKind::BrowserPartySocket => "browser-partysocket",
            ClientKind::BrowserRws => "browser-rws",
        }
    }

    /// Whether this kind is held to Belay's guarantees.
    pub fn is_belay(self) -> bool {
        matches!(
            self,
            ClientKind::Belay | ClientKind::Python | ClientKind::Browser
        )
    }

    /// Whether this kind runs in Chromium.
    pub fn in_browser(self) -> bool {
        matches!(
            self,
            ClientKind::Browser
                | ClientKind::BrowserNaive
                | ClientKind::BrowserSocketIo
                | ClientKind::BrowserSocketIoTuned
                | ClientKind::BrowserPartySocket
                | ClientKind::BrowserRws
        )
    }

    /// For a real peer: its name for `peers/lab/agent.mjs --client`.
    pub fn peer(self) -> Option<&'static str> {
        match self {
            ClientKind::SocketIo | ClientKind::BrowserSocketIo => Some("socketio"),
            ClientKind::SocketIoTuned | ClientKind::BrowserSocketIoTuned => Some("socketio-tuned"),
            ClientKind::PartySocket | ClientKind::BrowserPartySocket => Some("partysocket"),
            ClientKind::Rws | ClientKind::BrowserRws => Some("rws"),
            _ => None,
        }
    }

    /// For a socket.io client: the profile of the socket.io app it talks to
    /// (`peers/lab/server.mjs --profile`). Every other kind talks to
    /// `belay serve --demo`.
    pub fn socketio_profile(self) -> Option<&'static str> {
        match self.peer() {
            Some("socketio") => Some("default"),
            Some("socketio-tuned") => Some("tuned"),
            _ => None,
        }
    }
}

impl fmt::Display for ClientKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ClientKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ClientKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = ClientKind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown client {s:?} (one of {})", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for kind in ClientKind::ALL {
            assert_eq!(kind.name().parse::<ClientKind>(), Ok(kind));
        }
        assert!("nope".parse::<ClientKind>().is_err());
    }

    #[test]
    fn peers_are_named_for_their_agent_and_server() {
        for kind in ClientKind::PEERS {
            let peer = kind.peer().expect("a peer");
            assert!(kind.name().ends_with(peer));
            assert!(!kind.is_belay());
        }
        assert_eq!(ClientKind::Browser.peer(), None);
        assert_eq!(
            ClientKind::BrowserSocketIoTuned.socketio_profile(),
            Some("tuned")
        );
        assert_eq!(ClientKind::SocketIo.socketio_profile(), Some("default"));
        assert_eq!(ClientKind::Rws.socketio_profile(), None);
    }
}
