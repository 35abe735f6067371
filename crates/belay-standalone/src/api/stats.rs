//! `GET /api/stats` → `{"node": STATS}`: this node's figures (lifecycle,
//! uptime, connections, subscriptions, channels, publications, requests by
//! outcome, closes by code, refusals…, belay-server's `NodeStats`); in a
//! Redis cluster also `"cluster": {"nodes": [STATS…], "unanswered":
//! [{node, error}]}`, every live node's figures (this one's too) through
//! the control plane, and `error` instead when the cluster could not be
//! asked at all (this node's figures are still given).

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::cluster::Unanswered;
use super::Api;

pub(crate) async fn stats(State(api): State<Api>) -> Response {
    let Some(cluster) = &api.cluster else {
        return Json(json!({ "node": api.server.stats() })).into_response();
    };
    let node = cluster.node_stats(&api.server);
    let answer = match cluster.stats().await {
        Ok((nodes, unanswered)) => json!({
            "node": node,
            "cluster": {
                "nodes": nodes,
                "unanswered": unanswered.iter().map(Unanswered::to_json).collect::<Vec<Value>>(),
            },
        }),
        Err(message) => json!({
            "node": node,
            "cluster": {"nodes": [], "unanswered": [], "error": message},
        }),
    };
    Json(answer).into_response()
}
