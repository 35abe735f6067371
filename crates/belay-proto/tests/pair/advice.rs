//! A drain that advises first: the client gets the answer to its request
//! in flight, then leaves its connection on its own and comes back after a
//! delay within the advised window, resuming its subscription.

use std::time::Duration;

use belay_proto::message::{Payload, ReconnectAdvice};
use belay_proto::{Call, Config, DisconnectReason, Event, RequestOutcome, RetryPlan};

use crate::support::{accepted, outcome, ready_pair, C};

#[test]
fn advice_moves_the_client_within_the_window_after_its_request_is_answered() {
    let mut pair = ready_pair(Config::default(), 101, &["news"]);
    let slow = Call::new("slow", Payload::from(500));
    let slow = pair.command(C, |s, now| s.request(now, slow)).unwrap();
    pair.run_for(Duration::from_millis(100));
    let advice = ReconnectAdvice {
        reason: "deploy".into(),
        min_delay_ms: 1_000,
        max_delay_ms: 2_000,
        message: None,
    };
    pair.advise_clients(&advice);
    pair.drain_server(Duration::from_secs(10));
    pair.run_for(Duration::from_secs(5));
    // The answer first, then the client leaves on its own, quiet.
    assert!(matches!(
        outcome(&pair, C, slow),
        Some(RequestOutcome::Ok { .. })
    ));
    let left = pair.events(C).iter().find_map(|(_, e)| match e {
        Event::Disconnected {
            reason: DisconnectReason::Advised,
            retry: RetryPlan::After { delay },
        } => Some(*delay),
        _ => None,
    });
    let delay = left.expect("left on the advice");
    let window = Duration::from_millis(1_000)..=Duration::from_millis(2_000);
    assert!(window.contains(&delay), "{delay:?}");
    // Back, resumed, on a second connection.
    let resumed = |e: &Event| {
        matches!(
            e,
            Event::Subscribed {
                recovered: true,
                ..
            }
        )
    };
    assert!(pair.events(C).iter().any(|(_, e)| resumed(e)));
    assert_eq!(accepted(&pair), 2);
    assert!(pair.client(C).session.is_ready());
}
