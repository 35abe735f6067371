//! The whole cluster at a glance: every node answers `node.info` over the
//! control plane, and `GET /admin/cluster` (behind the server's admin
//! guard) asks every live node and lists their answers.

use std::time::Duration;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use belay_server::broker::Broker;
use belay_server::{Lifecycle, Server};
use serde_json::{json, Value};

use crate::RedisBroker;

/// The control method every node answers with its own figures.
pub const NODE_INFO: &str = "node.info";

/// How long `/admin/cluster` waits for the slowest node.
const ASK_WITHIN: Duration = Duration::from_secs(1);

impl RedisBroker {
    /// Answer [`NODE_INFO`] for `server` (this node's id, lifecycle,
    /// uptime, open connections, channels followed) and return
    /// `GET /admin/cluster`, behind `server`'s admin guard: every live
    /// node's answer, or why it gave none.
    pub fn cluster_router(&self, server: &Server) -> Router {
        let node = server.clone();
        let broker = self.clone();
        self.control().handle(NODE_INFO, move |_| {
            let info = node_info(&broker, &node);
            async move { Ok(info) }
        });
        let routes = Router::new()
            .route("/admin/cluster", get(cluster))
            .with_state(self.clone());
        belay_server::admin::guard(server, routes)
    }
}

fn node_info(broker: &RedisBroker, server: &Server) -> Value {
    let lifecycle = match server.lifecycle() {
        Lifecycle::Serving => "serving",
        Lifecycle::Draining => "draining",
        _ => "drained",
    };
    json!({
        "node": broker.control().node(),
        "lifecycle": lifecycle,
        "uptime_ms": u64::try_from(server.uptime().as_millis()).unwrap_or(u64::MAX),
        "connections": server.metrics().open_connections(),
        "channels": broker.channels().unwrap_or(0),
    })
}

async fn cluster(State(broker): State<RedisBroker>) -> Json<Value> {
    let nodes = match broker
        .control()
        .ask_all(NODE_INFO, Value::Null, ASK_WITHIN)
        .await
    {
        Ok(nodes) => nodes,
        Err(error) => return Json(json!({ "error": error.to_string() })),
    };
    let listed: Vec<Value> = nodes
        .into_iter()
        .map(|(node, answer)| match answer {
            Ok(info) => info,
            Err(error) => json!({ "node": node, "error": error.to_string() }),
        })
        .collect();
    Json(json!({ "nodes": listed }))
}
