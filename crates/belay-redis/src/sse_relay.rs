//! The SSE fallback's relay over the cluster's node-to-node messages: a
//! send or close that reached a node not holding its stream is asked of
//! the node that does (spec/PROTOCOL.md §1.7), so a load balancer need not
//! keep a client's POSTs on one node.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use belay_server::sse::{RelayAnswer, RelayedSend, SseRelay};
use belay_server::Server;

use crate::{ControlPlane, RedisBroker};

/// The control method a node answers with its stream's answer.
const RELAY: &str = "sse.relay";

/// How long the node holding a stream has to answer a relayed send: the
/// server's own wait for a send to be read (10 s) and a little more.
const WITHIN: Duration = Duration::from_secs(11);

/// [`SseRelay`] over a [`ControlPlane`].
struct ControlRelay {
    control: ControlPlane,
}

impl SseRelay for ControlRelay {
    fn node(&self) -> &str {
        self.control.node()
    }

    fn forward(
        &self,
        node: &str,
        send: RelayedSend,
    ) -> Pin<Box<dyn Future<Output = Option<RelayAnswer>> + Send + 'static>> {
        let control = self.control.clone();
        let node = node.to_owned();
        Box::pin(async move {
            let body = serde_json::to_value(send).ok()?;
            // A body too large for one control message
            // (`MAX_CONTROL_MESSAGE`) is not relayed: the POST is answered
            // 503 and the client's stream fails.
            let answer = control.request(&node, RELAY, body, WITHIN).await.ok()?;
            serde_json::from_value(answer).ok()
        })
    }
}

impl RedisBroker {
    /// The relay to give [`belay_server::ServerBuilder::sse_relay`]: stream
    /// ids name this node, and sends for other nodes' streams go to them.
    pub fn sse_relay(&self) -> Arc<dyn SseRelay> {
        Arc::new(ControlRelay {
            control: self.control().clone(),
        })
    }

    /// Answer the sends other nodes relay to `server`'s streams.
    pub fn serve_sse_relays(&self, server: &Server) {
        let here = server.clone();
        self.control().handle(RELAY, move |body| {
            let here = here.clone();
            async move {
                let send: RelayedSend =
                    serde_json::from_value(body).map_err(|e| format!("not a relayed send: {e}"))?;
                let answer = here.take_relayed(send).await;
                serde_json::to_value(answer).map_err(|e| e.to_string())
            }
        });
    }
}
