//! The cluster's admission capacity, fed at runtime by the control plane.
//!
//! A node behind a balancer plans its reconnect slots for the whole
//! cluster ([`ClusterCapacity`], `FleetPacing::set_cluster`): after a
//! cluster-wide outage the fleet comes back at about 0.95 of the sum of the
//! nodes' rates, spread over the nodes by the balancer, and no node is
//! asked for more than its own rate (docs/SIMULATION.md, "Several nodes
//! behind a balancer"). The server does not find the capacity itself: the
//! broker that knows the other nodes (the Redis control plane) calls
//! [`Server::set_cluster_capacity`] whenever it changes.

use belay_proto::fleet::ClusterCapacity;

use crate::metrics::lock;
use crate::shared::Server;

impl Server {
    /// Plan the reconnect slots of every `welcome` from now on for
    /// `capacity`: the sum of the admission rates of every node behind the
    /// balancer (this one's `accept_rate` included), their count, and, if
    /// the control plane counts it, the cluster's fleet. `None` plans for
    /// this node alone ([`ServerConfig::accept_rate`](crate::ServerConfig::accept_rate)),
    /// as a server with no cluster does.
    ///
    /// Cheap (one lock of the node's state): call it on every change the
    /// control plane sees, a node joining or leaving, or a rate changing.
    /// Clients keep the period of their last `welcome` until their next
    /// one, so a change reaches the fleet as it reconnects or refreshes.
    pub fn set_cluster_capacity(&self, capacity: Option<ClusterCapacity>) {
        lock(&self.shared.node).pacing_mut().set_cluster(capacity);
    }

    /// The connections per second this node admits (its
    /// [`ServerConfig::accept_rate`](crate::ServerConfig::accept_rate)), as
    /// it tells the other nodes.
    pub fn admission_rate(&self) -> f64 {
        lock(&self.shared.node).pacing_mut().admission_rate()
    }

    /// The cluster capacity the slots are planned for, if any.
    pub fn cluster_capacity(&self) -> Option<ClusterCapacity> {
        lock(&self.shared.node).pacing_mut().cluster()
    }
}
