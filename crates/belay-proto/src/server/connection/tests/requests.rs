//! Requests: authorization, the in-flight bound, exactly one `response`.

use super::*;

#[test]
fn a_request_is_authorized_called_and_answered_exactly_once() {
    let mut conn = open();
    text(
        &mut conn,
        T0,
        json!({"type": "request", "id": 7, "method": "echo", "params": 1}),
    );
    let out = drain(&mut conn);
    assert!(matches!(&out[..], [Output::AuthorizeRequest { method, .. }] if method == "echo"));
    conn.handle_input(
        T0,
        Input::RequestAuthorized {
            ticket: ticket_of(&out),
            verdict: Ok(()),
        },
    );
    let out = drain(&mut conn);
    let Output::Call { ticket, request } = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!((request.id, &request.params), (7, &Payload::from(1)));
    assert_eq!(conn.requests_in_flight(), 1);
    let ticket = *ticket;
    conn.handle_input(
        at(5),
        Input::Reply {
            ticket,
            reply: Reply::Result(RawJson::from_value(&json!(1))),
        },
    );
    conn.handle_input(
        at(6),
        Input::Reply {
            ticket,
            reply: Reply::Result(RawJson::null()),
        },
    );
    assert_eq!(
        sent(&drain(&mut conn)),
        [r#"{"type":"response","id":7,"result":1}"#.to_owned()]
    );
    assert_eq!(conn.requests_in_flight(), 0);
}

#[test]
fn a_denied_request_gets_its_error_and_is_never_called() {
    let mut conn = open();
    text(
        &mut conn,
        T0,
        json!({"type": "request", "id": 1, "method": "admin"}),
    );
    let ticket = ticket_of(&drain(&mut conn));
    conn.handle_input(
        T0,
        Input::RequestAuthorized {
            ticket,
            verdict: Err(ErrorBody::new("forbidden", "no")),
        },
    );
    let out = drain(&mut conn);
    assert!(!out.iter().any(|o| matches!(o, Output::Call { .. })));
    assert_eq!(
        sent(&out),
        [r#"{"type":"response","id":1,"error":{"code":"forbidden","message":"no"}}"#.to_owned()]
    );
}

#[test]
fn requests_beyond_the_in_flight_bound_are_refused_rate_limited() {
    let mut limits = Limits::default();
    limits.set_max_in_flight(2);
    let mut conn = open_with(limits);
    // One called, one waiting for the authorizer: both are in flight.
    text(
        &mut conn,
        T0,
        json!({"type": "request", "id": 1, "method": "slow"}),
    );
    let ticket = ticket_of(&drain(&mut conn));
    conn.handle_input(
        T0,
        Input::RequestAuthorized {
            ticket,
            verdict: Ok(()),
        },
    );
    drain(&mut conn);
    text(
        &mut conn,
        T0,
        json!({"type": "request", "id": 2, "method": "slow"}),
    );
    drain(&mut conn);
    text(
        &mut conn,
        T0,
        json!({"type": "request", "id": 3, "method": "slow"}),
    );
    let out = drain(&mut conn);
    assert!(
        !out.iter()
            .any(|o| matches!(o, Output::AuthorizeRequest { .. } | Output::Call { .. })),
        "{out:?}"
    );
    assert_eq!(conn.requests_in_flight(), 2);
    assert!(sent(&out)[0].contains(r#""id":3,"error":{"code":"rate_limited""#));
}

#[test]
fn a_malformed_request_with_a_readable_id_gets_its_one_response() {
    let mut conn = open();
    text(
        &mut conn,
        T0,
        json!({"type": "request", "id": 9, "method": 5}),
    );
    let out = sent(&drain(&mut conn));
    assert!(out[0].starts_with(r#"{"type":"response","id":9,"error":{"code":"bad_request""#));
}
