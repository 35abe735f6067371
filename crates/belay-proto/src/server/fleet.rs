//! The server's side of reconnect pacing: spreading a fleet's reconnects.
//!
//! A server that admits `R` connections per second and holds `N` clients
//! needs at least `N / R` seconds to take them all back after a restart.
//! [`FleetPacing`] turns that into the hints of the protocol:
//!
//! * while healthy, every `welcome` carries a slot grid ([`Pacing`]): a
//!   period `P = N / (headroom × R)` (clamped) and a phase. Phases follow the
//!   golden-ratio sequence on one server-wide grid, so any run of
//!   consecutively admitted clients is spread almost evenly over the period
//!   without the server knowing `N` in advance. After an unplanned outage the
//!   clients come back on their slots at about `headroom × R` per second.
//! * before a planned restart, [`FleetPacing::restart_advice`] gives each
//!   connection its own point in `[down_for, down_for + N / (headroom × R))`,
//!   evenly spaced, so every client gets in at its first attempt.
//!
//! Phases are measured from the moment the `welcome` is sent (the client
//! anchors them at the moment it receives it), so no clocks are compared.
//!
//! A node of a cluster behind a balancer plans for the cluster instead
//! ([`FleetPacing::set_cluster`], [`ClusterCapacity`]): `P = N / (headroom
//! × R)` with `N` the cluster's fleet and `R` the sum of the nodes' rates,
//! so the whole fleet comes back at about `headroom × R`, spread over the
//! nodes by the balancer. Each node keeps its own grid (its own origin and
//! golden-ratio phases): the union of the nodes' evenly spread slots is
//! evenly spread too, and nothing has to be agreed between nodes but the
//! capacity.

use std::time::Duration;

use super::ClusterCapacity;
use crate::message::{Pacing, ReconnectAdvice};
use crate::time::Instant;

/// The golden-ratio conjugate: consecutive multiples modulo 1 are the most
/// evenly spread sequence for an unknown count (three-gap theorem).
const GOLDEN: f64 = 0.618_033_988_749_894_8;

/// Plans reconnect pacing for one server.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FleetPacing {
    admission_rate: f64,
    headroom: f64,
    min_period: Duration,
    max_period: Duration,
    origin: Instant,
    assigned: u64,
    /// The largest fleet seen or announced: periods are never sized for
    /// less, so clients that joined while the fleet was small (or after a
    /// restart, before everyone is back) do not get short periods.
    fleet: usize,
    /// The cluster this node admits for, if it is one of several behind a
    /// balancer.
    cluster: Option<ClusterCapacity>,
}

impl FleetPacing {
    /// A plan for a server admitting `admission_rate` connections per second,
    /// whose slot grid starts at `origin` on the server's clock.
    /// Defaults: headroom 0.95, period between 1 s and
    /// [`MAX_PACING_PERIOD`](crate::backoff::MAX_PACING_PERIOD) (one hour).
    pub fn new(admission_rate: f64, origin: Instant) -> Self {
        FleetPacing {
            admission_rate: if admission_rate > 0.0 {
                admission_rate
            } else {
                1.0
            },
            headroom: 0.95,
            min_period: Duration::from_secs(1),
            max_period: crate::backoff::MAX_PACING_PERIOD,
            origin,
            assigned: 0,
            fleet: 0,
            cluster: None,
        }
    }

    /// Aim at this fraction of the admission rate (clamped to `[0.1, 1]`),
    /// leaving the rest for jitter in arrivals and for new clients.
    pub fn set_headroom(&mut self, headroom: f64) -> &mut Self {
        self.headroom = if headroom.is_nan() {
            1.0
        } else {
            headroom.clamp(0.1, 1.0)
        };
        self
    }

    /// Bounds of the advertised period.
    pub fn set_period_bounds(&mut self, min: Duration, max: Duration) -> &mut Self {
        self.min_period = min.max(Duration::from_millis(1));
        self.max_period = max
            .max(self.min_period)
            .min(crate::backoff::MAX_PACING_PERIOD);
        self
    }

    /// Size periods for at least `clients` (e.g. the fleet a server expects
    /// to hold, or the peak before a restart).
    pub fn set_expected_fleet(&mut self, clients: usize) -> &mut Self {
        self.fleet = self.fleet.max(clients);
        self
    }

    /// The fleet size periods are planned for: the largest seen or announced.
    pub fn fleet(&self) -> usize {
        self.fleet
    }

    /// The admission rate of this node, per second.
    pub fn admission_rate(&self) -> f64 {
        self.admission_rate
    }

    /// Plan for a cluster of nodes behind a balancer (or, with `None`, for
    /// this node alone, the default): from the next `welcome` on, periods
    /// are `cluster fleet / (headroom × cluster rate)`, the cluster fleet
    /// being [`ClusterCapacity::fleet_for`] this node's fleet. Call it
    /// whenever the control plane learns a new capacity (a node joined,
    /// left, or changed its rate); clients keep the period of their last
    /// `welcome` until their next.
    pub fn set_cluster(&mut self, cluster: Option<ClusterCapacity>) -> &mut Self {
        self.cluster = cluster;
        self
    }

    /// The cluster the plan is for, if any.
    pub fn cluster(&self) -> Option<ClusterCapacity> {
        self.cluster
    }

    /// Slots handed out so far.
    pub fn assigned(&self) -> u64 {
        self.assigned
    }

    /// The period for a fleet of `connections` on this node: long enough
    /// that one attempt per client per period stays under `headroom × rate`
    /// (with a [cluster](Self::set_cluster): the cluster's fleet under
    /// `headroom ×` the cluster's rate).
    pub fn period_for(&self, connections: usize) -> Duration {
        let (fleet, rate) = match self.cluster {
            Some(cluster) => (cluster.fleet_for(connections), cluster.admission_rate()),
            None => (connections, self.admission_rate),
        };
        let secs = fleet as f64 / (self.headroom * rate);
        let period = Duration::try_from_secs_f64(secs).unwrap_or(self.max_period);
        // Whole milliseconds, as carried on the wire.
        let period = Duration::from_millis(u64::try_from(period.as_millis()).unwrap_or(u64::MAX));
        period.clamp(self.min_period, self.max_period)
    }

    /// The pacing to put in the `welcome` sent at `now` to a server that
    /// will then hold `connections` clients. The period is sized for the
    /// largest fleet seen or announced ([`FleetPacing::set_expected_fleet`]).
    pub fn assign(&mut self, now: Instant, connections: usize) -> Pacing {
        self.fleet = self.fleet.max(connections);
        let period = self.period_for(self.fleet);
        let period_ms = u64::try_from(period.as_millis()).unwrap_or(u64::MAX).max(1);
        let index = self.assigned;
        self.assigned = self.assigned.saturating_add(1);
        let offset_ms = ((index as f64 * GOLDEN).fract() * period_ms as f64) as u64;
        let since_origin = now.saturating_duration_since(self.origin);
        let elapsed_ms = since_origin.as_millis() as u64 % period_ms;
        // The client's grid is anchored at receipt of this welcome, so the
        // phase is the slot's position measured from now.
        let phase_ms = (offset_ms + period_ms - elapsed_ms) % period_ms;
        Pacing {
            period_ms,
            phase_ms,
            origin_ms: Some(u64::try_from(since_origin.as_millis()).unwrap_or(u64::MAX)),
        }
    }

    /// Advice for connection `index` of `total` before a planned restart
    /// that keeps the server away for `down_for`: a point window, evenly
    /// spaced at `headroom × rate`, so each client is admitted at its first
    /// attempt. `reason` is e.g. `"restart"` or `"deploy"`.
    pub fn restart_advice(
        &self,
        reason: &str,
        index: usize,
        total: usize,
        down_for: Duration,
    ) -> ReconnectAdvice {
        let total = total.max(1);
        let span_ms = self.period_for(total).as_millis() as f64;
        let offset_ms = (index.min(total - 1) as f64 + 0.5) / total as f64 * span_ms;
        let at_ms = (down_for.as_millis() as f64 + offset_ms) as u64;
        ReconnectAdvice {
            reason: reason.to_owned(),
            min_delay_ms: at_ms,
            max_delay_ms: at_ms,
            message: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backoff::PacingSlots;

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    #[test]
    fn the_period_keeps_one_attempt_per_client_under_the_admission_rate() {
        let plan = FleetPacing::new(500.0, ms(0));
        assert_eq!(plan.period_for(10_000), Duration::from_millis(21_052));
        assert_eq!(
            plan.period_for(1),
            Duration::from_secs(1),
            "clamped to the minimum"
        );
        assert_eq!(plan.period_for(1_000_000), Duration::from_millis(2_105_263));
        assert_eq!(plan.period_for(10_000_000), Duration::from_secs(3_600));
    }

    #[test]
    fn assigned_slots_spread_a_fleet_evenly_over_any_second() {
        let mut plan = FleetPacing::new(500.0, ms(0));
        let n = 10_000;
        let mut per_second = vec![0u32; 22];
        for i in 0..n {
            // Welcomes sent at various times land on one server-wide grid.
            let sent_at = ms(1_000 + (i as u64 * 7) % 5_000);
            let pacing = plan.assign(sent_at, n);
            let slots = PacingSlots::new(
                Duration::from_millis(pacing.period_ms),
                Duration::from_millis(pacing.phase_ms),
                sent_at,
            );
            let slot = slots.next_slot_after(ms(100_000));
            let second = (slot.as_millis() - 100_000) / 1_000;
            per_second[second as usize] += 1;
        }
        let full: Vec<u32> = per_second[..21].to_vec();
        let (lo, hi) = (full.iter().min().unwrap(), full.iter().max().unwrap());
        assert!(*hi <= 480 && *lo >= 470, "{per_second:?}");
    }

    #[test]
    fn restart_advice_gives_each_client_its_own_point_after_the_downtime() {
        let plan = FleetPacing::new(500.0, ms(0));
        let first = plan.restart_advice("restart", 0, 10_000, Duration::from_secs(10));
        let last = plan.restart_advice("restart", 9_999, 10_000, Duration::from_secs(10));
        assert_eq!(first.min_delay_ms, first.max_delay_ms);
        assert_eq!(first.min_delay_ms, 10_001);
        assert!(last.min_delay_ms < 10_000 + 21_052);
        let mut per_second = [0u32; 32];
        for i in 0..10_000 {
            let a = plan.restart_advice("restart", i, 10_000, Duration::from_secs(10));
            per_second[(a.min_delay_ms / 1_000) as usize] += 1;
        }
        assert!(per_second.iter().all(|&c| c <= 476), "{per_second:?}");
    }

    #[test]
    fn a_shrinking_or_growing_fleet_keeps_the_period_of_its_largest_size() {
        let mut plan = FleetPacing::new(500.0, ms(0));
        assert_eq!(plan.assign(ms(0), 10_000).period_ms, 21_052);
        assert_eq!(
            plan.assign(ms(0), 10).period_ms,
            21_052,
            "a restart is coming back"
        );
        let mut announced = FleetPacing::new(500.0, ms(0));
        announced.set_expected_fleet(10_000);
        assert_eq!(
            announced.assign(ms(0), 1).period_ms,
            21_052,
            "the first client of a big fleet"
        );
    }

    #[test]
    fn a_cluster_plan_is_sized_for_the_cluster() {
        let mut plan = FleetPacing::new(500.0, ms(0));
        plan.set_expected_fleet(10_000);
        // Four nodes of 500/s: the same period as one node alone.
        plan.set_cluster(ClusterCapacity::new(2_000.0, 4));
        assert_eq!(plan.assign(ms(0), 1).period_ms, 21_052);
        // The other nodes are slower: the cluster admits 1,500/s.
        plan.set_cluster(ClusterCapacity::new(1_500.0, 4));
        assert_eq!(plan.assign(ms(0), 1).period_ms, 28_070);
        // The control plane counts 60,000 clients in all (this node holds
        // fewer than its share).
        plan.set_cluster(ClusterCapacity::new(1_500.0, 4).map(|c| c.with_fleet(60_000)));
        assert_eq!(plan.assign(ms(0), 1).period_ms, 42_105);
        assert_eq!(plan.cluster().and_then(|c| c.fleet()), Some(60_000));
        // A count short of what the nodes expect (a fleet still
        // connecting) keeps the period for the expected fleet.
        plan.set_cluster(ClusterCapacity::new(1_500.0, 4).map(|c| c.with_fleet(20_000)));
        assert_eq!(plan.assign(ms(0), 1).period_ms, 28_070);
        plan.set_cluster(ClusterCapacity::new(1_500.0, 4).map(|c| c.with_fleet(60_000)));
        let advice = plan.restart_advice("deploy", 9_999, 10_000, Duration::ZERO);
        assert!(advice.min_delay_ms > 42_000, "{advice:?}");
        plan.set_cluster(None);
        assert_eq!(plan.assign(ms(0), 1).period_ms, 21_052);
    }

    #[test]
    fn silly_rates_do_not_panic() {
        let mut plan = FleetPacing::new(0.0, ms(0));
        plan.set_headroom(f64::NAN);
        let p = plan.assign(Instant::MAX, usize::MAX);
        assert!(p.period_ms >= 1 && p.phase_ms < p.period_ms);
        let a = plan.restart_advice("deploy", usize::MAX, 0, Duration::MAX);
        assert!(a.min_delay_ms <= a.max_delay_ms);
    }
}
