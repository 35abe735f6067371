//! A drain runs on its plan's instants: readiness first, advice after the
//! balancer delay, the close 1012 a linger later with the plan's deadline,
//! 1001 for whatever is left at the deadline.

use std::time::Duration;

use super::{at, node_with, outputs};
use crate::close::CloseCode;
use crate::server::node::drain::DEADLINE_REASON;
use crate::server::node::{ConnectionOrder, Lifecycle, NodeConfig, NodeEvent, NodeOutput};
use crate::server::DrainConfig;

fn config(lb_delay_ms: u64, rate: f64, linger_ms: u64, deadline_ms: u64) -> NodeConfig {
    let mut drain = DrainConfig::default();
    drain
        .set_lb_delay(Duration::from_millis(lb_delay_ms))
        .set_advise_rate(rate)
        .set_linger(Duration::from_millis(linger_ms))
        .set_deadline(Duration::from_millis(deadline_ms));
    let mut config = NodeConfig::default();
    config.set_drain(drain);
    config
}

#[test]
fn readiness_turns_at_once_and_nothing_else_happens_before_the_balancer_delay() {
    let (mut node, _) = node_with(config(1_000, 10.0, 100, 10_000), &["a", "b"]);
    assert!(node.start_drain(at(0)));
    assert_eq!(
        outputs(&mut node),
        [NodeOutput::Lifecycle(Lifecycle::Draining)]
    );
    assert_eq!(node.poll_timeout(), Some(at(1_000)));
    node.handle_timeout(at(999));
    assert_eq!(outputs(&mut node), []);
    assert!(!node.start_drain(at(5)), "a second start does nothing");
}

#[test]
fn clients_are_advised_at_the_pace_and_closed_a_linger_later_with_the_plans_deadline() {
    let (mut node, handles) = node_with(config(1_000, 10.0, 100, 10_000), &["a", "b"]);
    node.start_drain(at(0));
    outputs(&mut node);
    node.handle_timeout(at(1_000));
    let first = outputs(&mut node);
    assert!(matches!(
        &first[..],
        [NodeOutput::Order { connection, order: ConnectionOrder::Advise(advice) }]
            if *connection == handles[0] && advice.reason == "deploy"
    ));
    // The second advice is 100 ms later (10 per second); the first close
    // a linger (100 ms) after the first advice: both at 1,100.
    assert_eq!(node.poll_timeout(), Some(at(1_100)));
    node.handle_timeout(at(1_100));
    let next = outputs(&mut node);
    assert!(next.contains(&NodeOutput::Order {
        connection: handles[0],
        order: ConnectionOrder::Drain { until: at(10_000) },
    }));
    assert!(next.iter().any(|o| matches!(o,
        NodeOutput::Order { connection, order: ConnectionOrder::Advise(_) } if *connection == handles[1])));
    assert_eq!(node.poll_timeout(), Some(at(1_200)));
    node.handle_timeout(at(1_200));
    assert_eq!(
        outputs(&mut node),
        [NodeOutput::Order {
            connection: handles[1],
            order: ConnectionOrder::Drain { until: at(10_000) },
        }]
    );
}

#[test]
fn the_server_is_drained_when_the_last_connection_goes() {
    let (mut node, handles) = node_with(config(0, 100.0, 10, 10_000), &["a", "b"]);
    node.start_drain(at(0));
    node.handle_event(at(50), handles[0], NodeEvent::Closed);
    assert_eq!(node.lifecycle(), Lifecycle::Draining);
    node.handle_event(at(60), handles[1], NodeEvent::Closed);
    assert_eq!(node.lifecycle(), Lifecycle::Drained);
    assert_eq!(
        outputs(&mut node).last(),
        Some(&NodeOutput::Lifecycle(Lifecycle::Drained))
    );
    assert_eq!(node.poll_timeout(), None);
}

#[test]
fn a_server_with_no_connections_is_drained_at_once() {
    let (mut node, _) = node_with(config(25_000, 500.0, 1_000, 120_000), &[]);
    node.start_drain(at(0));
    assert_eq!(node.lifecycle(), Lifecycle::Drained);
}

#[test]
fn whatever_is_left_at_the_deadline_is_closed_1001_and_the_server_is_drained() {
    let (mut node, handles) = node_with(config(100, 1.0, 50, 1_000), &["a", "b", "c"]);
    node.start_drain(at(0));
    let mut last = at(0);
    while let Some(next) = node.poll_timeout() {
        assert!(next >= last, "time never goes back");
        last = next;
        node.handle_timeout(next);
        if next >= at(1_000) {
            break;
        }
    }
    let all = outputs(&mut node);
    for handle in &handles {
        assert!(all.contains(&NodeOutput::Order {
            connection: *handle,
            order: ConnectionOrder::Close {
                code: CloseCode::GOING_AWAY,
                reason: DEADLINE_REASON.into(),
            },
        }));
    }
    assert_eq!(node.lifecycle(), Lifecycle::Drained);
    // Every planned client was advised before the deadline, though the
    // rate (1/s) alone would not have reached the third.
    let advised = all
        .iter()
        .filter(|o| {
            matches!(
                o,
                NodeOutput::Order {
                    order: ConnectionOrder::Advise(_),
                    ..
                }
            )
        })
        .count();
    assert_eq!(advised, 3);
}

#[test]
fn a_connection_that_arrives_before_advising_starts_is_advised_too() {
    let (mut node, _) = node_with(config(1_000, 100.0, 10, 10_000), &["a"]);
    node.start_drain(at(0));
    let late = node.handle_connected(at(500));
    node.handle_timeout(at(1_000));
    node.handle_timeout(at(1_010));
    let all = outputs(&mut node);
    assert!(all.iter().any(|o| matches!(o,
        NodeOutput::Order { connection, order: ConnectionOrder::Advise(_) } if *connection == late)));
}

#[test]
fn a_connection_gone_before_its_turn_gets_no_order() {
    let (mut node, handles) = node_with(config(0, 10.0, 10, 10_000), &["a", "b"]);
    node.start_drain(at(0));
    outputs(&mut node);
    node.handle_event(at(50), handles[1], NodeEvent::Closed);
    node.handle_timeout(at(100));
    node.handle_timeout(at(200));
    assert!(outputs(&mut node)
        .iter()
        .all(|o| !matches!(o, NodeOutput::Order { connection, .. } if *connection == handles[1])));
}

#[test]
fn ending_the_drain_closes_what_is_left_1001_at_once() {
    let (mut node, handles) = node_with(config(25_000, 10.0, 100, 120_000), &["a", "b"]);
    node.start_drain(at(0));
    outputs(&mut node);
    // A second signal, long before the balancer delay is over.
    node.end_drain(at(2_000));
    let all = outputs(&mut node);
    for handle in &handles {
        assert!(
            all.contains(&NodeOutput::Order {
                connection: *handle,
                order: ConnectionOrder::Close {
                    code: CloseCode::GOING_AWAY,
                    reason: DEADLINE_REASON.to_owned(),
                },
            }),
            "{handle:?} closed 1001: {all:?}"
        );
    }
    assert_eq!(all.last(), Some(&NodeOutput::Lifecycle(Lifecycle::Drained)));
    assert_eq!(node.poll_timeout(), None, "nothing left to time");
}

#[test]
fn ending_a_drain_that_never_started_starts_and_ends_it() {
    let (mut node, handles) = node_with(config(25_000, 10.0, 100, 120_000), &["a"]);
    node.end_drain(at(7));
    let all = outputs(&mut node);
    assert_eq!(
        all.first(),
        Some(&NodeOutput::Lifecycle(Lifecycle::Draining))
    );
    assert!(all.iter().any(|o| matches!(o,
        NodeOutput::Order { connection, order: ConnectionOrder::Close { code, .. } }
            if *connection == handles[0] && *code == CloseCode::GOING_AWAY)));
    assert_eq!(all.last(), Some(&NodeOutput::Lifecycle(Lifecycle::Drained)));
    node.end_drain(at(8));
    assert_eq!(outputs(&mut node), [], "once drained, nothing more");
}
