//! The simulated server admits through the core's admission code.
//!
//! Each test runs a fleet, then replays the instants of the run's attempts
//! through a `belay_proto::server::TokenBucket` driven directly, built as
//! belay-server builds its accept bucket from `ServerConfig::accept_rate`
//! (rate and capacity `accept_rate`; the model's returning server starts it
//! empty). The bucket must admit exactly at the instants at which the run's
//! clients got connected, and refuse exactly the run's wasted attempts.

use belay_proto::server::TokenBucket;
use belay_proto::Instant;
use belay_sim::policy::all_cases;
use belay_sim::scenario::outage::{run_outage_all, OutageRun, OutageSpec, INCIDENT_AT};

/// Replay `run`'s attempts through the core's bucket; `reject_cost` tokens
/// are burnt per refusal as the model does (`--reject-cost`).
fn replay(spec: &OutageSpec, run: &OutageRun, reject_cost: f64) {
    let name = &run.case.name;
    let up_at = INCIDENT_AT.saturating_add(spec.down_for);
    let rate = spec.server.rate as f64;
    let mut bucket = TokenBucket::new(rate, rate.max(1.0), up_at, false);
    let mut admitted = Vec::new();
    let mut refused = 0u64;
    for &at in run.record.attempts() {
        // Down until `up_at`: refused without asking the bucket.
        if at < up_at {
            refused += 1;
            continue;
        }
        match bucket.try_take(at) {
            Ok(()) => admitted.push(at),
            Err(_) => {
                refused += 1;
                if reject_cost > 0.0 {
                    bucket.set_tokens(at, bucket.available(at) - reject_cost);
                }
            }
        }
    }
    // With no latency a client is connected at the instant it is admitted.
    let connects: Vec<Instant> = run.record.connects().iter().map(|&(at, _)| at).collect();
    assert_eq!(admitted.len(), connects.len(), "{name}: admissions");
    assert!(admitted == connects, "{name}: admission instants differ");
    assert_eq!(refused, run.metrics.wasted_attempts, "{name}: refusals");
    assert!(refused > 0, "{name}: the bucket never refused");
}

#[test]
fn every_policy_of_the_seed_outage_is_admitted_as_the_cores_bucket_admits() {
    let spec = OutageSpec::seed_scenario();
    for run in run_outage_all(&spec, &all_cases(), None) {
        replay(&spec, &run, 0.0);
    }
}

#[test]
fn refusals_that_burn_tokens_are_charged_through_the_cores_bucket() {
    let mut spec = OutageSpec::seed_scenario();
    spec.clients = 2_000;
    spec.server = belay_sim::server::ServerOptions::new(100);
    spec.server.reject_cost = 1.0;
    for run in run_outage_all(&spec, &all_cases(), None) {
        replay(&spec, &run, 1.0);
    }
}
