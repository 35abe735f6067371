//! Behind nginx with its defaults (response buffering on), the stream still
//! flows event by event: the server's `X-Accel-Buffering: no` is what lets
//! it. The control shows the test has teeth: the same kind of stream
//! without that header is held by nginx.

use std::time::Duration;

use axum::routing::post;
use axum::Router;
use belay_test_support::services::Nginx;
use serde_json::json;

use crate::common::{self, SseRaw};
use crate::{request, result_of, server};
use belay_server::ServerConfig;

#[tokio::test]
async fn each_event_passes_through_a_buffering_nginx_at_once() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let nginx = Nginx::proxy_to(addr).await;
    // The welcome is one small event: a buffering proxy would hold it.
    let (mut sse, _) = SseRaw::connected(nginx.addr(), None).await;
    for n in 0..3 {
        assert_eq!(sse.send(&[&request(n, "echo", json!(n))]).await.status, 204);
        assert_eq!(result_of(&mut sse, n).await, json!(n));
    }
}

#[tokio::test]
async fn without_the_header_nginx_holds_a_small_event() {
    // One event, then the response stays open (as a stream does).
    let app = Router::new().route(
        "/sse",
        post(|| async {
            let (tx, rx) = tokio::sync::mpsc::channel::<Result<bytes::Bytes, std::io::Error>>(1);
            tokio::spawn(async move {
                let _ = tx
                    .send(Ok(bytes::Bytes::from_static(
                        b"event: open\ndata: {\"stream\":\"x\"}\n\n",
                    )))
                    .await;
                tokio::time::sleep(Duration::from_secs(30)).await;
                drop(tx);
            });
            (
                [("content-type", "text/event-stream")],
                axum::body::Body::from_stream(tokio_stream_of(rx)),
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let upstream = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    // Straight to the upstream: the event comes at once.
    assert!(SseRaw::open(upstream, "", &[]).await.is_ok());
    // Through nginx it is held: no head and no event within the bound.
    let nginx = Nginx::proxy_to(upstream).await;
    let held =
        tokio::time::timeout(Duration::from_secs(2), SseRaw::open(nginx.addr(), "", &[])).await;
    assert!(
        held.is_err(),
        "nginx passed the event on without the header"
    );
}

/// The receiver as a stream of chunks.
fn tokio_stream_of(
    mut rx: tokio::sync::mpsc::Receiver<Result<bytes::Bytes, std::io::Error>>,
) -> impl futures_util::Stream<Item = Result<bytes::Bytes, std::io::Error>> {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}
