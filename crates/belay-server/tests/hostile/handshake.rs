//! The upgrade is strict (RFC 6455 §4.2.1) and `connect` comes first.

use futures_util::SinkExt;
use tokio::net::TcpStream;
use tokio_websockets::Message;

use crate::common::{self, exchange, upgrade_request, Closed, Raw, SOON};
use crate::server;
use belay_server::ServerConfig;

async fn answer(addr: std::net::SocketAddr, request: String) -> u16 {
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    exchange(&mut tcp, request.as_bytes())
        .await
        .expect("an HTTP answer")
        .status
}

#[tokio::test]
async fn a_post_an_http_1_0_request_and_a_bad_key_are_not_upgraded() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let post = upgrade_request(addr, "Content-Length: 0\r\n").replacen("GET", "POST", 1);
    assert_eq!(answer(addr, post).await, 405);
    let old = upgrade_request(addr, "").replacen("HTTP/1.1", "HTTP/1.0", 1);
    assert_eq!(answer(addr, old).await, 400);
    let bad_key = upgrade_request(addr, "").replace("dGhlIHNhbXBsZSBub25jZQ==", "not-base64!!");
    assert_eq!(answer(addr, bad_key).await, 400);
    let short_key = upgrade_request(addr, "").replace("dGhlIHNhbXBsZSBub25jZQ==", "c2hvcnQ=");
    assert_eq!(answer(addr, short_key).await, 400);
    assert_eq!(answer(addr, upgrade_request(addr, "")).await, 101);
}

#[tokio::test]
async fn a_binary_frame_before_connect_is_closed_1002_connect_expected() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let mut raw = Raw::open(addr).await;
    raw.ws.send(Message::binary(vec![0u8, 1])).await.unwrap();
    assert_eq!(
        raw.closed_within(SOON).await,
        Closed::Frame(1002, "connect expected".into())
    );
}
