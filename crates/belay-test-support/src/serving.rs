//! A server process under test (feature `services`): spawned with its
//! stderr read for the address it says it listens on, killed when dropped.

use std::net::SocketAddr;
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::sockets::SOON;

/// Spawn `command` (a `belay serve …`) and wait, within [`SOON`], for the
/// first `ws://ADDR/ws` on its stderr ("listening on ws://ADDR/ws", or the
/// demo's "(WebSocket at ws://ADDR/ws)"). The rest of its stderr is
/// drained; the process is killed when the [`Child`] is dropped.
pub async fn spawn_listening(command: &mut Command) -> (Child, SocketAddr) {
    let mut child = command
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the server process starts");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let addr = tokio::time::timeout(SOON, async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(rest) = line.split("ws://").nth(1) {
                return rest
                    .split("/ws")
                    .next()
                    .and_then(|a| a.parse::<SocketAddr>().ok());
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .expect("the server says where it listens");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, addr)
}
