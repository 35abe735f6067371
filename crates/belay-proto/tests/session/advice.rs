//! The server's reconnect advice: a restart window sets the next delay, a
//! deploy doubles later backoff, and advice dies with its connection.

use std::time::Duration;

use belay_proto::{CloseInfo, Failure, Input, RetryPlan};

use crate::common::{advice, opened_id, retry_of, Driver};

#[test]
fn restart_advice_sets_the_reconnect_window() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    d.at(10_000);
    // Nothing in flight: the session leaves at once, within the window.
    let out = d.server(id, advice("restart", 5_000, 9_000));
    let RetryPlan::After { delay } = retry_of(&out) else {
        panic!("a restart is retried");
    };
    assert!(
        (5_000..9_000).contains(&(delay.as_millis() as u64)),
        "{delay:?}"
    );
}

#[test]
fn deploy_advice_doubles_the_backoff_of_later_attempts() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let out = d.server(id, advice("deploy", 2_000, 2_000));
    assert_eq!(
        retry_of(&out),
        RetryPlan::After {
            delay: Duration::from_secs(2)
        }
    );
    let id = opened_id(&d.next_timeout());
    let out = d.input(Input::TransportFailed(id, Failure::network("refused")));
    assert_eq!(
        retry_of(&out),
        RetryPlan::After {
            delay: Duration::from_secs(2)
        },
        "the fixed 1 s policy is doubled after a deploy"
    );
}

#[test]
fn advice_consumed_by_one_connection_is_forgotten_by_the_next_one() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    // A request in flight keeps the session on the transport; it fails
    // first, and the advice sets that one retry.
    d.session
        .request(d.now, belay_proto::Call::new("m", serde_json::json!(null)))
        .expect("sent");
    d.server(id, advice("restart", 60_000, 60_000));
    let out = d.input(Input::TransportFailed(id, Failure::network("reset")));
    assert_eq!(
        retry_of(&out),
        RetryPlan::After {
            delay: Duration::from_secs(60)
        }
    );
    let id = opened_id(&d.next_timeout());
    d.establish(id);
    let out = d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    assert_eq!(
        retry_of(&out),
        RetryPlan::After {
            delay: Duration::from_secs(1)
        }
    );
}
