//! Refusals that cost work: a server whose every attempt costs CPU, where
//! a herd that arrives faster than the workers can answer makes every
//! answer too late (docs/SIMULATION.md, "Refusals that cost work").

use std::time::Duration;

use belay_sim::cost::CostModel;
use belay_sim::policy::{select_cases, PolicyCase};
use belay_sim::scenario::cost_sweep::run_cost_sweep;
use belay_sim::scenario::outage::{run_outage, OutageSpec};

fn case(name: &str) -> PolicyCase {
    select_cases(Some(name)).unwrap().remove(0)
}

fn spec(handshake_ms: u64) -> OutageSpec {
    let mut spec = OutageSpec::seed_scenario();
    spec.horizon = Duration::from_secs(600);
    let mut cost = CostModel::new();
    cost.handshake = Duration::from_millis(handshake_ms);
    spec.server.cost = Some(cost);
    spec
}

#[test]
fn cheap_handshakes_change_little_for_the_default() {
    let run = run_outage(&spec(1), &case("belay-default"), None);
    let m = &run.metrics;
    assert_eq!(m.peak_after_return, 477);
    assert!(
        m.to_100.unwrap() <= Duration::from_secs(32),
        "{:?}",
        m.to_100
    );
    let work = run.work.expect("a cost model reports its work");
    assert_eq!(work.dropped, 0);
    assert_eq!(work.admitted_too_late, 0);
}

#[test]
fn fixed_one_second_never_catches_up_when_a_handshake_costs_five_ms() {
    // One worker refuses at most 200 attempts a second; the fleet tries
    // 10,000 a second. The backlog fills, the wait passes the connect
    // timeout, and every answer comes too late.
    let run = run_outage(&spec(5), &case("fixed"), None);
    assert!(run.metrics.to_100.is_none(), "{:?}", run.metrics.to_100);
    assert!(
        run.metrics.connected_at_end < 2_500,
        "{}",
        run.metrics.connected_at_end
    );
    assert!(run.goodput_at_end(Duration::from_secs(30)) < 10.0);
    let work = run.work.unwrap();
    assert!(work.dropped > 100_000, "{work:?}");
    assert!(work.admitted_too_late > 10_000, "{work:?}");
    assert!(
        work.busy > Duration::from_secs(280),
        "the server is busy all the time: {work:?}"
    );
}

#[test]
fn the_sweep_shows_which_policies_recover_at_each_cost() {
    let cases: Vec<_> = ["fixed", "full_jitter", "exponential", "belay-default"]
        .iter()
        .map(|n| case(n))
        .collect();
    let handshakes = [Duration::from_millis(2), Duration::from_millis(5)];
    let cells = run_cost_sweep(&spec(1), &cases, CostModel::new(), &handshakes);
    let recovered = |c: usize, h: usize| !cells[c][h].never_caught_up();
    // At 2 ms every policy still gets everyone in.
    assert!((0..cases.len()).all(|c| recovered(c, 0)));
    // At 5 ms, fixed and full jitter fall into the metastable state;
    // exponential's long waits and the default's slots get everyone in.
    assert!(cells[0][1].metastable(500) && cells[1][1].metastable(500));
    assert!(recovered(2, 1) && recovered(3, 1));
    // The default keeps its peak at the slot rate whatever the cost.
    assert_eq!(cells[3][1].run.metrics.peak_after_return, 477);
}

#[test]
fn an_accept_rate_within_the_cpu_keeps_the_default_on_its_plan() {
    // At 5 ms per handshake (+0.5 ms per session) one core admits about
    // 180 a second; an accept rate set below that keeps every answer in
    // time: no drops, nothing admitted too late, everyone in about one
    // plan period after the return.
    let mut spec = spec(5);
    spec.server.rate = 150;
    let run = run_outage(&spec, &case("belay-default"), None);
    let work = run.work.unwrap();
    assert_eq!((work.dropped, work.admitted_too_late), (0, 0), "{work:?}");
    let all = run.metrics.to_100.expect("everyone back");
    // Period 10,000 / (0.95 × 150) = 70.2 s after the return at 10 s.
    assert!(all <= Duration::from_secs(82), "{all:?}");
}
