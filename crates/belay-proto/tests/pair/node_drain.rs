//! A drain the server's node runs: readiness first, then each client is
//! advised in accept order with its own window of the spread, leaves on its
//! own, and the server is drained when the last connection is gone.

use std::time::Duration;

use belay_proto::message::Payload;
use belay_proto::server::{DrainConfig, Lifecycle, NodeConfig};
use belay_proto::testing::{ClientId, Pair, ServerRecord};
use belay_proto::{Call, Config, DisconnectReason, Event, Instant, RetryPlan};

use crate::support::start;

fn drain_config(lb_delay_ms: u64, spread_ms: u64, deadline_ms: u64) -> NodeConfig {
    let mut drain = DrainConfig::default();
    drain
        .set_lb_delay(Duration::from_millis(lb_delay_ms))
        .set_advise_rate(10.0)
        .set_linger(Duration::from_millis(500))
        .set_reconnect_spread(Duration::from_millis(spread_ms))
        .set_deadline(Duration::from_millis(deadline_ms));
    let mut config = NodeConfig::default();
    config.set_drain(drain);
    config
}

/// When a client left on its advice, and the delay it drew.
fn advised(pair: &Pair, client: ClientId) -> Option<(Instant, Duration)> {
    pair.events(client).iter().find_map(|(at, e)| match e {
        Event::Disconnected {
            reason: DisconnectReason::Advised,
            retry: RetryPlan::After { delay },
        } => Some((*at, *delay)),
        _ => None,
    })
}

#[test]
fn each_client_is_advised_in_turn_within_its_own_window_and_the_server_drains() {
    let mut pair = Pair::without_clients(Default::default(), 61);
    pair.set_node_config(drain_config(1_000, 3_000, 30_000));
    let clients: Vec<ClientId> = (0..3)
        .map(|i| pair.add_client(Config::default(), 61 + i))
        .collect();
    for &client in &clients {
        start(&mut pair, client, &["news"]);
    }
    let started = pair.now();
    assert!(pair.start_drain());
    // The balancer sends the clients elsewhere now: this server takes none back.
    for &client in &clients {
        pair.client_mut(client).link.refusing = true;
    }
    pair.run_for(Duration::from_millis(900));
    assert!(
        clients.iter().all(|&c| advised(&pair, c).is_none()),
        "nobody before the balancer delay"
    );
    pair.run_for(Duration::from_secs(3));
    for (i, &client) in clients.iter().enumerate() {
        let (at, delay) = advised(&pair, client).expect("advised");
        // 10 per second from the end of the balancer delay, in accept order.
        let due = started.saturating_add(Duration::from_millis(1_000 + 100 * i as u64));
        assert!(
            at >= due && at < due.saturating_add(Duration::from_millis(200)),
            "client {i} at {at:?}"
        );
        let window =
            Duration::from_millis(1_000 * i as u64)..Duration::from_millis(1_000 * (i as u64 + 1));
        assert!(
            window.contains(&delay),
            "client {i} drew {delay:?}, outside {window:?}"
        );
    }
    assert_eq!(pair.server_connections(), 0);
    let lifecycles: Vec<Lifecycle> = pair.lifecycles().iter().map(|(_, l)| *l).collect();
    assert_eq!(lifecycles, [Lifecycle::Draining, Lifecycle::Drained]);
    let drained_at = pair.lifecycles()[1].0;
    assert!(
        drained_at < started.saturating_add(Duration::from_secs(3)),
        "long before the deadline"
    );
}

#[test]
fn what_is_left_at_the_deadline_is_closed_1001_unless_it_was_ordered_to_drain() {
    let mut pair = Pair::without_clients(Default::default(), 62);
    pair.set_node_config(drain_config(0, 500, 5_000));
    let held = pair.add_client(Config::default(), 62);
    start(&mut pair, held, &[]);
    // A request that outlives the drain keeps the advised connection open.
    let slow = Call::new("slow", Payload::from(60_000));
    pair.command(held, |s, now| s.request(now, slow)).unwrap();
    let started = pair.now();
    pair.start_drain();
    // A client that arrives once advising has started is not in the plan.
    pair.run_for(Duration::from_millis(100));
    let late = pair.add_client(Config::default(), 63);
    start(&mut pair, late, &[]);
    assert_eq!(pair.node().lifecycle(), Lifecycle::Draining);
    let deadline = started.saturating_add(Duration::from_secs(5));
    pair.run_until(deadline.saturating_add(Duration::from_millis(1)));
    let closed_at_deadline = |client: ClientId| {
        pair.server_log().iter().find_map(|r| match r {
            ServerRecord::Closed { code, at, id } if id.client == client && *at == deadline => {
                Some(*code)
            }
            _ => None,
        })
    };
    // The advised one was ordered to drain by the deadline (1012); the late
    // one was never advised and goes away (1001).
    assert_eq!(closed_at_deadline(held), Some(1012));
    assert_eq!(closed_at_deadline(late), Some(1001));
    assert_eq!(
        pair.lifecycles().last().map(|(at, l)| (*at, *l)),
        Some((deadline, Lifecycle::Drained))
    );
}
