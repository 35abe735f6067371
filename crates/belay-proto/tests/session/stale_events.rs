//! Inputs naming a transport the session has replaced change nothing and
//! produce no output; they are only counted.

use belay_proto::message::ServerMessage;
use belay_proto::{CloseCode, CloseInfo, Failure, Input};

use crate::common::{closed, opened_id, Driver};

#[test]
fn events_from_a_replaced_transport_change_nothing() {
    let mut d = Driver::fixed(1_000);
    let first = d.start();
    d.establish(first);
    d.at(5_000);
    d.input(Input::TransportClosed(first, CloseInfo::abnormal()));
    d.at(6_000);
    let second = opened_id(&d.tick());
    d.establish(second);
    let before = (d.session.state(), d.session.readiness());

    d.at(7_000);
    let late: Vec<Input> = vec![
        Input::TransportOpened(first),
        Input::TransportClosed(first, closed(CloseCode::NORMAL)),
        Input::TransportFailed(first, Failure::network("reset")),
        Input::Frame(
            first,
            r#"{"type":"welcome","session":"old","protocol":1}"#.into(),
        ),
        Input::Message(first, ServerMessage::Ping),
    ];
    for input in late {
        assert!(d.input(input).is_empty(), "a stale input produced output");
    }
    assert_eq!((d.session.state(), d.session.readiness()), before);
    assert_eq!(d.session.current_transport(), Some(second));
    assert_eq!(d.session.stats().stale_inputs, 5);
}
