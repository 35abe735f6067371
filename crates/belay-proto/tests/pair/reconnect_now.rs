//! `reconnect_now` while the client waits out a long backoff dials at once,
//! without a second connection; while connected it does nothing.

use std::time::Duration;

use belay_proto::backoff::BackoffPolicy;
use belay_proto::{CloseCode, Config, ConnectionState};

use crate::support::{accepted, ready_pair, C};

#[test]
fn reconnect_now_during_backoff_dials_at_once_without_a_second_connection() {
    let mut config = Config::default();
    config.set_backoff(BackoffPolicy::equal_jitter(
        Duration::from_secs(20),
        Duration::from_secs(30),
    ));
    let mut pair = ready_pair(config, 71, &[]);
    pair.close_server_connections(CloseCode::GOING_AWAY, "restarting");
    pair.run_for(Duration::from_secs(1));
    assert_eq!(pair.client(C).session.state(), ConnectionState::Waiting);

    pair.command(C, |s, now| s.reconnect_now(now)).unwrap();
    pair.run_for(Duration::from_millis(200));
    assert!(
        pair.client(C).session.is_ready(),
        "ready long before the backoff"
    );
    assert_eq!(accepted(&pair), 2);
    assert_eq!(pair.server_connections(), 1);

    pair.command(C, |s, now| s.reconnect_now(now)).unwrap();
    pair.run_for(Duration::from_secs(1));
    assert_eq!(accepted(&pair), 2, "nothing while connected");
    assert_eq!(pair.client(C).max_open_transports, 1);
}
