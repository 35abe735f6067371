//! A WebSocket echo server for the Autobahn conformance run
//! (`scripts/autobahn.sh`).
//!
//! Serves [`belay_server::conformance::echo_router`] at `/echo` and a default
//! Belay server at `/ws` on the same port, so both share one upgrade path.
//!
//! ```text
//! cargo run -p belay-server --example echo_server -- 127.0.0.1:9001
//! ```
//!
//! The argument is the address to listen on (default `127.0.0.1:9001`; port
//! 0 picks a free port). The first line on stdout is `listening on
//! ws://ADDR`, with the bound address.

use std::io::Write as _;
use std::net::SocketAddr;

use belay_server::conformance::echo_router;
use belay_server::Server;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr: SocketAddr = std::env::args()
        .nth(1)
        .as_deref()
        .unwrap_or("127.0.0.1:9001")
        .parse()?;
    let server = Server::builder().build();
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "listening on ws://{local}")?;
    stdout.flush()?;
    let router = echo_router().merge(server.router());
    server.serve(listener, router).await?;
    Ok(())
}
