//! The cluster's reconnect pacing plan over the control plane: every node
//! reports its admission rate and open connections with its heartbeat and
//! plans its `welcome` slots for the totals of the live nodes, so a fleet
//! that comes back through a balancer is spread for the whole cluster's
//! capacity, no node asked for more than its rate (docs/CLUSTER.md,
//! "Fleet pacing across nodes").

use belay_server::{ClusterCapacity, Server};

use crate::control::{ClusterLoad, LoadHooks, NodeLoad};
use crate::RedisBroker;

impl RedisBroker {
    /// Plan `server`'s reconnect slots with the other nodes on this Redis:
    /// from the next heartbeat on (every third of
    /// [`node_ttl`](crate::RedisConfig::node_ttl)), `server` plans for the
    /// sum of the live nodes' admission rates and their open connections
    /// ([`Server::set_cluster_capacity`]); alone, for itself. A node that
    /// dies drops out within `node_ttl`. [`RedisBroker::cluster_router`]
    /// calls it.
    pub fn pace_with_cluster(&self, server: &Server) {
        let (here, planned) = (server.clone(), server.clone());
        self.control().report_load(LoadHooks {
            report: Box::new(move || NodeLoad {
                rate: here.admission_rate(),
                open: u64::try_from(here.metrics().open_connections()).unwrap_or(0),
            }),
            heard: Box::new(move |totals| planned.set_cluster_capacity(capacity(totals))),
        });
    }
}

/// The plan for `totals`: the cluster's when another node takes part.
fn capacity(totals: ClusterLoad) -> Option<ClusterCapacity> {
    if totals.nodes < 2 {
        return None;
    }
    let open = usize::try_from(totals.open).unwrap_or(usize::MAX);
    ClusterCapacity::new(totals.rate, totals.nodes).map(|c| c.with_fleet(open))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_node_plans_alone_and_more_plan_together() {
        let alone = ClusterLoad {
            nodes: 1,
            rate: 500.0,
            open: 10,
        };
        assert_eq!(capacity(alone), None);
        let two = ClusterLoad {
            nodes: 2,
            rate: 400.0,
            open: 3_000,
        };
        let planned = capacity(two).expect("two nodes plan together");
        assert_eq!(planned.admission_rate(), 400.0);
        assert_eq!(planned.nodes(), 2);
        assert_eq!(
            capacity(ClusterLoad {
                nodes: 2,
                rate: 0.0,
                open: 0
            }),
            None
        );
    }
}
