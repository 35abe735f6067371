//! Loopback upstreams and bounded waits shared by the proxy tests.
#![allow(dead_code, unreachable_pub)]

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use belay_lab::{CountersSnapshot, Proxy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

pub mod ws;

/// A generous bound for anything that should happen "at once".
pub const SOON: Duration = Duration::from_secs(5);

/// Long enough that bytes the proxy meant to deliver would have arrived.
pub const QUIET: Duration = Duration::from_millis(400);

/// An upstream that echoes every byte back on every connection.
pub async fn echo_upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut read, mut write) = tcp.split();
                let _ = tokio::io::copy(&mut read, &mut write).await;
            });
        }
    });
    addr
}

/// An upstream that hands each accepted socket to the test.
pub async fn socket_upstream() -> (SocketAddr, mpsc::UnboundedReceiver<TcpStream>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            if tx.send(tcp).is_err() {
                return;
            }
        }
    });
    (addr, rx)
}

/// A proxy on a free loopback port in front of `upstream`.
pub async fn proxy_to(upstream: SocketAddr) -> Proxy {
    Proxy::start("127.0.0.1:0".parse().expect("addr"), upstream)
        .await
        .expect("the proxy starts")
}

/// A client connection through `proxy`.
pub async fn connect(proxy: &Proxy) -> TcpStream {
    TcpStream::connect(proxy.local_addr())
        .await
        .expect("connect")
}

/// A client connection through `proxy` and the upstream's side of it.
pub async fn connect_pair(
    proxy: &Proxy,
    accepted: &mut mpsc::UnboundedReceiver<TcpStream>,
) -> (TcpStream, TcpStream) {
    let client = connect(proxy).await;
    let server = tokio::time::timeout(SOON, accepted.recv())
        .await
        .expect("the proxy connects upstream within the bound")
        .expect("upstream alive");
    (client, server)
}

/// Read exactly `n` bytes within [`SOON`].
pub async fn read_n(tcp: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut buf = vec![0; n];
    tokio::time::timeout(SOON, tcp.read_exact(&mut buf))
        .await
        .expect("the bytes arrive within the bound")
        .expect("read");
    buf
}

/// Write `bytes` and expect them back (an echo round trip).
pub async fn round_trip(tcp: &mut TcpStream, bytes: &[u8]) {
    tcp.write_all(bytes).await.expect("write");
    assert_eq!(read_n(tcp, bytes.len()).await, bytes);
}

/// Nothing at all (no byte, no EOF, no error) arrives on `tcp` for [`QUIET`].
pub async fn assert_silent(tcp: &mut TcpStream) {
    let mut buf = [0u8; 64];
    if let Ok(read) = tokio::time::timeout(QUIET, tcp.read(&mut buf)).await {
        panic!("expected silence, got {read:?}");
    }
}

/// The result of the next read on `tcp`, within [`SOON`].
pub async fn next_read(tcp: &mut TcpStream) -> io::Result<usize> {
    let mut buf = [0u8; 64];
    tokio::time::timeout(SOON, tcp.read(&mut buf))
        .await
        .expect("the read ends within the bound")
}

/// Wait (bounded by [`SOON`]) until the proxy's counters satisfy `check`.
pub async fn counters_reach(proxy: &Proxy, check: impl Fn(&CountersSnapshot) -> bool) {
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        let counters = proxy.counters();
        if check(&counters) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "counters never reached the expected state: {counters:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A plain HTTP/1.1 request; the status and the body.
pub async fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    let body = (!body.is_empty()).then_some(body);
    let answer = belay_test_support::sockets::http_call(addr, method, path, body).await;
    (answer.status, answer.body)
}

/// Everything `tcp` yields until EOF (within [`SOON`]): the bytes, in the
/// sizes the reads returned them.
pub async fn reads_until_eof(tcp: &mut TcpStream) -> Vec<Vec<u8>> {
    let mut reads = Vec::new();
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        let mut buf = vec![0u8; 64 * 1024];
        let n = tokio::time::timeout_at(deadline, tcp.read(&mut buf))
            .await
            .expect("EOF within the bound")
            .expect("read");
        if n == 0 {
            return reads;
        }
        buf.truncate(n);
        reads.push(buf);
    }
}

/// A proxy with `seed` in front of `upstream`, with `toxics` in force.
pub async fn proxy_with(upstream: SocketAddr, seed: u64, toxics: Vec<belay_lab::Toxic>) -> Proxy {
    let mut builder = Proxy::builder(upstream).seed(seed);
    for toxic in toxics {
        builder = builder.toxic(toxic);
    }
    builder.start().await.expect("the proxy starts")
}
