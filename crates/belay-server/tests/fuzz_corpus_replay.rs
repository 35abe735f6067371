//! Replays the committed fuzz corpora (`fuzz/seeds/<target>/`,
//! `fuzz/corpus/<target>/` and the findings in
//! `fuzz/artifacts-found/<target>/`) through the same functions the fuzz targets in
//! `fuzz/` call, on stable Rust and without sanitizers, so every input the
//! fuzzer ever kept stays a regression test. Seconds, not minutes.
//!
//! ```text
//! cargo test -p belay-server --features fuzzing --test fuzz_corpus_replay
//! ```

use std::path::{Path, PathBuf};

use arbitrary::{Arbitrary, Unstructured};
use belay_proto::fuzzing::{client_session, server_connection};

use belay_server::fuzzing::{
    self, client_decode, connection, decode_frames, encode_frames, masked_frame, ws_frames,
    ws_frames_input, ws_stream, FuzzBytes, FuzzChannel, FuzzEpoch, FuzzFrame, FuzzKey, FuzzMethod,
    FuzzParams, FuzzStr,
};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Every committed input of `target` (seeds, corpus, findings), sorted.
fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    belay_test_support::fuzz_corpus::committed_inputs(&fuzz_dir(), target)
}

/// Run `f` on every input, naming the file that fails.
fn replay(target: &str, f: impl Fn(&[u8])) -> usize {
    let inputs = inputs(target);
    for (path, bytes) in &inputs {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(bytes)));
        if let Err(panic) = result {
            std::panic::resume_unwind(Box::new(format!(
                "{target} input {} fails: {:?}",
                path.display(),
                panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or(panic.downcast_ref::<&str>().copied())
            )));
        }
    }
    inputs.len()
}

/// The client core's target (its harness is `belay_proto::fuzzing`, which
/// the `fuzzing` feature of this crate turns on).
#[test]
fn client_session_corpus_replays() {
    let replayed = replay("client_session", |bytes| {
        let input = Unstructured::new(bytes);
        if let Ok(session) = client_session::SessionInput::arbitrary_take_rest(input) {
            client_session::run(&session);
        }
    });
    assert!(replayed >= 10);
}

/// The server core's target (`belay_proto::fuzzing::server_connection`).
#[test]
fn server_connection_corpus_replays() {
    let replayed = replay("server_connection", |bytes| {
        let input = Unstructured::new(bytes);
        if let Ok(input) = server_connection::ConnectionInput::arbitrary_take_rest(input) {
            server_connection::run(&input);
        }
    });
    assert!(replayed >= 10);
}

#[test]
fn ws_frames_corpus_replays() {
    let replayed = replay("ws_frames", |bytes| {
        ws_frames(bytes);
    });
    assert!(replayed >= 10);
}

#[test]
fn client_decode_corpus_replays() {
    let replayed = replay("client_decode", client_decode);
    assert!(replayed >= 10);
}

#[test]
fn connection_corpus_replays() {
    let replayed = replay("connection", |bytes| {
        connection(&decode_frames(bytes));
    });
    assert!(replayed >= 10);
}

/// The harness is not vacuous: the codec delivers the messages of the
/// `ws/` unit-test stream whatever the split, and rejects a rule breaker.
#[test]
fn ws_harness_reads_messages_across_splits() {
    let mut stream = masked_frame(0x01, "héllo ".as_bytes());
    stream.extend(masked_frame(0x89, b"p"));
    stream.extend(masked_frame(0x80, "wörld".as_bytes()));
    stream.extend(masked_frame(0x88, &[0x03, 0xe8]));
    for split in [None, Some(0), Some(2), Some(7)] {
        // ping, text, close
        assert_eq!(ws_frames(&ws_frames_input(split, 1024, &stream)), 3);
    }
    let bytes: Vec<&[u8]> = stream.iter().map(std::slice::from_ref).collect();
    assert_eq!(ws_stream(&bytes, 1024), 3);
    // Over the limit: the codec gives up before any message.
    assert_eq!(ws_stream(&[&masked_frame(0x82, &[0; 200])], 125), 0);
}

/// The harness reaches the server's logic: a session is welcomed, answers
/// requests and pings, and a violation closes it with its documented code.
#[test]
fn connection_harness_reaches_the_session() {
    let echo = FuzzFrame::Request {
        id: 1,
        method: FuzzMethod::Echo,
        params: FuzzParams::Int(7),
        idem: None,
        timeout_ms: None,
    };
    let connect = FuzzFrame::Connect {
        protocol: 1,
        token: None,
        session: None,
    };
    let outcome = connection(&[
        connect.clone(),
        echo,
        FuzzFrame::WsPing(FuzzBytes(b"x".to_vec())),
        FuzzFrame::Yield,
    ]);
    assert!(outcome.welcomed, "{outcome:?}");
    assert_eq!(outcome.results, 1, "{outcome:?}");
    assert_eq!(outcome.pongs, 1, "{outcome:?}");
    // A binary frame gets an error; an unmasked frame closes with 1002.
    let outcome = connection(&[
        connect,
        FuzzFrame::Binary(FuzzBytes(vec![1])),
        FuzzFrame::Yield,
        FuzzFrame::Raw(FuzzBytes(vec![0x81, 0x00])),
    ]);
    assert_eq!(outcome.messages, ["welcome", "error"], "{outcome:?}");
    assert_eq!(outcome.close_code, Some(1002), "{outcome:?}");
}

/// The seed writer's encoding is the exact inverse of the derived
/// `Arbitrary` decoding, for every variant.
#[test]
fn frame_encoding_inverts_arbitrary() {
    let s = |t: &str| FuzzStr(t.to_owned());
    let frames = vec![
        FuzzFrame::Text(s("{\"type\":\"ping\"}")),
        FuzzFrame::Connect {
            protocol: 1,
            token: Some(s("tok")),
            session: None,
        },
        FuzzFrame::Request {
            id: u64::MAX,
            method: FuzzMethod::Other(s("m")),
            params: FuzzParams::Object(s("é"), 3),
            idem: Some(FuzzKey::Other(s("k"))),
            timeout_ms: Some(65_535),
        },
        FuzzFrame::Request {
            id: 0,
            method: FuzzMethod::Slow,
            params: FuzzParams::Millis(9),
            idem: Some(FuzzKey::K2),
            timeout_ms: None,
        },
        FuzzFrame::Request {
            id: 5,
            method: FuzzMethod::OrderCreate,
            params: FuzzParams::Json(s("[1]")),
            idem: Some(FuzzKey::K1),
            timeout_ms: None,
        },
        FuzzFrame::Request {
            id: 6,
            method: FuzzMethod::Echo,
            params: FuzzParams::Bool(true),
            idem: None,
            timeout_ms: None,
        },
        FuzzFrame::Subscribe {
            channel: FuzzChannel::Other(s("c")),
            since: Some((FuzzEpoch::Other(s("e")), 4)),
        },
        FuzzFrame::Subscribe {
            channel: FuzzChannel::News,
            since: Some((FuzzEpoch::Current, 0)),
        },
        FuzzFrame::Unsubscribe(FuzzChannel::Feed),
        FuzzFrame::Ping,
        FuzzFrame::Pong,
        FuzzFrame::Padded(300),
        FuzzFrame::Fragmented {
            text: s("abc"),
            pieces: 2,
            ping: true,
        },
        FuzzFrame::Binary(FuzzBytes(vec![0, 255])),
        FuzzFrame::WsPing(FuzzBytes(vec![1])),
        FuzzFrame::WsPong(FuzzBytes(Vec::new())),
        FuzzFrame::Close {
            code: Some(4000),
            reason: s("r"),
        },
        FuzzFrame::Raw(FuzzBytes(vec![0x81, 0x00])),
        FuzzFrame::Publish(FuzzChannel::News, FuzzParams::Null),
        FuzzFrame::Publish(FuzzChannel::Feed, FuzzParams::Int(-1)),
        FuzzFrame::Publish(FuzzChannel::News, FuzzParams::Str(s("x"))),
        FuzzFrame::Yield,
    ];
    assert_eq!(decode_frames(&encode_frames(&frames)), frames);
    // And each alone, so no variant hides behind another.
    for frame in &frames {
        let one = std::slice::from_ref(frame);
        assert_eq!(decode_frames(&encode_frames(one)), one);
    }
}

/// A decoded message that survives re-encoding passes; the decoder's
/// rejections are not failures.
#[test]
fn client_decode_accepts_messages_and_rejections() {
    client_decode(br#"{"type":"request","id":1,"method":"echo","params":[1,2.5,"x"]}"#);
    client_decode(br#"{"type":"welcome","session":"s","protocol":1}"#);
    client_decode(b"{not json");
    client_decode(&[0xff, 0xfe]);
    let _ = fuzzing::decode_frames(&[]);
}
