//! Server pacing: after the fast first retry, reconnects land on the slot
//! grid the welcome advertised, and deploy doubling leaves that grid alone.

use std::time::Duration;

use belay_proto::backoff::BackoffPolicy;
use belay_proto::message::Pacing;
use belay_proto::{CloseCode, CloseInfo, Config, Failure, Input, Instant, RetryPlan};

use crate::common::{advice, closed, opened_id, retry_of, welcome, Driver};

#[test]
fn server_paced_reconnects_land_on_the_advertised_slots() {
    let mut config = Config::default();
    config.set_backoff(BackoffPolicy::server_paced(
        Duration::from_secs(1),
        BackoffPolicy::fixed(Duration::from_secs(5)),
    ));
    let mut d = Driver::new(config);
    let id = d.start();
    d.at(1_000);
    d.input(Input::TransportOpened(id));
    let mut w = welcome("s-1");
    w.pacing = Some(Pacing {
        period_ms: 20_000,
        phase_ms: 7_000,
        origin_ms: None,
    });
    d.welcome(id, w);
    d.at(30_000);
    // First loss: the fast path, within 1 s.
    let out = d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    let RetryPlan::After { delay } = retry_of(&out) else {
        panic!()
    };
    assert!(delay < Duration::from_secs(1));
    let id = opened_id(&d.next_timeout());
    // Second failure in a row: the next slot of the grid 1 s + 7 s + k·20 s.
    let out = d.input(Input::TransportFailed(id, Failure::network("refused")));
    let RetryPlan::After { delay } = retry_of(&out) else {
        panic!()
    };
    assert_eq!(d.now + delay, Instant::from_millis(48_000));
}

#[test]
fn deploy_doubling_leaves_the_servers_slot_grid_alone() {
    let mut config = Config::default();
    config.set_backoff(BackoffPolicy::server_paced(
        Duration::from_secs(1),
        BackoffPolicy::fixed(Duration::from_secs(5)),
    ));
    let mut d = Driver::new(config);
    let id = d.start();
    d.input(Input::TransportOpened(id));
    let mut w = welcome("s-1");
    w.pacing = Some(Pacing {
        period_ms: 20_000,
        phase_ms: 3_000,
        origin_ms: None,
    });
    d.welcome(id, w);
    d.at(10_000);
    d.server(id, advice("deploy", 1_000, 1_000));
    d.input(Input::TransportClosed(
        id,
        closed(CloseCode::SERVICE_RESTART),
    ));
    let id = opened_id(&d.next_timeout());
    assert_eq!(d.now, Instant::from_millis(11_000));
    let out = d.input(Input::TransportFailed(id, Failure::network("refused")));
    let RetryPlan::After { delay } = retry_of(&out) else {
        panic!()
    };
    assert_eq!(
        d.now + delay,
        Instant::from_millis(23_000),
        "the next slot, not doubled"
    );
}
