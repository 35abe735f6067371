//! What the relay holds per host: its resident set in another process
//! (`host-bench relay`) before any host, with `hosts` sleeping hosts (a
//! heartbeat each: the record alone), and with the same hosts connected
//! (a session each, holding its calls channel).

use std::net::SocketAddr;
use std::time::Duration;

use belay_client::Client;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The relay's RSS at each stage, in bytes.
#[derive(Debug, Clone, Copy)]
pub struct Memory {
    /// Hosts.
    pub hosts: usize,
    /// Before any host.
    pub baseline: u64,
    /// With every host registered and asleep.
    pub asleep: u64,
    /// With every host connected as well.
    pub connected: u64,
}

/// One heartbeat of host `id` on a fresh connection; whether it was 200.
async fn beat(relay: SocketAddr, id: &str) -> std::io::Result<bool> {
    let mut stream = tokio::net::TcpStream::connect(relay).await?;
    let request = format!(
        "POST /hosts/heartbeat HTTP/1.1\r\nHost: {relay}\r\nAuthorization: Bearer host:{id}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    Ok(answer.starts_with(b"HTTP/1.1 200"))
}

/// Measure with `hosts` hosts against the relay process `pid` at `relay`.
pub async fn run(pid: u32, relay: SocketAddr, hosts: usize) -> std::io::Result<Memory> {
    let rss =
        || -> std::io::Result<u64> { Ok(crate::measure::procfs::sample(pid)?.rss_kib * 1024) };
    let settle = || tokio::time::sleep(Duration::from_secs(3));
    settle().await;
    let baseline = rss()?;
    for n in 0..hosts {
        if !beat(relay, &format!("h{n}")).await? {
            return Err(std::io::Error::other("a heartbeat was refused"));
        }
    }
    settle().await;
    let asleep = rss()?;
    let mut sessions = Vec::with_capacity(hosts);
    let mut calls = Vec::with_capacity(hosts);
    for n in 0..hosts {
        let id = format!("h{n}");
        let token = format!("host:{id}");
        let client = Client::builder(format!("ws://{relay}/ws"))
            .token(token)
            .connect()
            .map_err(std::io::Error::other)?;
        calls.push(
            client
                .subscribe(&format!("{}{id}", belay_proto::host::CALLS_CHANNEL_PREFIX))
                .await
                .map_err(std::io::Error::other)?,
        );
        sessions.push(client);
    }
    for client in &sessions {
        client.ready().await.map_err(std::io::Error::other)?;
    }
    settle().await;
    let connected = rss()?;
    drop(calls);
    for client in &sessions {
        client.close().await;
    }
    Ok(Memory {
        hosts,
        baseline,
        asleep,
        connected,
    })
}
