//! Reconnecting after a loss: exactly one dial per loss, `reconnect_now`
//! skips the wait, and the backoff grows until the session has been ready
//! for the cooldown.

use std::time::Duration;

use belay_proto::backoff::BackoffPolicy;
use belay_proto::{
    CloseInfo, Config, ConnectionState, Failure, Input, Instant, RetryPlan, TransportId,
};

use crate::common::{opened_id, retry_of, Driver};

#[test]
fn losing_the_transport_schedules_exactly_one_reconnect() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    d.at(2_000);
    let out = d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    assert_eq!(
        retry_of(&out),
        RetryPlan::After {
            delay: Duration::from_secs(1)
        }
    );
    assert_eq!(d.session.state(), ConnectionState::Waiting);
    assert_eq!(d.session.poll_timeout(), Some(Instant::from_millis(3_000)));
    let out = d.next_timeout();
    assert_eq!(opened_id(&out), TransportId(2));
    assert!(
        d.tick().is_empty(),
        "a second tick at the same instant does nothing"
    );
}

#[test]
fn reconnect_now_during_backoff_dials_at_once_without_a_disconnect_event() {
    let mut d = Driver::fixed(30_000);
    let id = d.start();
    d.establish(id);
    d.at(1_000);
    d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    d.at(1_006);
    d.session.reconnect_now(d.now).unwrap();
    let out = d.drain();
    assert_eq!(out.len(), 1, "only the dial: {out:?}");
    assert_eq!(opened_id(&out), TransportId(2));
    // Pressing the button again while dialing must not start a parallel chain.
    d.session.reconnect_now(d.now).unwrap();
    assert!(d.drain().is_empty());
    assert_eq!(d.session.state(), ConnectionState::Connecting);
}

#[test]
fn backoff_resets_only_after_being_ready_for_the_cooldown() {
    let mut config = Config::default();
    config
        .set_backoff(BackoffPolicy::exponential(
            Duration::from_secs(1),
            Duration::from_secs(30),
        ))
        .set_reset_after(Duration::from_secs(5));
    let mut d = Driver::new(config);
    let id = d.start();
    d.input(Input::TransportFailed(id, Failure::network("refused")));
    let id = opened_id(&d.next_timeout());
    d.input(Input::TransportFailed(id, Failure::network("refused")));
    let id = opened_id(&d.next_timeout());
    assert_eq!(d.session.attempt(), 2);

    // Ready, but dropped 4.999 s later: the counter keeps growing (4 s next).
    d.establish(id);
    let ready_at = d.now;
    d.now = ready_at + Duration::from_millis(4_999);
    d.tick();
    let out = d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    assert_eq!(
        retry_of(&out),
        RetryPlan::After {
            delay: Duration::from_secs(4)
        }
    );

    // Ready for the full 5 s: the next loss starts again from 1 s.
    let id = opened_id(&d.next_timeout());
    d.establish(id);
    let ready_at = d.now;
    assert_eq!(
        d.session.poll_timeout(),
        Some(ready_at + Duration::from_secs(5))
    );
    d.next_timeout();
    assert_eq!(d.session.attempt(), 0);
    let out = d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    assert_eq!(
        retry_of(&out),
        RetryPlan::After {
            delay: Duration::from_secs(1)
        }
    );
}

#[test]
fn opening_without_becoming_ready_never_resets_the_backoff() {
    let mut config = Config::default();
    config.set_backoff(BackoffPolicy::exponential(
        Duration::from_secs(1),
        Duration::from_secs(30),
    ));
    let mut d = Driver::new(config);
    let mut id = d.start();
    let mut delays = Vec::new();
    for _ in 0..4 {
        d.input(Input::TransportOpened(id));
        d.now = d.now + Duration::from_millis(300);
        let out = d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
        if let RetryPlan::After { delay } = retry_of(&out) {
            delays.push(delay.as_secs());
        }
        id = opened_id(&d.next_timeout());
    }
    assert_eq!(delays, vec![1, 2, 4, 8]);
}
