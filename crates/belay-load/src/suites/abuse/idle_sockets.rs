//! `idle-sockets`: 5,000 TCP connections (fewer if the descriptor limit is
//! lower) held open: half never send a byte, half send an upgrade request
//! without its final blank line and then nothing. A connection the server
//! closes is replaced (twice at most).

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::attack::Attack;
use super::raw;

pub(super) const SUMMARY: &str =
    "5,000 TCP connections held: half silent, half stopping inside the upgrade request; replaced when closed";

/// Connections held at once.
const SOCKETS: usize = 5_000;

pub(super) async fn run(attack: &Attack) {
    let request = raw::upgrade_request(&attack.target.addr.to_string());
    // Everything but the blank line that ends the headers.
    let unfinished = request.trim_end_matches("\r\n").to_owned() + "\r\n";
    raw::hold(attack, SOCKETS, |slot, mut stream: TcpStream| {
        let unfinished = unfinished.as_bytes();
        async move {
            if slot % 2 == 1 {
                match attack.bounded(stream.write_all(unfinished)).await {
                    Some(Ok(())) => attack.effort.sent_frame(unfinished.len()),
                    _ => return,
                }
            }
            raw::closed_by_server(attack, &mut stream).await;
        }
    })
    .await;
}
