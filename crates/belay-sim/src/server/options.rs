//! What the server model is told to be: its admission, pacing, costs and
//! pings.

use std::time::Duration;

use belay_proto::fleet::ClusterCapacity;

use super::Balancer;
use crate::cost::CostModel;

/// What the server model is told to be.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerOptions {
    /// Admissions per second once the server is back: belay-server's
    /// `ServerConfig::accept_rate`, the bucket's rate and (by default) its
    /// capacity. Also the rate the pacing plans are computed for.
    pub rate: u64,
    /// Tokens in the bucket at the moment the server comes back (clamped to
    /// the capacity; NaN and negative values are 0). Default 0, an empty
    /// bucket; a freshly started belay-server's is full (`rate`).
    pub initial_tokens: f64,
    /// The bucket's capacity in tokens; `None` (the default) means `rate`
    /// (at least one token), as in belay-server.
    pub capacity: Option<f64>,
    /// Tokens a refused attempt burns while the server is up (saturating at
    /// an empty bucket; NaN and non-positive values burn nothing). Default 0,
    /// as in belay-server.
    pub reject_cost: f64,
    /// Whether `welcome` carries pacing hints.
    pub pacing: bool,
    /// Make every attempt cost the returning server work ([`CostModel`]):
    /// attempts queue for its workers, are decided after their handshake
    /// by belay-server's upgrade checks, and a refusal is an HTTP 503 with
    /// `Retry-After`. `None` (the default): decided at once, for free.
    pub cost: Option<CostModel>,
    /// The fleet the pacing plans are sized for from the start
    /// (`FleetPacing::set_expected_fleet`, belay-server's
    /// `expected_fleet`); `None` sizes them by the connections seen.
    pub expected_fleet: Option<usize>,
    /// The fraction of `rate` the pacing plans aim at
    /// (`FleetPacing::set_headroom`); `None` keeps the core's default, 0.95.
    pub headroom: Option<f64>,
    /// Answer a refusal while up as belay-server does, with HTTP 503 and
    /// `Retry-After` (decided by its upgrade checks, as in the cost model),
    /// instead of a refused connection. Default false (the seed's model);
    /// the cost model always answers so.
    pub answer_503: bool,
    /// The server's own clock reads the model's time plus this (default
    /// zero). Its plans count from its clock: the first from the clock's
    /// zero, the returning server's from its return. Moving the clock moves
    /// the moment of the death within the first plan's beat and slot grid,
    /// and nothing else.
    pub clock_offset: Duration,
    /// The server pings every open connection on its beat at this interval
    /// (`welcome.ping_interval_ms`), as belay-server does (every 8 s by
    /// default, `Beat::for_pings`); `None` (the default): no pings, the clients' own probes
    /// keep their connections alive.
    pub ping_interval: Option<Duration>,
    /// Nodes behind the balancer, each with these options (`rate` each):
    /// see [`crate::server::Balancer`]. Default 1, a single server.
    pub nodes: usize,
    /// How the balancer spreads attempts over the nodes.
    pub balancer: Balancer,
    /// With several nodes, every node plans its slots for the cluster's
    /// capacity (`nodes × rate`, `FleetPacing::set_cluster`), as
    /// belay-server does when its control plane feeds
    /// `Server::set_cluster_capacity`. Default true; false: each node plans
    /// for itself alone.
    pub cluster_plan: bool,
    /// The capacity this node plans for (set by the cluster).
    pub(crate) cluster: Option<ClusterCapacity>,
}

impl ServerOptions {
    /// A server admitting `rate` connections per second, bucket starting
    /// empty, refusals free, pacing on.
    pub fn new(rate: u64) -> Self {
        ServerOptions {
            rate,
            initial_tokens: 0.0,
            capacity: None,
            reject_cost: 0.0,
            pacing: true,
            cost: None,
            expected_fleet: None,
            headroom: None,
            answer_503: false,
            clock_offset: Duration::ZERO,
            ping_interval: None,
            nodes: 1,
            balancer: Balancer::RoundRobin,
            cluster_plan: true,
            cluster: None,
        }
    }
}
