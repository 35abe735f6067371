//! The whole cluster at a glance: every node answers `node.info` over the
//! control plane, and `GET /admin/cluster` (behind the server's admin
//! guard) asks every live node and lists their answers. The admin web UI's
//! lookup and disconnect reach every node the same way:
//! `GET /admin/cluster/sessions?user=U` (each node's [`NODE_SESSIONS`]
//! answer: the user's connections there) and `POST /admin/cluster/disconnect`
//! `{"user", "reason"?}` (each node's [`USER_DISCONNECT`]: how many it
//! closed 4003; a body of at most 4 KiB, in full within the server's body
//! timeout). Bad input to either answers 400 with `{"error"}`.

use std::time::Duration;

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use belay_server::broker::Broker;
use belay_server::{Lifecycle, Server};
use serde_json::{json, Value};

use crate::RedisBroker;

/// The control method every node answers with its own figures.
pub const NODE_INFO: &str = "node.info";
/// The control method every node answers with a user's connections there
/// (`{"user"}` → [`UserSession`](belay_server::UserSession)s).
pub const NODE_SESSIONS: &str = "node.sessions";
/// The control method every node answers by closing a user's connections
/// there with 4003 (`{"user", "reason"}` → how many).
pub const USER_DISCONNECT: &str = "user.disconnect";
/// The longest user id or reason the cluster routes take.
const MAX_NAME: usize = 1_024;

/// How long `/admin/cluster` waits for the slowest node.
const ASK_WITHIN: Duration = Duration::from_secs(1);

impl RedisBroker {
    /// Answer [`NODE_INFO`] for `server` (this node's id, lifecycle,
    /// uptime, open connections, channels followed) and return
    /// `GET /admin/cluster`, behind `server`'s admin guard: every live
    /// node's answer, or why it gave none. It also plans `server`'s
    /// reconnect slots with the other nodes ([`RedisBroker::pace_with_cluster`])
    /// and shares its resident hosts with them ([`RedisBroker::serve_hosts`]).
    pub fn cluster_router(&self, server: &Server) -> Router {
        let node = server.clone();
        let broker = self.clone();
        self.control().handle(NODE_INFO, move |_| {
            let info = node_info(&broker, &node);
            async move { Ok(info) }
        });
        let here = server.clone();
        self.control().handle(NODE_SESSIONS, move |body: Value| {
            let (here, user) = (
                here.clone(),
                body["user"].as_str().unwrap_or_default().to_owned(),
            );
            async move { Ok(json!(here.sessions_of(&user).await)) }
        });
        answer_disconnects(self.control(), server);
        self.pace_with_cluster(server);
        self.serve_hosts(server);
        let routes = Router::new()
            .route("/admin/cluster", get(cluster))
            .route("/admin/cluster/sessions", get(cluster_sessions))
            .route(
                "/admin/cluster/disconnect",
                post({
                    let (broker, server) = (self.clone(), server.clone());
                    move |request: axum::extract::Request| {
                        cluster_disconnect(broker, server, request.into_body())
                    }
                }),
            )
            .with_state(self.clone());
        belay_server::admin::guard(server, routes)
    }
}

/// Answer [`USER_DISCONNECT`] from other nodes for `server`.
pub fn answer_disconnects(control: &crate::ControlPlane, server: &Server) {
    let here = server.clone();
    control.handle(USER_DISCONNECT, move |body: Value| {
        let user = body["user"].as_str().unwrap_or_default().to_owned();
        let reason = body["reason"].as_str().unwrap_or_default().to_owned();
        let closed = here.disconnect_user(&user, &reason);
        async move { Ok(json!(closed)) }
    });
}

fn refused(message: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({ "error": message }))).into_response()
}

/// Every live node's answer to `method` with `body`, as JSON, each with its
/// node's id (an `error` for a node that gave none).
async fn ask_every_node(broker: &RedisBroker, method: &str, body: Value) -> Response {
    match broker.control().ask_all(method, body, ASK_WITHIN).await {
        Ok(nodes) => {
            let answers: Vec<Value> = nodes
                .into_iter()
                .map(|(node, answer)| match answer {
                    Ok(value) => json!({ "node": node, "answer": value }),
                    Err(error) => json!({ "node": node, "error": error.to_string() }),
                })
                .collect();
            Json(json!({ "nodes": answers })).into_response()
        }
        Err(error) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "error": error.to_string() })),
        )
            .into_response(),
    }
}

async fn cluster_sessions(
    State(broker): State<RedisBroker>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    match query.get("user") {
        Some(user) if !user.is_empty() && user.len() <= MAX_NAME => {
            ask_every_node(&broker, NODE_SESSIONS, json!({ "user": user })).await
        }
        _ => refused("user: 1 to 1024 bytes"),
    }
}

/// The longest body `POST /admin/cluster/disconnect` takes.
const MAX_BODY: usize = 4 << 10;

async fn cluster_disconnect(
    broker: RedisBroker,
    server: Server,
    body: axum::body::Body,
) -> Response {
    let read = belay_server::read_body(body, MAX_BODY, server.body_timeout()).await;
    let Ok(body) = read else {
        return refused("a body of at most 4 KiB, in full within the body timeout");
    };
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return refused("a JSON body {\"user\", \"reason\"?}");
    };
    let user = body["user"].as_str().unwrap_or_default();
    let reason = body["reason"].as_str().unwrap_or("by an operator");
    if user.is_empty() || user.len() > MAX_NAME || reason.len() > 100 {
        return refused("user: 1 to 1024 bytes; reason: at most 100");
    }
    tracing::info!(target: "belay::server", user, "admin disconnected a user on every node");
    ask_every_node(
        &broker,
        USER_DISCONNECT,
        json!({ "user": user, "reason": reason }),
    )
    .await
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
