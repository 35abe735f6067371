//! A connection whose upgrade chose the binary codec: it decodes binary
//! frames, answers a text frame `bad_request`, and keeps the codec it
//! started with (spec/PROTOCOL.md §1.8).

use super::*;
use crate::message::{encode_client_binary, ClientMessage, Codec, Connect, Request};

fn binary(conn: &mut Conn, now: Instant, message: &ClientMessage) {
    conn.handle_input(
        now,
        Input::Frame(Frame::Binary(&encode_client_binary(message))),
    );
}

fn connect() -> ClientMessage {
    ClientMessage::Connect(Connect {
        protocol: 1,
        token: None,
        session: None,
    })
}

/// A binary connection through `welcome`.
fn open_binary() -> Conn {
    let mut conn = Conn::new(Limits::default(), T0, 42);
    conn.set_codec(Codec::Binary);
    binary(&mut conn, T0, &connect());
    let Some(Output::Authenticate { ticket, .. }) = conn.poll_output() else {
        panic!("a binary connect must be authenticated")
    };
    conn.handle_input(
        T0,
        Input::Auth {
            ticket,
            verdict: AuthVerdict::accepted(),
        },
    );
    assert!(matches!(
        conn.poll_output(),
        Some(Output::Send(ServerMessage::Welcome(_)))
    ));
    drain(&mut conn);
    conn
}

#[test]
fn a_binary_connect_opens_the_session_and_a_binary_request_is_called() {
    let mut conn = open_binary();
    assert_eq!((conn.codec(), conn.phase()), (Codec::Binary, Phase::Open));
    let request = ClientMessage::Request(Request {
        id: 7,
        method: "echo".into(),
        params: json!({"n": 1}),
        idem: None,
        timeout_ms: Some(5_000),
    });
    binary(&mut conn, at(1), &request);
    let outputs = drain(&mut conn);
    assert!(
        outputs
            .iter()
            .any(|o| matches!(o, Output::AuthorizeRequest { method, .. } if method == "echo")),
        "{outputs:?}"
    );
}

#[test]
fn a_text_frame_on_a_binary_connection_is_answered_bad_request_and_the_connection_stays() {
    let mut conn = open_binary();
    text(&mut conn, at(1), json!({"type": "ping"}));
    let outputs = drain(&mut conn);
    assert_eq!(
        sent(&outputs),
        [
            r#"{"type":"error","code":"bad_request","message":"text frames are not supported on a binary connection"}"#
        ]
    );
    assert_eq!(conn.phase(), Phase::Open);
}

#[test]
fn a_text_connect_on_a_binary_connection_is_not_a_connect() {
    let mut conn = Conn::new(Limits::default(), T0, 42);
    conn.set_codec(Codec::Binary);
    text(&mut conn, T0, json!({"type": "connect", "protocol": 1}));
    let closed = closed_with(&drain(&mut conn));
    assert_eq!(closed, Some((1002, "connect expected".to_owned())));
}

#[test]
fn a_binary_request_that_does_not_decode_gets_its_one_response() {
    let mut conn = open_binary();
    // Code 0x0010, flags 0, id 9, then a method length past the frame.
    conn.handle_input(
        at(1),
        Input::Frame(Frame::Binary(&[0x00, 0x10, 0x00, 0x09, 0x7f])),
    );
    let outputs = drain(&mut conn);
    let responses: Vec<_> = outputs
        .iter()
        .filter_map(|o| match o {
            Output::Send(ServerMessage::Response(r)) => Some(r.id),
            _ => None,
        })
        .collect();
    assert_eq!(responses, [9]);
    assert_eq!(conn.phase(), Phase::Open);
}

#[test]
fn an_unknown_binary_code_is_answered_bad_request() {
    let mut conn = open_binary();
    conn.handle_input(at(1), Input::Frame(Frame::Binary(&[0x12, 0x34])));
    let outputs = drain(&mut conn);
    assert_eq!(
        sent(&outputs),
        [r#"{"type":"error","code":"bad_request","message":"unknown message type"}"#]
    );
}

#[test]
fn the_codec_cannot_change_after_the_first_frame() {
    let mut conn = open();
    conn.set_codec(Codec::Binary);
    assert_eq!(conn.codec(), Codec::Json);
}
