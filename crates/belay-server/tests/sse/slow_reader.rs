//! A client that opens a stream and stops reading it holds nothing for
//! long: its outbound queue fills, the session closes 4009 as over a
//! WebSocket, and the server drops the TCP connection (hyper would
//! otherwise wait on its write for ever, outside every per-source count).

use std::time::Duration;

use belay_proto::message::{ClientMessage, Subscribe};
use belay_proto::server::Limits;
use serde_json::json;

use crate::common::{self, SseRaw};
use crate::server;
use belay_server::ServerConfig;

#[tokio::test]
async fn a_stream_nobody_reads_is_closed_and_its_connection_dropped() {
    let mut limits = Limits::default();
    limits.set_outbound_queue(16);
    let mut config = ServerConfig::default();
    config.limits = limits;
    // hyper closes a kept-alive connection idle this long: longer than the
    // bound below, so only the server's own drop can close it in time.
    config.upgrade_timeout = Duration::from_secs(60);
    let server = server(config);
    let addr = common::start(&server).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    let subscribe = ClientMessage::Subscribe(Subscribe {
        channel: "firehose".into(),
        since: None,
        token: None,
    });
    assert_eq!(sse.send(&[&subscribe]).await.status, 204);
    // From here on the client reads nothing.
    let blob = "x".repeat(8 * 1024);
    for n in 0..2_000 {
        if server.metrics().open_connections() == 0 {
            break;
        }
        let _ = server
            .publish("firehose", json!({"n": n, "blob": blob}))
            .await;
        tokio::task::yield_now().await;
    }
    let gone = common::metric_until(addr, "belay_sse_streams", |n| n == 0.0).await;
    assert_eq!(gone, 0.0);
    assert_eq!(server.metrics().closes_by_code().get(&4009), Some(&1));
    assert!(
        sse.tcp_closed_within(Duration::from_secs(10)).await,
        "the server dropped the stream's TCP connection"
    );
}
