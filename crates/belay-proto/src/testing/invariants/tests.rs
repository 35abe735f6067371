//! The client checker catches what the fuzz target's tests showed it must.

use super::*;
use crate::{Config, Event, Instant, Output, RequestId, RequestOutcome, Session, TransportId};

fn checker() -> (ClientInvariants, Session) {
    let config = Config::default();
    let invariants = ClientInvariants::new(&config, ClientChecks::all());
    (invariants, Session::new(config, Instant::ZERO, 0))
}

#[test]
fn a_response_for_an_id_never_issued_is_caught() {
    let (mut invariants, session) = checker();
    let response = Output::Event(Event::Response {
        id: RequestId(1),
        outcome: RequestOutcome::Timeout,
    });
    let violation = invariants.batch(Instant::ZERO, &session, &[response]);
    assert_eq!(violation.unwrap_err().invariant, Invariant::SettleOnce);
}

#[test]
fn a_second_live_transport_is_caught() {
    let (mut invariants, session) = checker();
    let open = |n| Output::OpenTransport {
        id: TransportId(n),
        attempt: 0,
    };
    let violation = invariants.batch(Instant::ZERO, &session, &[open(1), open(2)]);
    assert_eq!(violation.unwrap_err().invariant, Invariant::OneTransport);
}

#[test]
fn a_close_code_never_sent_and_anything_after_the_close_are_caught() {
    use crate::server::{Limits, Output as ServerOutput};
    let mut server = ServerInvariants::new(&Limits::default());
    let violation = server.close(1005).unwrap_err();
    assert_eq!(violation.invariant, Invariant::CloseCode);
    let late = ServerOutput::<String>::PeerGone { code: None };
    let violation = server.output(&late).unwrap_err();
    assert_eq!(violation.invariant, Invariant::ServerEnded);
}

#[test]
fn a_message_before_welcome_is_caught() {
    let mut server = ServerInvariants::new(&crate::server::Limits::default());
    let violation = server.message(&crate::message::ServerMessage::Ping);
    assert_eq!(violation.unwrap_err().invariant, Invariant::WelcomeFirst);
}
