//! Belay's default against the outage with its notices spread over a
//! window, next to the bound of the best possible protocol, each window at
//! several death phases (docs/SIMULATION.md, "Detection spread").

use std::time::Duration;

use belay_sim::policy::{select_cases, PolicyCase};
use belay_sim::scenario::outage::{run_outage, OutageSpec};
use belay_sim::scenario::spread::{run_spread, SpreadRow};

/// Death phases per window: fewer than `belay sim spread`'s 32, to keep
/// the suite short; the phases are the first 8 of the same sequence.
const PHASES: usize = 8;

fn case(name: &str) -> PolicyCase {
    select_cases(Some(name)).unwrap().remove(0)
}

fn rows(name: &str, windows: &[u64]) -> Vec<SpreadRow> {
    let windows: Vec<_> = windows.iter().map(|&s| Duration::from_secs(s)).collect();
    run_spread(&OutageSpec::seed_scenario(), &case(name), &windows, PHASES)
}

fn within_ten_percent(row: &SpreadRow) {
    let w = row.window;
    assert!(
        row.peak_ratio() <= 1.1,
        "W {w:?}: peak {}",
        row.peak_ratio()
    );
    assert!(
        row.attempts_ratio() <= 1.1,
        "W {w:?}: attempts {}",
        row.attempts_ratio()
    );
    let time = row.time_ratio().expect("everyone back within the horizon");
    assert!(time <= 1.1, "W {w:?}: all connected {time}");
}

#[test]
fn the_default_is_within_ten_percent_of_the_bound_on_every_column_for_the_issues_windows() {
    for row in rows("belay-default", &[0, 5, 10, 20]) {
        within_ten_percent(&row);
    }
}

#[test]
fn a_beat_longer_than_the_fleet_takes_keeps_the_default_within_ten_percent() {
    // 21 and 22 s: longer than N / C = 20 s, so each client attempts when
    // it notices, and those who noticed while the server was down come back
    // one beat later, after the last notice.
    for row in rows("belay-default", &[21, 22]) {
        within_ten_percent(&row);
    }
}

#[test]
fn between_the_outage_and_the_time_the_fleet_takes_a_beat_on_the_slots_keeps_the_default_within_ten_percent(
) {
    // 12-19 s: the fleet notices after the return and faster than the server
    // admits. A probe interval under 0.95 of the period sets the beat on
    // each client's slots, so no client finds its slot already passed when
    // it notices, wherever the death fell (before: up to 1.34 x on time).
    for row in rows("belay-default", &[12, 15, 19]) {
        within_ten_percent(&row);
    }
}

#[test]
fn the_seeds_best_client_only_policy_is_far_from_the_bound_at_every_spread() {
    for row in rows("full_jitter", &[0, 20]) {
        assert!(
            row.peak_ratio() > 2.0,
            "W {:?}: {}",
            row.window,
            row.peak_ratio()
        );
        assert!(
            row.attempts_ratio() > 1.3,
            "W {:?}: {}",
            row.window,
            row.attempts_ratio()
        );
    }
}

#[test]
fn with_belay_servers_pings_the_fleet_is_let_in_as_it_notices() {
    // belay-server pings every 25 s, on each client's place in the plan.
    // A silent death leaves each client its last ping spread over the 25 s
    // before it; it probes after 37.5 s of quiet and gives up 10 s later:
    // notices over (22.5, 47.5] s, all after the 10 s outage and slower than
    // the 500/s admission, so the bound is the last notice, 47.5 s, with
    // 10,000 attempts over those 25 s (400/s).
    let mut spec = OutageSpec::seed_scenario();
    spec.server.ping_interval = Some(Duration::from_secs(25));
    spec.horizon = Duration::from_secs(120);
    let m = run_outage(&spec, &case("belay-default"), None).metrics;
    let all = m
        .to_100
        .expect("everyone back within the horizon")
        .as_secs_f64();
    assert!(
        (47.0..=47.5 * 1.1).contains(&all),
        "all connected at {all} s"
    );
    assert!(
        m.peak_after_return as f64 <= 400.0 * 1.1,
        "peak {}",
        m.peak_after_return
    );
    assert!(
        m.attempts_per_client_after_return() <= 1.1,
        "{}",
        m.attempts_per_client_after_return()
    );
}

#[test]
fn with_belay_servers_pings_a_fleet_past_the_ping_interval_is_back_in_a_period() {
    // 20,000 clients at 500/s: a period of 42.1 s, longer than the 25 s
    // ping interval, so each client waits for its slot after it notices,
    // and belay-server's pings are set on the slots (`Beat::for_pings`):
    // everyone attempts at its first slot after the fleet's first notice
    // (22.5 s after the death). The bound: 22.5 + 20,000 / 500 = 62.5 s.
    let mut spec = OutageSpec::seed_scenario();
    spec.clients = 20_000;
    spec.server.ping_interval = Some(Duration::from_secs(25));
    spec.horizon = Duration::from_secs(150);
    let m = run_outage(&spec, &case("belay-default"), None).metrics;
    let all = m.to_100.expect("everyone back").as_secs_f64();
    assert!(
        (62.5..=62.5 * 1.1).contains(&all),
        "all connected at {all} s"
    );
    assert!(m.peak_after_return <= 500, "peak {}", m.peak_after_return);
    assert!(
        m.attempts_per_client_after_return() <= 1.01,
        "{}",
        m.attempts_per_client_after_return()
    );
}
