//! One proxied connection: the client socket, its upstream socket, and the
//! one task that moves bytes between them.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpStream;

use crate::direction::forward;
use crate::fault::Direction;
use crate::state::Shared;

/// How a pair ended.
enum End {
    /// Both directions reached EOF: close normally.
    Done,
    /// One side failed (for instance it was reset): reset the other too.
    Failed,
    /// A [`Fault::Reset`](crate::Fault::Reset) was ordered.
    Reset,
}

/// Join `client` to a fresh connection to `upstream` and forward until both
/// directions end, an error, or a reset ordered after `resets_seen`.
pub(crate) async fn run(
    mut client: TcpStream,
    upstream: SocketAddr,
    resets_seen: u64,
    shared: Arc<Shared>,
) {
    let mut server = match TcpStream::connect(upstream).await {
        Ok(server) => server,
        Err(e) => {
            tracing::debug!(%upstream, error = %e, "upstream unreachable; closing the client");
            shared.counters.upstream_failure();
            return;
        }
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    shared.counters.opened();
    let mut resets = shared.watch();
    let end = {
        let (client_read, client_write) = client.split();
        let (server_read, server_write) = server.split();
        let both = async {
            tokio::try_join!(
                forward(
                    client_read,
                    server_write,
                    Direction::ClientToServer,
                    &shared
                ),
                forward(
                    server_read,
                    client_write,
                    Direction::ServerToClient,
                    &shared
                ),
            )
        };
        tokio::select! {
            result = both => if result.is_ok() { End::Done } else { End::Failed },
            _ = resets.wait_for(|s| s.resets != resets_seen) => End::Reset,
        }
    };
    shared.counters.closed();
    if matches!(end, End::Done) {
        return;
    }
    if matches!(end, End::Reset) {
        shared.counters.reset();
    }
    // SO_LINGER 0: dropping the sockets sends an RST instead of a FIN.
    let _ = client.set_zero_linger();
    let _ = server.set_zero_linger();
}
