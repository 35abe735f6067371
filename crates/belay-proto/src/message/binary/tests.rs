use serde_json::json;

use super::*;
use crate::message::RawJson;
use crate::message::{encode_client, encode_server};

fn server_messages() -> Vec<ServerMessage> {
    vec![
        ServerMessage::Welcome(Welcome {
            session: "s".into(),
            protocol: 1,
            ping_interval_ms: Some(25_000),
            pacing: Some(Pacing {
                period_ms: 20_000,
                phase_ms: 7_350,
                origin_ms: Some(86_400_123),
            }),
            expires_in_ms: None,
        }),
        ServerMessage::Ping,
        ServerMessage::Refreshed(Refreshed {
            expires_in_ms: Some(u64::MAX),
        }),
        ServerMessage::Response(Response {
            id: 9,
            reply: Reply::Result(RawJson::from(json!({"a": [1, 2]}))),
        }),
        ServerMessage::Response(Response {
            id: 10,
            reply: Reply::Error(ErrorBody::new("timeout", "late")),
        }),
        ServerMessage::Subscribed(Subscribed {
            channel: "c".into(),
            epoch: "e".into(),
            offset: 3,
            recovered: true,
        }),
        ServerMessage::Publication(Publication {
            channel: "c".into(),
            epoch: "e".into(),
            offset: 4,
            data: RawJson::from(json!("x")),
        }),
        ServerMessage::Error(ErrorBody::new("bad_request", "?")),
    ]
}

#[test]
fn every_server_message_round_trips() {
    for message in server_messages() {
        let frame = encode_server_binary(&message);
        assert_eq!(frame[..2], message.kind().code().to_be_bytes());
        assert_eq!(decode_server_binary(&frame), Ok(message));
    }
}

#[test]
fn a_fan_out_encodes_a_publication_as_the_message_would() {
    let publication = Publication {
        channel: "c".into(),
        epoch: "e".into(),
        offset: 4,
        data: RawJson::from(json!({"k": "v"})),
    };
    assert_eq!(
        encode_publication_binary(&publication),
        encode_server_binary(&ServerMessage::Publication(publication))
    );
}

#[test]
fn every_cut_of_every_frame_is_refused_without_a_panic() {
    for message in server_messages() {
        let frame = encode_server_binary(&message);
        for len in 0..frame.len() {
            assert!(
                decode_server_binary(&frame[..len]).is_err(),
                "{} cut at {len} decoded",
                message.kind()
            );
        }
    }
}

#[test]
fn binary_frames_are_smaller_than_json_ones() {
    for message in server_messages() {
        let binary = encode_server_binary(&message).len();
        let json = encode_server(&message).len();
        assert!(binary < json, "{}: {binary} vs {json}", message.kind());
    }
    let request = ClientMessage::Request(Request {
        id: 1,
        method: "echo".into(),
        params: json!({"k": 1}),
        idem: None,
        timeout_ms: Some(10_000),
    });
    assert!(encode_client_binary(&request).len() < encode_client(&request).len());
}
