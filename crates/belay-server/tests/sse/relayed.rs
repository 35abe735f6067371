//! In a cluster a send may reach a node that does not hold its stream: it
//! is relayed to the node named by the stream's id, which answers it.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use belay_proto::message::encode_client;
use belay_server::sse::{RelayAnswer, RelayedSend, SseRelay};
use belay_server::Server;
use serde_json::json;

use crate::common::{self, send_to, SseRaw};
use crate::{request, result_of};

/// Two nodes, "a" and "b", relaying to each other in-process (the cluster
/// carries the same values over Redis).
struct Pair {
    node: &'static str,
    peer: Arc<OnceLock<Server>>,
}

impl SseRelay for Pair {
    fn node(&self) -> &str {
        self.node
    }

    fn forward(
        &self,
        _node: &str,
        send: RelayedSend,
    ) -> Pin<Box<dyn Future<Output = Option<RelayAnswer>> + Send + 'static>> {
        let peer = Arc::clone(&self.peer);
        // Through JSON, as a relay between processes carries it.
        let wire = serde_json::to_string(&send).expect("serializes");
        Box::pin(async move {
            let send: RelayedSend = serde_json::from_str(&wire).ok()?;
            let answer = peer.get()?.take_relayed(send).await;
            serde_json::from_str(&serde_json::to_string(&answer).ok()?).ok()
        })
    }
}

#[tokio::test]
async fn a_send_that_reaches_another_node_is_relayed_to_the_stream() {
    let (to_b, to_a) = (Arc::new(OnceLock::new()), Arc::new(OnceLock::new()));
    let a = Server::builder()
        .methods(belay_demo::methods())
        .sse_relay(Arc::new(Pair {
            node: "a",
            peer: Arc::clone(&to_b),
        }))
        .build();
    let b = Server::builder()
        .methods(belay_demo::methods())
        .sse_relay(Arc::new(Pair {
            node: "b",
            peer: Arc::clone(&to_a),
        }))
        .build();
    let _ = to_a.set(a.clone());
    let _ = to_b.set(b.clone());
    let (addr_a, addr_b) = (common::start(&a).await, common::start(&b).await);
    let (mut sse, _) = SseRaw::connected(addr_a, None).await;
    assert!(sse.stream.starts_with("a."), "{}", sse.stream);
    let body = encode_client(&request(1, "echo", json!("via b")));
    let sent = send_to(addr_b, &sse.stream, Some(1), &body).await;
    assert_eq!(sent.status, 204, "{sent:?}");
    assert_eq!(result_of(&mut sse, 1).await, json!("via b"));
    // A number taken is taken wherever it arrives.
    assert_eq!(
        send_to(addr_a, &sse.stream, Some(1), &body).await.status,
        204
    );
    // A stream neither holds is unknown on both.
    assert_eq!(
        send_to(addr_b, "a.AAAAAAAAAAAAAAAAAAAAAA", Some(1), "{}")
            .await
            .status,
        404
    );
}
