//! `POST /sse` is checked like a WebSocket upgrade, and a page can read the
//! refusal's status, so none is turned into an in-band close.

use std::time::Duration;

use belay_proto::server::Limits;

use crate::common::{self, SseRaw};
use crate::server;
use belay_server::ServerConfig;

#[tokio::test]
async fn an_origin_not_allowed_is_403() {
    let mut config = ServerConfig::default();
    config
        .limits
        .set_allowed_origins(vec!["https://app.example".into()]);
    let server = server(config);
    let addr = common::start(&server).await;
    let refused = SseRaw::open(addr, "", &["Origin: https://evil.example"])
        .await
        .err()
        .expect("refused");
    assert_eq!(refused.status, 403, "{refused:?}");
    assert!(SseRaw::open(addr, "", &["Origin: https://app.example"])
        .await
        .is_ok());
}

#[tokio::test]
async fn over_the_accept_rate_a_browser_gets_503_with_retry_after_not_a_close() {
    let mut config = ServerConfig::default();
    config.accept_rate = 1.0;
    let server = server(config);
    let addr = common::start(&server).await;
    let origin = "Origin: http://page.example";
    let _first = SseRaw::open(addr, "", &[origin])
        .await
        .expect("the first is admitted");
    let refused = SseRaw::open(addr, "", &[origin])
        .await
        .err()
        .expect("refused");
    assert_eq!(refused.status, 503, "{refused:?}");
    let secs: u64 = refused
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("seconds");
    assert!((1..=5).contains(&secs), "{secs}");
    assert!(refused.body.contains("over capacity"), "{}", refused.body);
}

#[tokio::test]
async fn an_opening_body_over_the_frame_limit_is_413_and_no_stream_is_made() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let refused = SseRaw::open(addr, &"x".repeat(1_048_577), &[])
        .await
        .err()
        .expect("refused");
    assert_eq!(refused.status, 413);
    assert_eq!(server.metrics().open_connections(), 0);
}

#[tokio::test]
async fn a_stream_without_connect_is_closed_4008_like_a_websocket() {
    let mut limits = Limits::default();
    limits.set_handshake_timeout(Duration::from_millis(200));
    let mut config = ServerConfig::default();
    config.limits = limits;
    let server = server(config);
    let addr = common::start(&server).await;
    let mut sse = SseRaw::open(addr, "", &[]).await.expect("a stream");
    let closed = sse.closed_within(Duration::from_secs(5)).await;
    assert_eq!(closed, Some((4008, "handshake timeout".into())));
}
