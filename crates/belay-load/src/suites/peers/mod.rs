//! Belay's server against its peers, same load, same run (`server-bench
//! peers`, scripts/bench-peers.sh, docs/BENCHMARKS.md "Against socket.io
//! and ws"):
//!
//! ```text
//!   server-bench peers ──spawns──▶ Belay   (server-bench serve --kind belay)
//!        │                         floor   (server-bench serve --kind floor)
//!        │                         ws      (node peers/bench/server.mjs --kind ws)
//!        │                         socket.io (node peers/bench/server.mjs --kind socketio)
//!        └── idle / echo / broadcast loads: Belay's JSON frames to Belay,
//!            the floor and ws; socket.io v4 packets to socket.io
//! ```
//!
//! * [`bench`](mod@bench): the runs, the tables and the medians with ratios to Belay.
//!
//! Its parts shared with the other runs live with their kind:
//! [`clients::socketio`](crate::clients::socketio) (the socket.io client),
//! [`loads::socketio`](crate::loads::socketio) (the loads in socket.io) and
//! [`servers::child`](crate::servers::child) (a server under test as a child process).

pub mod bench;

use std::path::Path;
use std::process::Command;

use crate::clients::target::Target;
use crate::LoadError;

/// A server under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Peer {
    /// Belay's server (`server-bench serve --kind belay`).
    Belay,
    /// The bare tokio-websockets floor (`server-bench serve --kind floor`).
    Floor,
    /// A plain Node `ws` server speaking the floor's JSON subset.
    Ws,
    /// A socket.io server (Node).
    Socketio,
}

impl Peer {
    /// Its name in the tables.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Belay => "belay",
            Peer::Floor => "floor",
            Peer::Ws => "ws",
            Peer::Socketio => "socket.io",
        }
    }

    /// Whether it runs on Node (and answers `mem`).
    pub fn is_node(self) -> bool {
        matches!(self, Peer::Ws | Peer::Socketio)
    }

    /// The command that serves it with a heartbeat every `ping_interval_ms`:
    /// `exe` is a `server-bench` binary, `node` the Node binary and
    /// `node_server` peers/bench/server.mjs.
    pub fn command(
        self,
        exe: &Path,
        node: &Path,
        node_server: &Path,
        ping_interval_ms: u64,
    ) -> Command {
        let mut command;
        match self {
            Peer::Belay | Peer::Floor => {
                command = Command::new(exe);
                command.args([
                    "serve",
                    "--kind",
                    if self == Peer::Belay {
                        "belay"
                    } else {
                        "floor"
                    },
                ]);
            }
            Peer::Ws | Peer::Socketio => {
                command = Command::new(node);
                command
                    .arg(node_server)
                    .args(["--kind", if self == Peer::Ws { "ws" } else { "socketio" }]);
            }
        }
        command
            .arg("--ping-interval-ms")
            .arg(ping_interval_ms.to_string());
        command
    }

    /// The load's target on a server of this kind listening at `addr`.
    pub fn target(self, addr: std::net::SocketAddr) -> Result<Target, LoadError> {
        match self {
            Peer::Socketio => crate::clients::socketio::target(addr),
            _ => Target::local(addr),
        }
    }
}
