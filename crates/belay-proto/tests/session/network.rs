//! The device's network: going offline cancels the wait or the attempt,
//! coming online dials soon (still within the server's advice), and
//! attempts that fail on the device retry quickly without advancing the
//! backoff.

use std::time::Duration;

use belay_proto::backoff::BackoffPolicy;
use belay_proto::{CloseCode, Config, ConnectionState, Failure, Input, Instant, Output, RetryPlan};

use crate::common::{advice, closed, closes, opened_id, retry_of, Driver};

#[test]
fn offline_cancels_the_wait_and_online_dials_soon_with_a_fresh_backoff() {
    let mut config = Config::default();
    config.set_backoff(BackoffPolicy::exponential(
        Duration::from_secs(1),
        Duration::from_secs(30),
    ));
    let mut d = Driver::new(config);
    let mut id = d.start();
    for _ in 0..3 {
        d.input(Input::TransportFailed(id, Failure::network("refused")));
        id = opened_id(&d.next_timeout());
    }
    d.input(Input::TransportFailed(id, Failure::network("refused")));
    assert_eq!(d.session.state(), ConnectionState::Waiting);
    d.input(Input::Network { online: false });
    assert_eq!(d.session.state(), ConnectionState::Offline);
    assert_eq!(d.session.poll_timeout(), None);

    d.at(100_000);
    d.input(Input::Network { online: true });
    let at = d.session.poll_timeout().unwrap();
    assert!(
        at < Instant::from_millis(101_000),
        "dials within the online delay"
    );
    let out = d.next_timeout();
    assert!(matches!(
        out[..],
        [Output::OpenTransport { attempt: 0, .. }]
    ));
}

#[test]
fn going_offline_while_connecting_abandons_the_attempt() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    let out = d.input(Input::Network { online: false });
    assert_eq!(closes(&out), vec![(id, CloseCode::GOING_AWAY)]);
    assert_eq!(retry_of(&out), RetryPlan::WhenOnline);
    assert_eq!(d.session.poll_timeout(), None);
}

#[test]
fn coming_back_online_still_honours_the_servers_advice() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    d.server(id, advice("restart", 20_000, 20_000));
    d.input(Input::TransportClosed(
        id,
        closed(CloseCode::SERVICE_RESTART),
    ));
    d.at(1_000);
    d.input(Input::Network { online: false });
    d.at(2_000);
    d.input(Input::Network { online: true });
    assert_eq!(d.session.poll_timeout(), Some(Instant::from_millis(20_000)));
}

#[test]
fn attempts_that_never_leave_the_device_retry_quickly_without_advancing_the_backoff() {
    let mut config = Config::default();
    config
        .set_backoff(BackoffPolicy::fixed(Duration::from_secs(30)))
        .set_max_attempts(Some(1));
    let mut d = Driver::new(config);
    let id = d.start();
    d.establish(id);
    d.at(1_000);
    // The network drops: the socket errors out and redials fail locally.
    let out = d.input(Input::TransportFailed(
        id,
        Failure::unreachable("ENETUNREACH"),
    ));
    let mut gaps = vec![retry_of(&out)];
    for _ in 0..5 {
        let id = opened_id(&d.next_timeout());
        let out = d.input(Input::TransportFailed(
            id,
            Failure::unreachable("ENETUNREACH"),
        ));
        gaps.push(retry_of(&out));
    }
    for gap in &gaps {
        let RetryPlan::After { delay } = gap else {
            panic!("{gap:?}")
        };
        assert!(*delay <= Duration::from_secs(2), "{delay:?}");
    }
    assert_eq!(
        d.session.attempt(),
        0,
        "the server-facing backoff did not move"
    );
    assert_eq!(
        d.session.state(),
        ConnectionState::Waiting,
        "never exhausted"
    );
    // The network is back: the next attempt reaches the server within 2 s.
    let back_at = d.now;
    let id = opened_id(&d.next_timeout());
    assert!(d.now - back_at <= Duration::from_secs(2));
    d.establish(id);
    assert!(d.session.is_ready());
}
