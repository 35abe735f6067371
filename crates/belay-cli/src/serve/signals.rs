//! `belay serve`'s signals. The first SIGTERM or SIGINT starts the graceful
//! drain, as `POST /admin/drain` does: `/readyz` answers 503 at once, the
//! clients are advised to move after the balancer delay and closed 1012,
//! and the process exits once every connection is gone. A second signal
//! closes whatever is left at once with 1001 `server shutting down`; if a
//! connection still has not gone a second later, the process exits anyway.

use std::io;
use std::time::Duration;

use belay_server::Server;
use tokio::signal::unix::{signal, Signal, SignalKind};

/// How long after the second signal the process waits for the 1001 closes.
const FORCED_EXIT_AFTER: Duration = Duration::from_secs(1);

/// Watch for SIGTERM and SIGINT (Ctrl-C) for the life of the process.
pub(crate) fn drain_on_signals(server: Server) -> io::Result<()> {
    let mut signals = Signals {
        term: signal(SignalKind::terminate())?,
        int: signal(SignalKind::interrupt())?,
    };
    tokio::spawn(async move {
        let first = signals.next().await;
        tracing::info!(
            target: "belay::server",
            signal = first,
            connections = server.metrics().open_connections(),
            "drain started by signal (a second signal closes what is left)"
        );
        server.drain();
        let second = signals.next().await;
        tracing::warn!(
            target: "belay::server",
            signal = second,
            connections = server.metrics().open_connections(),
            "second signal: closing every connection left with 1001"
        );
        server.end_drain();
        tokio::time::sleep(FORCED_EXIT_AFTER).await;
        tracing::warn!(
            target: "belay::server",
            connections = server.metrics().open_connections(),
            "connections still open a second after the second signal: exiting"
        );
        std::process::exit(1);
    });
    Ok(())
}

struct Signals {
    term: Signal,
    int: Signal,
}

impl Signals {
    /// The name of the next signal.
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}
