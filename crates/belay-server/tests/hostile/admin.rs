//! The admin API is not open: not on the public router, and behind a guard
//! that refuses other origins, and non-loopback peers without a token.

use crate::common::{self, http_call};
use belay_server::{Lifecycle, ServerConfig};
use tokio::net::TcpStream;

async fn post_drain(addr: std::net::SocketAddr, headers: &str) -> u16 {
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "POST /admin/drain HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/plain\r\n{headers}\
         Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    common::exchange(&mut tcp, request.as_bytes())
        .await
        .expect("an answer")
        .status
}

#[tokio::test]
async fn the_public_router_has_no_admin_route() {
    let server = crate::server(ServerConfig::default());
    let addr = common::start(&server).await;
    assert_eq!(
        http_call(addr, "POST", "/admin/drain", None).await.status,
        404
    );
    assert_eq!(server.lifecycle(), Lifecycle::Serving);
}

#[tokio::test]
async fn a_page_on_another_origin_cannot_drain_the_server() {
    let demo = belay_demo::Demo::new();
    let server = demo.builder(ServerConfig::default()).build();
    let addr = common::start_with(&server, demo.router(&server)).await;
    assert_eq!(
        post_drain(addr, "Origin: https://evil.example\r\n").await,
        403
    );
    assert_eq!(server.lifecycle(), Lifecycle::Serving);
    // The fault routes are guarded the same way.
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let fault = format!(
        "POST /admin/fault/freeze HTTP/1.1\r\nHost: {addr}\r\nOrigin: https://evil.example\r\n\
         Content-Type: application/json\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{{\"on\":true}}"
    );
    let answer = common::exchange(&mut tcp, fault.as_bytes()).await.unwrap();
    assert_eq!(answer.status, 403);
    assert!(!demo.faults().faults().freeze);
    // The demo page itself (same origin, loopback) still works.
    assert_eq!(
        post_drain(addr, &format!("Origin: http://{addr}\r\n")).await,
        202
    );
}

#[tokio::test]
async fn with_a_token_configured_the_admin_api_needs_it() {
    let server = crate::server(ServerConfig::default().with_admin_token("s3cret"));
    let addr = common::start_with(&server, server.router().merge(server.admin_router())).await;
    assert_eq!(post_drain(addr, "").await, 401);
    assert_eq!(
        post_drain(addr, "Authorization: Bearer nope\r\n").await,
        401
    );
    assert_eq!(server.lifecycle(), Lifecycle::Serving);
    assert_eq!(
        post_drain(addr, "Authorization: Bearer s3cret\r\n").await,
        202
    );
}
