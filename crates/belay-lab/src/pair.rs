//! One proxied connection: the client socket, its upstream socket, and the
//! one task that moves bytes between them and ends them when a toxic says.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpStream;
use tokio::time::{sleep_until, Instant};

use crate::direction::{forward, Stop, Way};
use crate::fault::Direction;
use crate::plan::{next_timer, Conn, Timer};
use crate::state::Shared;

/// How a pair ended.
enum End {
    /// Both directions reached EOF: close normally.
    Done,
    /// One side failed (for instance it was reset): reset the other too.
    Failed,
    /// A [`Fault::Reset`](crate::Fault::Reset) was ordered, or a
    /// `reset_peer` toxic fired: reset both.
    Reset,
    /// A `timeout` or `limit_data` toxic fired: close both.
    Close,
    /// The proxy was closed: close both.
    Stopped,
}

/// Join `client` to a fresh connection to `upstream` and forward until both
/// directions end, an error, a toxic ends the pair, or a reset ordered after
/// `resets_seen`. With `refuse_upgrades`, the client's first request head
/// is read first: an upgrade is answered `403` and closed, anything else is
/// forwarded ([`upgrade`](crate::upgrade)).
pub(crate) async fn run(
    mut client: TcpStream,
    upstream: SocketAddr,
    conn: Conn,
    resets_seen: u64,
    refuse_upgrades: bool,
    shared: Arc<Shared>,
) {
    let head = if refuse_upgrades {
        match crate::upgrade::screen(&mut client).await {
            Some(crate::upgrade::Head::Other(head)) => head,
            Some(crate::upgrade::Head::Upgrade) => return shared.counters.upgrade_refused(),
            None => return,
        }
    } else {
        Vec::new()
    };
    let mut server = match TcpStream::connect(upstream).await {
        Ok(server) => server,
        Err(e) => {
            tracing::debug!(%upstream, error = %e, "upstream unreachable; closing the client");
            shared.counters.upstream_failure();
            return;
        }
    };
    if !head.is_empty() {
        use tokio::io::AsyncWriteExt;
        if server.write_all(&head).await.is_err() {
            shared.counters.upstream_failure();
            return;
        }
        shared
            .counters
            .forwarded(Direction::ClientToServer, head.len());
    }
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    shared.counters.opened();
    let mut states = shared.watch();
    let end = {
        let (client_read, client_write) = client.split();
        let (server_read, server_write) = server.split();
        let way = |direction| Way {
            direction,
            conn,
            shared: &shared,
        };
        let both = async {
            tokio::try_join!(
                forward(client_read, server_write, way(Direction::ClientToServer)),
                forward(server_read, client_write, way(Direction::ServerToClient)),
            )
        };
        tokio::pin!(both);
        loop {
            let (timer, ordered_reset, closed) = {
                let state = states.borrow_and_update();
                (
                    next_timer(&state, &conn),
                    state.resets != resets_seen,
                    state.closed,
                )
            };
            if ordered_reset {
                break End::Reset;
            }
            if closed {
                break End::Stopped;
            }
            let fire_at = timer.map_or_else(far_future, |(at, _)| at);
            tokio::select! {
                result = &mut both => break match result {
                    Ok(_) => End::Done,
                    Err(Stop::LimitReached) => End::Close,
                    Err(Stop::Failed(e)) => {
                        tracing::debug!(error = %e, "one side failed; resetting the other");
                        End::Failed
                    }
                },
                changed = states.changed() => if changed.is_err() { break End::Stopped },
                () = sleep_until(fire_at), if timer.is_some() => break match timer {
                    Some((_, Timer::Reset)) => End::Reset,
                    _ => End::Close,
                },
            }
        }
    };
    shared.counters.closed();
    match end {
        End::Done | End::Stopped => {}
        End::Close => shared.counters.closed_by_toxic(),
        End::Reset | End::Failed => {
            if matches!(end, End::Reset) {
                shared.counters.reset();
            }
            // SO_LINGER 0: dropping the sockets sends an RST instead of a FIN.
            let _ = client.set_zero_linger();
            let _ = server.set_zero_linger();
        }
    }
}

fn far_future() -> Instant {
    Instant::now() + tokio::time::Duration::from_secs(86_400 * 365)
}
