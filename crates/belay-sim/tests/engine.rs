//! The engine itself: exact timelines of tiny fleets, options, reproducibility.

use std::time::Duration;

use belay_proto::backoff::BackoffPolicy;
use belay_sim::policy::{all_cases, select_cases, PolicyCase};
use belay_sim::scenario::outage::{run_outage, run_outage_all, OutageSpec};

fn case(name: &str) -> PolicyCase {
    select_cases(Some(name)).unwrap().remove(0)
}

fn small(clients: usize) -> OutageSpec {
    let mut spec = OutageSpec::seed_scenario();
    spec.clients = clients;
    spec
}

fn offsets_ms(spec: &OutageSpec, name: &str) -> Vec<u64> {
    let run = run_outage(spec, &case(name), None);
    let from = run.record.from();
    run.record
        .attempts()
        .iter()
        .map(|at| at.saturating_duration_since(from).as_millis() as u64)
        .collect()
}

#[test]
fn a_fixed_client_retries_every_second_and_gets_in_once_a_token_is_there() {
    let spec = small(1);
    // Down until 10 s; at 10 s the bucket is empty, at 11 s it has tokens.
    assert_eq!(
        offsets_ms(&spec, "fixed"),
        (1..=11).map(|s| s * 1000).collect::<Vec<_>>()
    );
    let m = run_outage(&spec, &case("fixed"), None).metrics;
    assert_eq!((m.total_attempts, m.wasted_attempts), (11, 10));
    assert_eq!(m.to_100, Some(Duration::from_secs(11)));
}

#[test]
fn an_exponential_client_comes_in_waves() {
    assert_eq!(offsets_ms(&small(3), "exponential"), {
        let mut waves = Vec::new();
        for s in [1, 3, 7, 15] {
            waves.extend([s * 1000; 3]);
        }
        waves
    });
}

#[test]
fn latency_delays_the_outcome_and_the_welcome() {
    let mut spec = small(1);
    spec.latency = Duration::from_millis(100);
    // Each refusal is learnt 100 ms after the attempt, so the fixed 1 s
    // delays drift by 100 ms per attempt: 1.0, 2.1, … 10.9 s (the server,
    // deciding at +50 ms, is up by then and has tokens).
    let attempts = offsets_ms(&spec, "fixed");
    assert_eq!(
        attempts,
        (0..10).map(|k| 1000 + k * 1100).collect::<Vec<_>>()
    );
    let m = run_outage(&spec, &case("fixed"), None).metrics;
    // Open at +100 ms, welcome 100 ms after `connect`.
    assert_eq!(m.to_100, Some(Duration::from_millis(10_900 + 200)));
}

#[test]
fn a_detection_window_spreads_the_first_attempts() {
    let mut spec = small(1000);
    spec.detection_window = Duration::from_secs(20);
    let attempts = offsets_ms(&spec, "fixed");
    // Uniform over 20 s: about 50 clients notice within the first second,
    // and try one second later.
    let first_wave = attempts.iter().filter(|&&ms| ms < 2000).count();
    assert!((20..=90).contains(&first_wave), "{first_wave}");
}

#[test]
fn refusals_that_burn_capacity_starve_a_spread_herd() {
    let mut spec = OutageSpec::seed_scenario();
    let free = run_outage(&spec, &case("full_jitter"), None).metrics;
    spec.server.reject_cost = 1.0;
    let costly = run_outage(&spec, &case("full_jitter"), None).metrics;
    assert!(costly.total_attempts > free.total_attempts);
    assert!(costly.to_100.is_none() || costly.to_100 > free.to_100);
    // Belay's default stays under the admission rate, so it hardly notices.
    let default = run_outage(&spec, &case("belay-default"), None).metrics;
    assert!(default.to_100.unwrap() <= Duration::from_secs(32));
}

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_another() {
    let spec = small(2000);
    let a = run_outage(&spec, &case("full_jitter"), None);
    let b = run_outage(&spec, &case("full_jitter"), None);
    assert_eq!(a.record.attempts(), b.record.attempts());
    assert_eq!(a.record.connects(), b.record.connects());
    assert_eq!(a.metrics, b.metrics);
    let mut other = spec.clone();
    other.seed = 2;
    let c = run_outage(&other, &case("full_jitter"), None);
    assert_ne!(a.record.attempts(), c.record.attempts());
}

#[test]
fn running_the_policies_in_parallel_changes_nothing() {
    let spec = small(1000);
    let cases = all_cases();
    let together = run_outage_all(&spec, &cases, None);
    for (case, run) in cases.iter().zip(&together) {
        let alone = run_outage(&spec, case, None);
        assert_eq!(alone.metrics, run.metrics, "{}", case.name);
        assert_eq!(
            alone.record.attempts(),
            run.record.attempts(),
            "{}",
            case.name
        );
    }
}

#[test]
fn a_custom_policy_runs_like_any_other() {
    let custom = PolicyCase::new(
        "paced-no-fast-path",
        "server-paced without the fast first attempt",
        BackoffPolicy::server_paced(
            Duration::ZERO,
            BackoffPolicy::equal_jitter(Duration::from_secs(1), Duration::from_secs(30)),
        ),
        true,
    );
    let m = run_outage(&OutageSpec::seed_scenario(), &custom, None).metrics;
    // Without the fast path every attempt lands on a slot: about one per
    // client plus those that fall in the downtime.
    assert!(m.total_attempts < 16_000, "{}", m.total_attempts);
    assert!(m.peak_after_return <= 500, "{}", m.peak_after_return);
}
