//! `stop`: the final close and events, then nothing: no timers, no dials,
//! no requests.

use belay_proto::{Call, CloseCode, DisconnectReason, Event, Input, RequestError, RetryPlan};
use serde_json::json;

use crate::common::{closed, closes, events, Driver};

#[test]
fn stop_emits_the_final_close_and_nothing_after() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "news").unwrap();
    let id = d.start();
    d.establish(id);
    d.session.request(d.now, Call::new("a", json!(1))).unwrap();
    d.drain();
    d.session.stop(d.now);
    let out = d.drain();
    assert_eq!(closes(&out), vec![(id, CloseCode::NORMAL)]);
    assert_eq!(events(&out).last(), Some(&Event::Stopped));
    assert!(events(&out).contains(&Event::Disconnected {
        reason: DisconnectReason::ClientStopped,
        retry: RetryPlan::No
    }));
    assert_eq!(d.session.poll_timeout(), None);
    d.input(Input::TransportClosed(id, closed(CloseCode::NORMAL)));
    d.input(Input::Network { online: true });
    assert!(d.session.reconnect_now(d.now).is_err());
    assert!(d.session.start(d.now).is_err());
    assert_eq!(
        d.session.request(d.now, Call::new("b", json!(1))),
        Err(RequestError::Stopped)
    );
    d.at(1_000_000);
    d.tick();
    assert!(d.drain().is_empty());
}
