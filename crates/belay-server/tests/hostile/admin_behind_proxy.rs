//! The admin guard behind a reverse proxy on the same host (trusted
//! proxies = loopback, no admin token): a request the proxy forwarded for a
//! public client, or one whose client it does not name, cannot drain the
//! server; only a provably local request, or one with the token, can.

use std::net::SocketAddr;

use crate::common::{self};
use belay_proto::server::{IpRange, TrustedProxies};
use belay_server::{Lifecycle, Server, ServerConfig};
use tokio::net::TcpStream;

/// The status of `POST /admin/drain` with `headers` (and the body, which
/// the raw exchange may not read).
async fn post_drain(addr: SocketAddr, headers: &str) -> (u16, String) {
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "POST /admin/drain HTTP/1.1\r\nHost: {addr}\r\n{headers}\
         Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    let answer = common::exchange(&mut tcp, request.as_bytes())
        .await
        .expect("an answer");
    (answer.status, answer.body)
}

fn behind_a_local_proxy(token: Option<&str>) -> Server {
    let loopback: IpRange = "127.0.0.0/8".parse().expect("range");
    let config =
        ServerConfig::default().with_trusted_proxies(TrustedProxies::new(vec![loopback]), false);
    let config = match token {
        Some(token) => config.with_admin_token(token),
        None => config,
    };
    crate::server(config)
}

async fn started(server: &Server) -> SocketAddr {
    common::start_with(server, server.router().merge(server.admin_router())).await
}

#[tokio::test]
async fn a_request_forwarded_for_a_public_client_cannot_drain() {
    let server = behind_a_local_proxy(None);
    let addr = started(&server).await;
    assert_eq!(
        post_drain(addr, "X-Forwarded-For: 203.0.113.9\r\n").await.0,
        403
    );
    assert_eq!(
        post_drain(addr, "Forwarded: for=203.0.113.9\r\n").await.0,
        403
    );
    assert_eq!(server.lifecycle(), Lifecycle::Serving);
}

#[tokio::test]
async fn a_proxy_that_names_no_client_cannot_drain() {
    let server = behind_a_local_proxy(None);
    let addr = started(&server).await;
    // The peer is the trusted proxy and it names nobody: not provably local.
    assert_eq!(post_drain(addr, "").await.0, 403);
    assert_eq!(server.lifecycle(), Lifecycle::Serving);
}

#[tokio::test]
async fn forwarding_headers_from_an_untrusted_peer_are_not_local() {
    // No trusted proxies: a proxy nobody configured still forwards.
    let server = crate::server(ServerConfig::default());
    let addr = started(&server).await;
    for header in [
        "X-Forwarded-For: 203.0.113.9\r\n",
        "X-Real-IP: 203.0.113.9\r\n",
        "Forwarded: for=203.0.113.9\r\n",
    ] {
        assert_eq!(post_drain(addr, header).await.0, 403, "{header}");
    }
    assert_eq!(server.lifecycle(), Lifecycle::Serving);
    // A plain local request still drains.
    assert_eq!(post_drain(addr, "").await.0, 202);
}

#[tokio::test]
async fn the_token_passes_through_the_proxy() {
    let server = behind_a_local_proxy(Some("a-long-admin-token-0123456789"));
    let addr = started(&server).await;
    let headers =
        "X-Forwarded-For: 203.0.113.9\r\nAuthorization: Bearer a-long-admin-token-0123456789\r\n";
    assert_eq!(post_drain(addr, headers).await.0, 202);
}
