//! The handshake: `start` dials once, the transport opens, `welcome` makes the
//! session ready; a transport that never opens, a server that never welcomes
//! and a server on another protocol version are abandoned.

use belay_proto::message::{ClientMessage, PROTOCOL_VERSION};
use belay_proto::{
    CloseCode, ConnectionState, DisconnectReason, Event, HaltReason, Input, Instant, Output,
    TransportId,
};

use crate::common::{closes, events, sent, welcome, Driver};

#[test]
fn start_dials_once_then_connect_and_welcome_make_it_ready() {
    let mut d = Driver::fixed(1_000);
    let out = {
        d.session.start(d.now).unwrap();
        d.drain()
    };
    assert_eq!(
        out,
        vec![Output::OpenTransport {
            id: TransportId(1),
            attempt: 0
        }]
    );
    let out = d.input(Input::TransportOpened(TransportId(1)));
    assert!(matches!(sent(&out)[..], [ClientMessage::Connect(_)]));
    assert_eq!(d.session.state(), ConnectionState::Handshaking);
    assert!(d.session.readiness().transport && !d.session.is_ready());
    let out = d.welcome(TransportId(1), welcome("s-1"));
    assert!(events(&out).contains(&Event::Connected {
        session: "s-1".into()
    }));
    assert!(d.session.is_ready());
    assert_eq!(d.session.state(), ConnectionState::Open);
}

#[test]
fn start_twice_never_opens_a_second_transport() {
    let mut d = Driver::fixed(1_000);
    d.start();
    d.session.start(d.now).unwrap();
    d.session.reconnect_now(d.now).unwrap();
    assert!(d.drain().is_empty());
}

#[test]
fn a_transport_that_never_opens_is_abandoned_at_the_connect_timeout() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    let out = d.next_timeout();
    assert_eq!(d.now, Instant::from_millis(10_000));
    assert_eq!(closes(&out), vec![(id, CloseCode::HANDSHAKE_TIMEOUT)]);
    assert!(events(&out).iter().any(|e| matches!(
        e,
        Event::ConnectFailed {
            reason: DisconnectReason::ConnectTimeout,
            ..
        }
    )));
}

#[test]
fn a_server_that_never_says_welcome_is_abandoned() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.at(2_000);
    d.input(Input::TransportOpened(id));
    let out = d.next_timeout();
    assert_eq!(d.now, Instant::from_millis(12_000));
    assert_eq!(closes(&out), vec![(id, CloseCode::HANDSHAKE_TIMEOUT)]);
    assert!(!d.session.readiness().transport);
}

#[test]
fn a_server_speaking_another_protocol_version_halts_the_session() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.input(Input::TransportOpened(id));
    let mut w = welcome("s-1");
    w.protocol = PROTOCOL_VERSION + 1;
    let out = d.welcome(id, w);
    assert_eq!(closes(&out), vec![(id, CloseCode::PROTOCOL_ERROR)]);
    assert!(events(&out).contains(&Event::Halted {
        reason: HaltReason::ProtocolMismatch {
            server: PROTOCOL_VERSION + 1
        }
    }));
    assert!(!d.session.is_ready());
}
