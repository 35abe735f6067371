//! An upgrade refused with `Retry-After: R` (the server's admission control
//! answers native clients with HTTP 503 and exactly that) is advice: the
//! next dial comes uniformly within [R, 2R), never sooner, so a fleet told
//! the same R does not return in one wave.

use std::time::Duration;

use belay_proto::{Config, Failure, Input, RetryPlan, Session};

use crate::common::{retry_of, Driver};

fn refused_with_retry_after(seed: u64, after_ms: u64) -> Duration {
    let mut d = Driver::new(Config::default());
    d.session = Session::new(Config::default(), d.now, seed);
    let id = d.start();
    let out = d.input(Input::TransportFailed(
        id,
        Failure::Rejected {
            status: 503,
            retry_after_ms: Some(after_ms),
        },
    ));
    match retry_of(&out) {
        RetryPlan::After { delay } => delay,
        other => panic!("a retry is planned: {other:?}"),
    }
}

#[test]
fn the_next_dial_comes_within_r_and_2r() {
    let delays: Vec<Duration> = (0..64)
        .map(|seed| refused_with_retry_after(seed, 5_000))
        .collect();
    for delay in &delays {
        assert!(
            (Duration::from_secs(5)..Duration::from_secs(10)).contains(delay),
            "{delay:?}"
        );
    }
    let spread = delays
        .iter()
        .max()
        .unwrap()
        .saturating_sub(*delays.iter().min().unwrap());
    assert!(
        spread >= Duration::from_secs(2),
        "the fleet is spread: {spread:?}"
    );
}

#[test]
fn a_refusal_without_retry_after_keeps_the_ordinary_backoff() {
    let mut d = Driver::new(Config::default());
    let id = d.start();
    let out = d.input(Input::TransportFailed(id, Failure::rejected(503)));
    let RetryPlan::After { delay } = retry_of(&out) else {
        panic!("a retry is planned");
    };
    assert!(delay < Duration::from_secs(5), "{delay:?}");
}
