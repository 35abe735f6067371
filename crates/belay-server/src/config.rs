//! Server configuration: `Default` plus setters.

use std::time::Duration;

use belay_proto::server::DrainConfig;
use belay_proto::server::Limits;

use crate::broker::HistoryLimits;

/// How a server behaves.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Per-connection limits and their documented responses.
    pub limits: Limits,
    /// New sessions admitted per second (token bucket; burst = one second's worth).
    pub accept_rate: f64,
    /// Channel history bounds of the embedded broker.
    pub history: HistoryLimits,
    /// Graceful drain schedule.
    pub drain: DrainConfig,
    /// How long a completed idempotent request's result is kept.
    pub idempotency_retention: Duration,
    /// Whether `welcome` carries reconnect pacing slots.
    pub pacing: bool,
    /// The fleet the server expects to hold: pacing periods are sized for at
    /// least this many clients (and for the largest fleet seen).
    pub expected_fleet: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            limits: Limits::default(),
            accept_rate: 500.0,
            history: HistoryLimits::default(),
            drain: DrainConfig::default(),
            idempotency_retention: Duration::from_secs(300),
            pacing: true,
            expected_fleet: 0,
        }
    }
}

impl ServerConfig {
    /// Replace the limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Set the admission rate (sessions per second).
    pub fn with_accept_rate(mut self, rate: f64) -> Self {
        self.accept_rate = rate;
        self
    }

    /// Replace the history bounds.
    pub fn with_history(mut self, history: HistoryLimits) -> Self {
        self.history = history;
        self
    }

    /// Replace the drain schedule.
    pub fn with_drain(mut self, drain: DrainConfig) -> Self {
        self.drain = drain;
        self
    }

    /// Set how long idempotent results are kept.
    pub fn with_idempotency_retention(mut self, retention: Duration) -> Self {
        self.idempotency_retention = retention;
        self
    }

    /// Size pacing periods for at least `clients`.
    pub fn with_expected_fleet(mut self, clients: usize) -> Self {
        self.expected_fleet = clients;
        self
    }

    /// Advertise reconnect pacing slots in `welcome` (default on).
    pub fn with_pacing(mut self, pacing: bool) -> Self {
        self.pacing = pacing;
        self
    }
}
