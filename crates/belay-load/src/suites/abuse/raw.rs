//! Raw TCP sockets from the attacker's address, for the abuses below the
//! WebSocket layer: open `count` of them (256 dials in flight at most),
//! run a body on each, and open another when the server closes one.

use std::future::Future;
use std::time::Duration;

use futures_util::future::join_all;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use super::attack::Attack;

/// Dials in flight at once.
const DIALS: usize = 256;

/// Sockets each slot opens at most (the first and two replacements).
const ATTEMPTS: usize = 3;

/// Hold `count` sockets (at most the attacker's descriptor budget), each
/// given to `body`, which returns when the server closed it or the attack
/// ended.
pub(super) async fn hold<F, Fut>(attack: &Attack, count: usize, body: F)
where
    F: Fn(usize, TcpStream) -> Fut,
    Fut: Future<Output = ()>,
{
    let dials = Semaphore::new(DIALS);
    let slots = (0..count.min(attack.fd_budget)).map(|slot| {
        let (dials, body) = (&dials, &body);
        async move {
            for _ in 0..ATTEMPTS {
                if !attack.running() {
                    return;
                }
                let Ok(permit) = dials.acquire().await else {
                    return;
                };
                let stream = attack.dial().await;
                drop(permit);
                match stream {
                    Some(stream) => body(slot, stream).await,
                    None => {
                        attack
                            .bounded(tokio::time::sleep(Duration::from_millis(100)))
                            .await;
                    }
                }
            }
        }
    });
    join_all(slots).await;
}

/// Read (and discard) until the server closes the connection (`true`,
/// counted as `closed by server`) or the attack ends (`false`).
pub(super) async fn closed_by_server<R: AsyncReadExt + Unpin>(
    attack: &Attack,
    read: &mut R,
) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        match attack.bounded(read.read(&mut buf)).await {
            None => return false,
            Some(Ok(n)) if n > 0 => {}
            Some(_) => {
                attack.effort.note("closed by server", 1);
                return true;
            }
        }
    }
}

/// A complete WebSocket upgrade request for the server at `host`.
pub(super) fn upgrade_request(host: &str) -> String {
    format!(
        "GET /ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
}
