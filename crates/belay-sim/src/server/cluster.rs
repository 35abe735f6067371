//! Several server models behind a balancer.
//!
//! Every node is a [`ServerModel`] with the same options: down and back at
//! the same instants, its own token bucket at `rate`, and its own pacing
//! plans, each planned for the cluster's capacity (`nodes × rate`,
//! `FleetPacing::set_cluster`) unless told to plan alone. The nodes' clocks
//! differ (node `j`'s reads [`NODE_CLOCK_STEP`]` × j` more, as if started
//! that much earlier), so their slot grids are not aligned. The balancer
//! sends each attempt to one node: round-robin (one node after the other,
//! whatever the client) or uniformly at random (seeded, so runs stay
//! reproducible). A client's connection, its `welcome` (pacing and pings)
//! and its SYN retransmissions belong to the node that took its attempt.
//! One node (the default) is the single server of every other scenario.

use std::time::Duration;

use belay_proto::fleet::ClusterCapacity;
use belay_proto::rng::{RandomSource, SplitMix64};
use belay_proto::Instant;

use super::{Answer, ServerModel, ServerOptions, WorkStats};

/// How far apart the nodes' clocks are.
pub const NODE_CLOCK_STEP: Duration = Duration::from_millis(7_777);

/// How the balancer picks a node for an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Balancer {
    /// One node after the other (HAProxy's `roundrobin`).
    #[default]
    RoundRobin,
    /// A node drawn uniformly at random for every attempt (HAProxy's
    /// `random`), from a generator seeded by the run's seed.
    Random,
}

/// The nodes, the balancer, and what each node was asked.
#[derive(Debug, Clone)]
pub(crate) struct Cluster {
    nodes: Vec<ServerModel>,
    balancer: Balancer,
    next: usize,
    rng: SplitMix64,
    /// The instants at which attempts reached each node, in order.
    attempts: Vec<Vec<Instant>>,
}

impl Cluster {
    /// `options.nodes` nodes (at least one), each with `options`, down on
    /// `[down_from, down_from + down_for)`.
    pub(crate) fn new(
        options: &ServerOptions,
        down_from: Instant,
        down_for: Duration,
        seed: u64,
    ) -> Self {
        let count = options.nodes.max(1);
        let capacity = ClusterCapacity::new(options.rate as f64 * count as f64, count as u32)
            .filter(|_| count > 1 && options.cluster_plan);
        let nodes = (0..count)
            .map(|j| {
                let mut node = options.clone();
                node.clock_offset += NODE_CLOCK_STEP * j as u32;
                node.cluster = capacity;
                ServerModel::new(node, down_from, down_for)
            })
            .collect();
        Cluster {
            nodes,
            balancer: options.balancer,
            next: 0,
            rng: SplitMix64::new(seed ^ 0x0062_616C_616E_6365),
            attempts: vec![Vec::new(); count],
        }
    }

    /// The node the balancer sends the next attempt to.
    pub(crate) fn pick(&mut self) -> u16 {
        let count = self.nodes.len();
        let node = match self.balancer {
            Balancer::RoundRobin => {
                let node = self.next;
                self.next = (self.next + 1) % count;
                node
            }
            Balancer::Random => ((self.rng.next_unit() * count as f64) as usize).min(count - 1),
        };
        node as u16
    }

    /// An attempt that reaches `node` at `now`.
    pub(crate) fn attempt(&mut self, node: u16, now: Instant) -> Answer {
        self.attempts[usize::from(node)].push(now);
        self.nodes[usize::from(node)].attempt(now)
    }

    /// One node.
    pub(crate) fn node(&mut self, node: u16) -> &mut ServerModel {
        &mut self.nodes[usize::from(node)]
    }

    /// Any node (they share their options).
    pub(crate) fn first(&self) -> &ServerModel {
        &self.nodes[0]
    }

    /// The attempts that reached each node, in order.
    pub(crate) fn node_attempts(&self) -> &[Vec<Instant>] {
        &self.attempts
    }

    /// The work of every node, summed, if work has a cost.
    pub(crate) fn work(&self) -> Option<WorkStats> {
        self.nodes
            .iter()
            .filter_map(ServerModel::work)
            .reduce(|a, b| WorkStats {
                busy: a.busy + b.busy,
                dropped: a.dropped + b.dropped,
                queued: a.queued + b.queued,
                admitted_too_late: a.admitted_too_late + b.admitted_too_late,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(nodes: usize, balancer: Balancer) -> Cluster {
        let mut options = ServerOptions::new(500);
        options.nodes = nodes;
        options.balancer = balancer;
        Cluster::new(
            &options,
            Instant::from_millis(1_000),
            Duration::from_secs(10),
            1,
        )
    }

    #[test]
    fn round_robin_takes_the_nodes_in_turn() {
        let mut c = cluster(3, Balancer::RoundRobin);
        let picks: Vec<u16> = (0..7).map(|_| c.pick()).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn random_spreads_over_every_node() {
        let mut c = cluster(4, Balancer::Random);
        let mut counts = [0u32; 4];
        for _ in 0..40_000 {
            counts[usize::from(c.pick())] += 1;
        }
        assert!(
            counts.iter().all(|&n| (9_700..10_300).contains(&n)),
            "{counts:?}"
        );
    }

    #[test]
    fn every_node_plans_for_the_cluster_and_counts_its_attempts() {
        let mut c = cluster(4, Balancer::RoundRobin);
        for node in 0..4 {
            for _ in 0..2_500 {
                c.node(node).opened();
            }
        }
        // 4 × 2,500 clients over 4 × 500/s at 0.95: 5.263 s on every node.
        for node in 0..4 {
            let pacing = c.node(node).pacing(Instant::ZERO).unwrap();
            assert_eq!(pacing.period_ms, 5_263);
        }
        // A node holding more than its share is taken for one of four such
        // (4 × 5,000 clients at 2,000/s).
        for _ in 0..2_500 {
            c.node(1).opened();
        }
        assert_eq!(c.node(1).pacing(Instant::ZERO).unwrap().period_ms, 10_526);
        assert_eq!(
            c.attempt(2, Instant::ZERO),
            Answer::Now(super::super::Verdict::Admit)
        );
        assert_eq!(c.node_attempts()[2], [Instant::ZERO]);
        assert!(c.node_attempts()[0].is_empty());
        // Planning alone, a node sizes its period for its own clients at
        // its own rate: for equal nodes of an even balancer, the same.
        let mut options = ServerOptions::new(500);
        options.nodes = 4;
        options.cluster_plan = false;
        let mut alone = Cluster::new(&options, Instant::from_millis(1_000), Duration::ZERO, 1);
        for _ in 0..2_500 {
            alone.node(0).opened();
        }
        assert_eq!(
            alone.node(0).pacing(Instant::ZERO).unwrap().period_ms,
            5_263
        );
        assert_eq!(options.cluster, None);
    }
}
