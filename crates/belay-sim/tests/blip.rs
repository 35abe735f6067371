//! A lone client's own network drops for 3 s while the server is healthy.

use std::time::Duration;

use belay_sim::policy::{select_cases, PolicyCase};
use belay_sim::scenario::blip::{run_blip, BlipSpec, Detection};

fn case(name: &str) -> PolicyCase {
    select_cases(Some(name)).unwrap().remove(0)
}

#[test]
fn a_client_whose_socket_errors_is_back_within_two_seconds_of_its_network() {
    let run = run_blip(&BlipSpec::default_scenario(), &case("belay-default"), None);
    assert_eq!(run.not_back, 0);
    let max = run.max().unwrap();
    assert!(
        max < Duration::from_secs(2),
        "slowest copy back after {max:?}"
    );
    assert!(
        run.mean().unwrap() < Duration::from_secs(1),
        "{:?}",
        run.mean()
    );
}

#[test]
fn unreachable_retries_do_not_depend_on_the_reconnect_policy() {
    // The attempts never reached the server, so every policy uses the same
    // short local schedule and comes back the same way.
    let spec = BlipSpec::default_scenario();
    let default = run_blip(&spec, &case("belay-default"), None);
    let exponential = run_blip(&spec, &case("exponential"), None);
    assert_eq!(default.back_after, exponential.back_after);
}

#[test]
fn when_only_the_heartbeat_notices_detection_takes_up_to_probe_interval_plus_timeout() {
    let mut spec = BlipSpec::default_scenario();
    spec.detection = Detection::Heartbeat;
    let run = run_blip(&spec, &case("belay-default"), None);
    assert_eq!(run.not_back, 0);
    // The loss is noticed 10–20 s after the drop (last frame, then a 10 s
    // quiet interval and a 10 s probe timeout), i.e. 7–17 s after the
    // network is back. A silent loss takes no fast path: the client waits
    // for its next slot, at most one period (1 s on this one-client server).
    let (min, max) = (run.back_after[0], run.max().unwrap());
    assert!(min >= Duration::from_secs(7), "{min:?}");
    assert!(max < Duration::from_secs(19), "{max:?}");
}
