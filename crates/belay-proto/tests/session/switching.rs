//! Moving to a new transport at a quiet moment
//! (`Session::replace_transport_when_quiet`, the SSE fallback's switch back,
//! spec/PROTOCOL.md §1.7): what the traces of `spec/vectors/fallback.json`
//! do not show. A server's advice takes precedence; a stopped session says
//! so; with no transport there is nothing to move, and nothing carries over
//! to the next one.

use std::time::Duration;

use belay_proto::message::{Reply, Response, ServerMessage};
use belay_proto::{
    Call, CloseCode, CloseInfo, ConnectionState, DisconnectReason, Event, Input, Instant, Stopped,
};
use serde_json::json;

use crate::common::{advice, closes, events, Driver};

fn disconnect_reason(out: &[belay_proto::Output]) -> Option<DisconnectReason> {
    events(out).into_iter().find_map(|e| match e {
        Event::Disconnected { reason, .. } => Some(reason),
        _ => None,
    })
}

fn answer(id: u64) -> ServerMessage {
    ServerMessage::Response(Response {
        id,
        reply: Reply::Result(json!("done").into()),
    })
}

#[test]
fn a_servers_advice_while_the_move_waits_is_followed_as_advised() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let sent = d
        .session
        .request(d.now, Call::new("m", json!(1)))
        .expect("sent");
    d.drain();
    d.session
        .replace_transport_when_quiet(d.now, Instant::from_millis(30_000))
        .unwrap();
    assert!(d.session.is_switch_pending());
    assert!(d.drain().is_empty(), "a request is in flight");
    d.server(id, advice("deploy", 3_000, 4_000));
    let out = d.server(id, answer(sent.0));
    assert_eq!(closes(&out), [(id, CloseCode::NORMAL)]);
    assert_eq!(disconnect_reason(&out), Some(DisconnectReason::Advised));
    assert_eq!(
        d.session.state(),
        ConnectionState::Waiting,
        "the advised window, not at once"
    );
    assert!(!d.session.is_switch_pending());
}

#[test]
fn with_no_transport_there_is_nothing_to_move_and_the_next_one_stays() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    d.at(1_000);
    d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    assert_eq!(d.session.state(), ConnectionState::Waiting);
    d.session
        .replace_transport_when_quiet(d.now, Instant::from_millis(2_000))
        .unwrap();
    assert!(!d.session.is_switch_pending());
    assert!(d.drain().is_empty());
    let next = crate::common::opened_id(&d.next_timeout());
    let out = d.establish(next);
    assert!(closes(&out).is_empty(), "the new transport is not moved");
    d.at(5_000);
    assert!(closes(&d.tick()).is_empty());
    assert_eq!(d.session.state(), ConnectionState::Open);
}

#[test]
fn a_stopped_session_says_so() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    d.session.stop(d.now);
    d.drain();
    let refused = d
        .session
        .replace_transport_when_quiet(d.now, d.now + Duration::from_secs(30));
    assert!(matches!(refused, Err(Stopped { .. })), "{refused:?}");
}
