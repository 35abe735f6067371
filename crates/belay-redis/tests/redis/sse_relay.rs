//! The SSE fallback across nodes: a send that a load balancer put on
//! another node is relayed over the control plane to the node holding the
//! stream, and answered from there.

use std::net::SocketAddr;
use std::sync::Arc;

use belay_proto::message::{encode_client, ClientMessage, Reply, Request, ServerMessage};
use belay_redis::RedisBroker;
use belay_server::Server;
use belay_test_support::sockets::{send_to, SseRaw};
use serde_json::json;

use crate::common::{config, serve, RedisServer};

/// A node on `broker` that relays SSE sends, serving on a loopback port.
async fn relaying_node(broker: RedisBroker) -> (Server, SocketAddr) {
    let server = Server::builder()
        .sse_relay(broker.sse_relay())
        .broker(Arc::new(broker.clone()))
        .methods(belay_demo::methods())
        .build();
    broker.serve_sse_relays(&server);
    let addr = serve(&server).await;
    (server, addr)
}

#[tokio::test]
async fn a_send_on_the_other_node_reaches_the_stream_and_is_answered() {
    let redis = RedisServer::start().await;
    let a = RedisBroker::connect(config(&redis))
        .await
        .expect("Redis answers");
    let b = RedisBroker::connect(config(&redis))
        .await
        .expect("Redis answers");
    let node_a = a.control().node().to_owned();
    let (_a, addr_a) = relaying_node(a).await;
    let (_b, addr_b) = relaying_node(b).await;
    let (mut sse, _) = SseRaw::connected(addr_a, None).await;
    assert!(
        sse.stream.starts_with(&format!("{node_a}.")),
        "{}",
        sse.stream
    );
    let echo = encode_client(&ClientMessage::Request(Request {
        id: 1,
        method: "echo".into(),
        params: json!("relayed"),
        idem: None,
        timeout_ms: None,
    }));
    let sent = send_to(addr_b, &sse.stream, Some(1), &echo).await;
    assert_eq!(sent.status, 204, "{sent:?}");
    match sse.recv_message().await {
        ServerMessage::Response(r) => {
            assert_eq!(r.id, 1);
            match r.reply {
                Reply::Result(v) => assert_eq!(v.to_value().unwrap(), json!("relayed")),
                Reply::Error(e) => panic!("{e:?}"),
            }
        }
        other => panic!("{other:?}"),
    }
    // Out of order through the relay: the stream closes 1002 as on its node.
    let gap = send_to(addr_b, &sse.stream, Some(5), &echo).await;
    assert_eq!(gap.status, 409, "{gap:?}");
    assert_eq!(
        sse.closed_within(crate::common::SOON).await,
        Some((1002, "protocol error".into()))
    );
    // The stream is gone: unknown on both nodes.
    let after = send_to(addr_b, &sse.stream, Some(2), &echo).await;
    assert_eq!(after.status, 404, "{after:?}");
}
