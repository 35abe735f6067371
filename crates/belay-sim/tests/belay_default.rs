//! Belay's default against the same outage: beat the seed's best on all
//! three columns at once, and do it for the reason we think.

use std::time::Duration;

use belay_sim::metrics::fixed_buckets;
use belay_sim::policy::{select_cases, PolicyCase};
use belay_sim::scenario::outage::{run_outage, OutageRun, OutageSpec};

fn case(name: &str) -> PolicyCase {
    select_cases(Some(name)).unwrap().remove(0)
}

fn outage(name: &str) -> OutageRun {
    run_outage(&OutageSpec::seed_scenario(), &case(name), None)
}

fn attempts_between(run: &OutageRun, from_ms: u64, to_ms: u64) -> usize {
    let from = run.record.from();
    run.record
        .attempts()
        .iter()
        .filter(|at| {
            let ms = at.saturating_duration_since(from).as_millis() as u64;
            (from_ms..to_ms).contains(&ms)
        })
        .count()
}

#[test]
fn belay_default_beats_the_seeds_best_on_all_three_columns_at_once() {
    let m = outage("belay-default").metrics;
    assert!(m.peak_after_return <= 600, "peak {}", m.peak_after_return);
    assert!(m.total_attempts <= 25_000, "total {}", m.total_attempts);
    let all = m.to_100.expect("everyone back within 90 s");
    assert!(
        all <= Duration::from_secs(32),
        "all connected after {all:?}"
    );
}

#[test]
fn the_default_tries_once_fast_then_waits_for_its_slot() {
    let run = outage("belay-default");
    // The fast first attempt: every client within the first second (plus
    // the few whose slot follows within the same second).
    let first_second = attempts_between(&run, 0, 1_000);
    assert!((10_000..10_100).contains(&first_second), "{first_second}");
    // Then each client's first slot after ~1 s: slots are spread over a
    // period of 10,000 / (0.95 × 500) = 21.05 s, so about (10 − 1.5) / 21
    // of them fall while the server is still down.
    let down_slots = attempts_between(&run, 0, 10_000) - 10_000;
    assert!((3_800..=4_600).contains(&down_slots), "{down_slots}");
    // After the return: about 475 per second, every one admitted but a
    // handful, until the last slot of the period.
    let m = &run.metrics;
    assert!(
        (450..=500).contains(&m.peak_after_return),
        "{}",
        m.peak_after_return
    );
    let buckets = fixed_buckets(
        run.record.attempts(),
        run.record.from() + Duration::from_secs(11),
        Duration::from_secs(1),
    );
    assert!(
        buckets[..19].iter().all(|&n| (440..=510).contains(&n)),
        "{buckets:?}"
    );
    let admitted = m.total_attempts as u64 - m.wasted_attempts;
    assert_eq!(admitted, 10_000);
    assert!(m.wasted_attempts - 10_000 - down_slots as u64 <= 20);
    let last = m.to_100.unwrap().as_secs_f64();
    assert!((30.5..=31.5).contains(&last), "{last}");
}

#[test]
fn without_pacing_hints_the_default_is_an_ordinary_jittered_backoff() {
    let m = outage("belay-default-no-pacing").metrics;
    assert!(m.peak_after_return > 1_000, "{}", m.peak_after_return);
    assert!(m.total_attempts > 40_000, "{}", m.total_attempts);
}

#[test]
fn a_planned_restart_costs_about_one_attempt_per_client() {
    let spec = OutageSpec::seed_scenario().restart();
    for name in ["belay-default", "fixed", "exponential", "full_jitter"] {
        let m = run_outage(&spec, &case(name), None).metrics;
        assert!(m.total_attempts <= 10_010, "{name}: {}", m.total_attempts);
        assert!(
            m.peak_after_return <= 500,
            "{name}: {}",
            m.peak_after_return
        );
        assert_eq!(
            m.attempts_while_down, 0,
            "{name}: nobody comes before the advice says"
        );
        let all = m.to_100.expect("everyone back");
        assert!(all <= Duration::from_secs(32), "{name}: {all:?}");
    }
}

#[test]
fn a_large_fleet_keeps_the_same_shape() {
    // 100,000 clients at 5,000/s: the same ratio, ten times the fleet.
    let mut spec = OutageSpec::seed_scenario();
    spec.clients = 100_000;
    spec.server = belay_sim::server::ServerOptions::new(5_000);
    let m = run_outage(&spec, &case("belay-default"), None).metrics;
    assert!(m.peak_after_return <= 6_000, "{}", m.peak_after_return);
    assert!(m.total_attempts <= 250_000, "{}", m.total_attempts);
    assert!(m.to_100.unwrap() <= Duration::from_secs(32));
}

#[test]
fn a_fleet_past_five_minutes_of_admissions_is_still_paced() {
    // 20,000 clients at 50/s need 400 s: a period of 421 s, past the 300 s
    // the core once capped it at (the shape of 200,000 clients at 500/s).
    let mut spec = OutageSpec::seed_scenario();
    spec.clients = 20_000;
    spec.server = belay_sim::server::ServerOptions::new(50);
    spec.horizon = Duration::from_secs(800);
    let m = run_outage(&spec, &case("belay-default"), None).metrics;
    let bound = 10.0 + 20_000.0 / 50.0;
    let all = m.to_100.expect("everyone back").as_secs_f64();
    assert!(all <= bound * 1.1, "all connected at {all} s");
    assert!(m.peak_after_return <= 50, "peak {}", m.peak_after_return);
    assert!(m.attempts_per_client_after_return() <= 1.01);
}
