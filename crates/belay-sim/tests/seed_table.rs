//! The seed's table (10,000 clients, 10 s down, then 500/s), reproduced by
//! running the core's own policies.

use std::time::Duration;

use belay_sim::metrics::OutageMetrics;
use belay_sim::policy::{select_cases, PolicyCase};
use belay_sim::scenario::outage::{run_outage, OutageSpec};

fn case(name: &str) -> PolicyCase {
    select_cases(Some(name)).unwrap().remove(0)
}

fn run(spec: &OutageSpec, name: &str) -> OutageMetrics {
    run_outage(spec, &case(name), None).metrics
}

/// `got` is within ±`percent` % of `want`.
fn assert_close(what: &str, got: f64, want: f64, percent: f64) {
    let error = (got - want).abs() / want * 100.0;
    assert!(
        error <= percent,
        "{what}: {got} is {error:.1} % away from the seed's {want} (allowed {percent} %)"
    );
}

fn secs(d: Option<Duration>) -> f64 {
    d.expect("everyone connected within the horizon")
        .as_secs_f64()
}

#[test]
fn fixed_one_second_matches_the_seed_row() {
    let m = run(&OutageSpec::seed_scenario(), "fixed");
    assert_close("peak", m.peak_after_return as f64, 10_000.0, 10.0);
    assert_close("total", m.total_attempts as f64, 204_000.0, 10.0);
    assert_close("all connected", secs(m.to_100), 30.0, 10.0);
    // The exact figures of this model: every second the whole fleet tries;
    // the bucket is empty at 10 s and admits 500 at each of 11 … 30 s.
    assert_eq!(m.total_attempts, 205_000);
    assert_eq!(m.to_100, Some(Duration::from_secs(30)));
}

#[test]
fn exponential_matches_the_seed_row_and_never_finishes() {
    let m = run(&OutageSpec::seed_scenario(), "exponential");
    assert_close("peak", m.peak_after_return as f64, 10_000.0, 10.0);
    assert_close("total", m.total_attempts as f64, 58_350.0, 10.0);
    assert_eq!(m.to_100, None, "not within 90 s");
    // Waves at 1, 3, 7, 15, 31 and 61 s; each wave after the return gets a
    // full bucket of 500.
    assert_eq!(m.total_attempts, 58_500);
    assert_eq!(m.connected_at_end, 1_500);
}

#[test]
fn random_start_linear_with_a_one_second_window_matches_the_seed_row() {
    let m = run(&OutageSpec::seed_scenario(), "linear_random_start_uncapped");
    assert_close("peak", m.peak_after_return as f64, 2_040.0, 10.0);
    assert_close("total", m.total_attempts as f64, 63_235.0, 10.0);
    assert_close("all connected", secs(m.to_100), 35.0, 10.0);
}

#[test]
fn full_jitter_matches_the_seed_row() {
    let m = run(&OutageSpec::seed_scenario(), "full_jitter");
    assert_close("peak", m.peak_after_return as f64, 1_540.0, 10.0);
    assert_close("total", m.total_attempts as f64, 53_501.0, 10.0);
    assert_close("all connected", secs(m.to_100), 51.0, 10.0);
}

#[test]
fn the_seed_rows_hold_for_other_seeds_too() {
    for seed in [2, 3] {
        let mut spec = OutageSpec::seed_scenario();
        spec.seed = seed;
        let linear = run(&spec, "linear_random_start_uncapped");
        assert_close(
            "linear peak",
            linear.peak_after_return as f64,
            2_040.0,
            10.0,
        );
        assert_close("linear total", linear.total_attempts as f64, 63_235.0, 10.0);
        let jitter = run(&spec, "full_jitter");
        assert_close(
            "jitter peak",
            jitter.peak_after_return as f64,
            1_540.0,
            10.0,
        );
        assert_close("jitter total", jitter.total_attempts as f64, 53_501.0, 10.0);
        assert_close("jitter all", secs(jitter.to_100), 51.0, 10.0);
    }
}

#[test]
fn a_bucket_like_a_100ms_tick_reproduces_the_deterministic_rows_exactly() {
    // A 100 ms tick that caps the bucket at 500 and then adds 50 gives 50
    // tokens at the return and 550 after a long rest.
    let mut spec = OutageSpec::seed_scenario();
    spec.server.initial_tokens = 50.0;
    spec.server.capacity = Some(550.0);
    let fixed = run(&spec, "fixed");
    assert_eq!(fixed.total_attempts, 204_000);
    assert_eq!(fixed.to_100, Some(Duration::from_secs(30)));
    let exponential = run(&spec, "exponential");
    assert_eq!(exponential.total_attempts, 58_350);
    // "about 1,650 of 10,000 connected by 90 s"
    assert_eq!(exponential.connected_at_end, 1_650);
}
