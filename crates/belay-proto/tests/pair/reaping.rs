//! A client whose frames stop reaching the server is pinged, then reaped
//! (4000) within the server's bound, and the server holds nothing for it.

use std::time::Duration;

use belay_proto::server::{Event as ServerEvent, Limits};
use belay_proto::testing::ServerRecord;
use belay_proto::Config;

use crate::support::{ready_pair, server_closes, C};

#[test]
fn a_silent_client_is_pinged_then_reaped_within_the_bound() {
    let mut pair = ready_pair(Config::default(), 41, &["news"]);
    let silent_from = pair.now();
    pair.client_mut(C).link.up_frozen = true;
    let bound = Limits::default().reap_bound();
    pair.run_for(bound + Duration::from_secs(1));
    let reaped_at = pair.server_log().iter().find_map(|r| match r {
        ServerRecord::Event {
            at,
            event: ServerEvent::Reaped,
            ..
        } => Some(*at),
        _ => None,
    });
    let reaped_at = reaped_at.expect("reaped");
    let pinged = pair.server_log().iter().any(|r| {
        matches!(
            r,
            ServerRecord::Event {
                event: ServerEvent::PingSent,
                ..
            }
        )
    });
    assert!(pinged, "pinged before it was reaped");
    assert!(reaped_at.saturating_duration_since(silent_from) <= bound);
    assert_eq!(server_closes(&pair), [4000]);
    assert_eq!(pair.broker.subscribers(), 0, "its subscription is left");
}
