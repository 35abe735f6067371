//! [`ClusterApi`]: the API's reach to every node of a Redis cluster,
//! through the nodes' control plane (belay-redis `ControlPlane`).

use std::time::Duration;

use belay_redis::RedisBroker;
use belay_server::Server;
use serde_json::{json, Value};

/// The control method every node answers by disconnecting a user.
const DISCONNECT: &str = "user.disconnect";
/// How long every node has to answer.
const WITHIN: Duration = Duration::from_secs(2);

/// Every node of the cluster `broker` belongs to.
#[derive(Clone, Debug)]
pub struct ClusterApi {
    broker: RedisBroker,
}

impl ClusterApi {
    /// Answer other nodes' requests for `server` (disconnecting a user
    /// here) and reach them through `broker`.
    pub fn new(server: &Server, broker: &RedisBroker) -> ClusterApi {
        let server = server.clone();
        broker.control().handle(DISCONNECT, move |body: Value| {
            let user = body["user"].as_str().unwrap_or_default().to_owned();
            let reason = body["reason"].as_str().unwrap_or_default().to_owned();
            let here = server.disconnect_user(&user, &reason);
            async move { Ok(json!(here)) }
        });
        ClusterApi {
            broker: broker.clone(),
        }
    }

    /// Disconnect `user` on every live node; how many connections closed
    /// (an error if a node could not be asked: the others still did it).
    pub(crate) async fn disconnect_user(&self, user: &str, reason: &str) -> Result<usize, String> {
        let answers = self
            .broker
            .control()
            .ask_all(DISCONNECT, json!({"user": user, "reason": reason}), WITHIN)
            .await
            .map_err(|e| format!("the cluster: {e}"))?;
        let mut total = 0;
        for (node, answer) in answers {
            match answer {
                Ok(n) => total += usize::try_from(n.as_u64().unwrap_or(0)).unwrap_or(0),
                Err(e) => return Err(format!("node {node} did not answer: {e}")),
            }
        }
        Ok(total)
    }
}
