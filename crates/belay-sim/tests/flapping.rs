//! A server that drops every connection 300 ms after it is ready: reset on
//! open against reset after 5 s of readiness (seed: 46–77 vs 5–10 per minute).

use belay_sim::policy::{select_cases, PolicyCase};
use belay_sim::scenario::flapping::{run_flapping, FlappingRun, FlappingSpec, Reset};

fn case(name: &str) -> PolicyCase {
    select_cases(Some(name)).unwrap().remove(0)
}

fn flapping(name: &str, reset: Reset) -> FlappingRun {
    run_flapping(&FlappingSpec::seed_scenario(), &case(name), reset, None)
}

fn assert_close(what: &str, got: f64, want: f64, percent: f64) {
    let error = (got - want).abs() / want * 100.0;
    assert!(
        error <= percent,
        "{what}: {got} vs the seed's {want} ({error:.1} %)"
    );
}

#[test]
fn reset_on_open_lets_a_flapping_server_be_hammered() {
    // Seed, first minute: exponential 46, linear 77, full jitter 77.
    assert_close(
        "exponential",
        flapping("exponential", Reset::OnOpen).first_minute,
        46.0,
        10.0,
    );
    assert_close(
        "linear",
        flapping("linear_random_start_uncapped", Reset::OnOpen).first_minute,
        77.0,
        10.0,
    );
    assert_close(
        "full jitter",
        flapping("full_jitter", Reset::OnOpen).first_minute,
        77.0,
        10.0,
    );
}

#[test]
fn resetting_only_after_five_seconds_of_readiness_keeps_backing_off() {
    // Seed, first minute: exponential 5, linear 10, full jitter 8.
    assert_close(
        "exponential",
        flapping("exponential", Reset::AfterReady).first_minute,
        5.0,
        10.0,
    );
    assert_close(
        "linear",
        flapping("linear_random_start_uncapped", Reset::AfterReady).first_minute,
        10.0,
        10.0,
    );
    assert_close(
        "full jitter",
        flapping("full_jitter", Reset::AfterReady).first_minute,
        8.0,
        10.0,
    );
}

#[test]
fn belay_default_stays_under_ten_connects_a_minute() {
    let run = flapping("belay-default", Reset::AfterReady);
    assert!(
        run.first_minute <= 10.0,
        "first minute {}",
        run.first_minute
    );
    assert!(
        run.first_minute_range.1 <= 10,
        "worst client {:?}",
        run.first_minute_range
    );
    assert!(run.per_minute <= 10.0, "per minute {}", run.per_minute);
    // With reset on open the same policy would reconnect every ~0.8 s.
    let open = flapping("belay-default", Reset::OnOpen);
    assert!(open.first_minute > 60.0, "{}", open.first_minute);
}
