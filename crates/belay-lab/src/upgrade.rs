//! The `refuse_upgrades` toxic's look at a connection's first request: a
//! proxy that blocks WebSockets answers an upgrade itself and passes
//! everything else.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The most of a request head read before deciding (a longer head passes).
const MAX_HEAD: usize = 16 * 1024;
/// How long the client has to send its head (one that says nothing passes).
const HEAD_WAIT: Duration = Duration::from_secs(10);
/// The blocking proxy's answer to an upgrade.
const FORBIDDEN: &[u8] =
    b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// What the first request was.
pub(crate) enum Head {
    /// An upgrade: answered 403 and closed.
    Upgrade,
    /// Anything else: these bytes (read so far) go upstream first.
    Other(Vec<u8>),
}

/// Read `client`'s first request head and answer an upgrade; `None` when
/// the client went away first.
pub(crate) async fn screen(client: &mut TcpStream) -> Option<Head> {
    let mut head = Vec::with_capacity(1024);
    let read = tokio::time::timeout(HEAD_WAIT, async {
        let mut chunk = [0u8; 4096];
        while head.len() < MAX_HEAD && !ends_head(&head) {
            match client.read(&mut chunk).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => head.extend_from_slice(&chunk[..n]),
            }
        }
        true
    })
    .await;
    match read {
        Ok(false) => None,
        Ok(true) if asks_upgrade(&head) => {
            let _ = client.write_all(FORBIDDEN).await;
            let _ = client.shutdown().await;
            Some(Head::Upgrade)
        }
        _ => Some(Head::Other(head)),
    }
}

fn ends_head(bytes: &[u8]) -> bool {
    bytes.windows(4).any(|w| w == b"\r\n\r\n")
}

/// Whether a request head carries an `Upgrade` header.
fn asks_upgrade(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    text.split("\r\n")
        .skip(1)
        .take_while(|line| !line.is_empty())
        .any(|line| {
            line.split_once(':').is_some_and(|(name, value)| {
                name.trim().eq_ignore_ascii_case("upgrade") && !value.trim().is_empty()
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upgrade_header_in_any_case_is_an_upgrade() {
        assert!(asks_upgrade(
            b"GET /ws HTTP/1.1\r\nHost: h\r\nupgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
        ));
        assert!(asks_upgrade(
            b"GET /ws HTTP/1.1\r\nUPGRADE:websocket\r\n\r\n"
        ));
    }

    #[test]
    fn a_plain_request_is_not_even_with_upgrade_in_its_body_or_path() {
        assert!(!asks_upgrade(
            b"POST /upgrade HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\n\r\nUpgrade: websocket"
        ));
        assert!(!asks_upgrade(
            b"GET / HTTP/1.1\r\nX-Upgrade-Note: no\r\n\r\n"
        ));
    }
}
