//! An HTTP API body that never finishes holds nothing for long: it has
//! the server's `body_timeout` to arrive, then the request is answered 408
//! `timeout` and its connection closed, so the connections not yet
//! upgraded it held are free again and `/healthz` answers.

use std::net::SocketAddr;
use std::time::Duration;

use belay_server::{Server, ServerConfig};
use belay_test_support::sockets::{http_call, tcp_from};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const SOON: Duration = Duration::from_secs(5);

async fn start(config: ServerConfig) -> SocketAddr {
    let server = Server::builder().config(config).build();
    let router = server
        .router()
        .merge(belay_standalone::api::router(&server, "k", 4_096, None));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { server.serve(listener, router).await });
    addr
}

/// An authorized `POST /api/publish` announcing 100 bytes of body and
/// sending 10, from the loopback address `source`.
async fn stalled_publish(addr: SocketAddr, source: &str) -> TcpStream {
    let mut tcp = tcp_from(source, addr).await;
    let request = format!(
        "POST /api/publish HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer k\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"channel\""
    );
    tcp.write_all(request.as_bytes()).await.expect("write");
    tcp
}

#[tokio::test]
async fn stalled_api_bodies_are_answered_408_and_healthz_answers_again() {
    let config = ServerConfig::default()
        .with_pending_upgrades(4, 64)
        .with_body_timeout(Duration::from_millis(300));
    let addr = start(config).await;
    let mut stalls = Vec::new();
    for n in 2..6 {
        stalls.push(stalled_publish(addr, &format!("127.0.0.{n}")).await);
    }
    for tcp in &mut stalls {
        // The whole answer, then the close.
        let mut answer = Vec::new();
        tokio::time::timeout(SOON, tcp.read_to_end(&mut answer))
            .await
            .expect("an answer and a close within the bound")
            .expect("read");
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("\"code\":\"timeout\""), "{answer}");
    }
    assert_eq!(http_call(addr, "GET", "/healthz", None).await.status, 200);
}
