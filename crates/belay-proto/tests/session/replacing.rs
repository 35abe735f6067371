//! Replacing the transport (a driver moving between WebSocket and the SSE
//! fallback): the open transport closes 1000 and the next dial starts at
//! once, without a backoff step; anything but an open session is left as it is.

use std::time::Duration;

use belay_proto::{
    CloseCode, CloseInfo, ConnectionState, DisconnectReason, Event, Input, Output, RetryPlan,
    TransportId,
};

use crate::common::{opened_id, Driver};

#[test]
fn an_open_session_closes_its_transport_and_dials_again_at_once() {
    let mut d = Driver::fixed(30_000);
    let id = d.start();
    d.establish(id);
    d.at(5_000);
    d.session.replace_transport(d.now).unwrap();
    let out = d.drain();
    assert!(
        out.iter().any(|o| matches!(
            o,
            Output::CloseTransport { id: closed, code: CloseCode::NORMAL, reason }
                if *closed == id && reason == "transport replaced"
        )),
        "{out:?}"
    );
    assert!(
        out.iter().any(|o| matches!(
            o,
            Output::Event(Event::Disconnected {
                reason: DisconnectReason::Replaced,
                retry: RetryPlan::After { delay },
            }) if *delay == Duration::ZERO
        )),
        "{out:?}"
    );
    assert_eq!(opened_id(&out), TransportId(2));
    assert_eq!(d.session.state(), ConnectionState::Connecting);
    assert_eq!(d.session.attempt(), 0, "no backoff step");
}

#[test]
fn outside_an_open_session_it_does_nothing() {
    let mut d = Driver::fixed(30_000);
    let id = d.start();
    d.session.replace_transport(d.now).unwrap();
    assert!(d.drain().is_empty(), "connecting: nothing to replace");
    d.establish(id);
    d.at(1_000);
    d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    assert_eq!(d.session.state(), ConnectionState::Waiting);
    d.session.replace_transport(d.now).unwrap();
    assert!(d.drain().is_empty(), "waiting: the backoff stands");
}
