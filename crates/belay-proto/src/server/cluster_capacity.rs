//! What a node of a cluster knows about the cluster's admission capacity.
//!
//! Behind a balancer, a fleet that lost its nodes comes back to all of
//! them: each client's attempt goes to whichever node the balancer picks,
//! and every node admits through its own bucket. So the slots every node
//! hands out must be planned for the **cluster**: the fleet comes back at
//! `headroom × (sum of the nodes' rates)`, spread by the balancer, and is
//! in after `N / (sum of the rates)`, with no node asked for more than its
//! share. A node alone knows only its own rate and its own clients; the
//! control plane (the broker, e.g. belay-redis) tells it the rest through
//! [`ClusterCapacity`], fed to
//! [`FleetPacing::set_cluster`](super::FleetPacing::set_cluster) whenever
//! it changes.

use std::num::NonZeroU32;

/// The cluster's admission capacity, as the control plane sees it: the sum
/// of every node's admission rate (this node's included), how many nodes
/// there are, and, if the control plane counts them, the clients the whole
/// cluster holds.
///
/// A node takes the larger of the cluster's count and `nodes ×` its own
/// fleet for it: right when the balancer spreads clients evenly over the nodes
/// (round-robin, random, least connections with equal nodes). With rates
/// that differ between nodes the balancer must weight them by rate for no
/// node to be asked for more than its rate (HAProxy's `weight`).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusterCapacity {
    admission_rate: f64,
    nodes: NonZeroU32,
    fleet: Option<usize>,
}

impl ClusterCapacity {
    /// `nodes` nodes admitting `admission_rate` connections per second in
    /// all. `None` for no nodes, or a rate that is not a positive finite
    /// number (a control plane that knows nothing yet sends nothing, and
    /// the node plans alone).
    pub fn new(admission_rate: f64, nodes: u32) -> Option<Self> {
        let rate_ok = admission_rate.is_finite() && admission_rate > 0.0;
        Some(ClusterCapacity {
            admission_rate: rate_ok.then_some(admission_rate)?,
            nodes: NonZeroU32::new(nodes)?,
            fleet: None,
        })
    }

    /// The clients the whole cluster holds (or expects), when the control
    /// plane counts them: periods are sized for it when it is more than
    /// `nodes ×` this node's fleet, which keeps the plan right for a node
    /// that holds less than its share (restarted: the balancer has spread
    /// the fleet unevenly).
    pub fn with_fleet(mut self, clients: usize) -> Self {
        self.fleet = Some(clients);
        self
    }

    /// Connections per second the cluster admits, summed over its nodes.
    pub fn admission_rate(&self) -> f64 {
        self.admission_rate
    }

    /// How many nodes share the capacity.
    pub fn nodes(&self) -> u32 {
        self.nodes.get()
    }

    /// The cluster's fleet, if the control plane counts it.
    pub fn fleet(&self) -> Option<usize> {
        self.fleet
    }

    /// The cluster's fleet for a node whose own fleet (the largest it has
    /// seen or been told to expect) is `node_fleet`: the larger of the
    /// control plane's count and `nodes × node_fleet`. The count alone is
    /// not enough: while a fleet connects it is short of the whole, and a
    /// client welcomed then would get a period sized for part of the fleet
    /// (a real run behind HAProxy, 3,000 clients on two nodes told to expect
    /// 1,500 each, came back at 163 sessions/s on a node admitting 100 and
    /// 3,206 refusals, against 97/s and none with this rule). Over-counting
    /// an uneven spread only lengthens the period.
    pub fn fleet_for(&self, node_fleet: usize) -> usize {
        let estimate = node_fleet.saturating_mul(self.nodes.get() as usize);
        self.fleet.unwrap_or(0).max(estimate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonsense_capacities_are_no_capacity() {
        assert_eq!(ClusterCapacity::new(0.0, 3), None);
        assert_eq!(ClusterCapacity::new(-1.0, 3), None);
        assert_eq!(ClusterCapacity::new(f64::NAN, 3), None);
        assert_eq!(ClusterCapacity::new(f64::INFINITY, 3), None);
        assert_eq!(ClusterCapacity::new(500.0, 0), None);
        let ok = ClusterCapacity::new(1_500.0, 3).unwrap();
        assert_eq!(
            (ok.admission_rate(), ok.nodes(), ok.fleet()),
            (1_500.0, 3, None)
        );
    }

    #[test]
    fn the_cluster_fleet_is_counted_or_estimated_from_the_nodes() {
        let cluster = ClusterCapacity::new(1_500.0, 3).unwrap();
        assert_eq!(cluster.fleet_for(10_000), 30_000);
        assert_eq!(cluster.fleet_for(usize::MAX), usize::MAX);
        let counted = cluster.with_fleet(40_000);
        assert_eq!(counted.fleet_for(10_000), 40_000);
        // A count short of what the nodes expect (a fleet still
        // connecting) does not shorten the period.
        let partial = cluster.with_fleet(20_000);
        assert_eq!(partial.fleet_for(10_000), 30_000);
        assert_eq!(
            counted.fleet_for(25_000),
            75_000,
            "never less than the nodes expect"
        );
    }
}
