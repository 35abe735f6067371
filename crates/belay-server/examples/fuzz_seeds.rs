//! Writes the fuzz targets' seed corpora (`fuzz/seeds/<target>/`) from the
//! conformance vectors (`spec/vectors/**/*.json`) and from the messages and
//! frames the server's tests use (`tests/*.rs`, the unit tests of `ws/`),
//! transcribed here.
//!
//! ```text
//! cargo run -p belay-server --features fuzzing --example fuzz_seeds -- fuzz/seeds
//! ```
//!
//! Each file is named after a hash of its content, so running it again
//! writes the same files. `scripts/fuzz.sh` then minimises seeds plus what
//! the fuzzer found into `fuzz/corpus/<target>/`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use belay_server::fuzzing::{
    encode_frames, masked_frame, ws_frames_input, FuzzBytes, FuzzChannel, FuzzEpoch, FuzzFrame,
    FuzzKey, FuzzMethod, FuzzParams, FuzzStr,
};
use serde_json::Value;

fn main() -> std::io::Result<()> {
    let out = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("fuzz/seeds"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let texts = message_texts(&root.join("spec/vectors"))?;
    let ws = ws_seeds(&texts);
    let sessions: Vec<Vec<u8>> = sessions().iter().map(|s| encode_frames(s)).collect();
    let mut decode: Vec<Vec<u8>> = texts.iter().map(|t| t.as_bytes().to_vec()).collect();
    decode.extend(binary_frames(&root.join("spec/vectors/binary.json"))?);
    for (target, seeds) in [
        ("client_decode", &decode),
        ("ws_frames", &ws),
        ("connection", &sessions),
    ] {
        let dir = out.join(target);
        std::fs::create_dir_all(&dir)?;
        for seed in seeds {
            std::fs::write(dir.join(name(seed)), seed)?;
        }
        println!("{}: {} seeds", dir.display(), seeds.len());
    }
    Ok(())
}

/// Every binary frame of the binary codec's vectors (their `hex`).
fn binary_frames(path: &Path) -> std::io::Result<Vec<Vec<u8>>> {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let mut frames = Vec::new();
    for section in ["messages", "decode_errors", "decode_ok_extensions"] {
        for case in doc[section].as_array().into_iter().flatten() {
            let hex = case["hex"].as_str().unwrap_or_default();
            let frame: Option<Vec<u8>> = (0..hex.len())
                .step_by(2)
                .map(|i| {
                    hex.get(i..i + 2)
                        .and_then(|p| u8::from_str_radix(p, 16).ok())
                })
                .collect();
            frames.extend(frame);
        }
    }
    Ok(frames)
}

/// A stable file name: FNV-1a of the content, as hex.
fn name(bytes: &[u8]) -> String {
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("seed-{hash:016x}")
}

/// Every frame text in the vectors (the `text` of raw frames, and each
/// `message` object re-serialized), plus the messages the server tests send.
fn message_texts(vectors: &Path) -> std::io::Result<BTreeSet<String>> {
    let mut texts = BTreeSet::new();
    let mut files = Vec::new();
    json_files(vectors, &mut files)?;
    files.sort();
    for file in files {
        let Ok(value) = serde_json::from_str::<Value>(&std::fs::read_to_string(&file)?) else {
            continue;
        };
        collect(&value, &mut texts);
    }
    for text in TEST_TEXTS {
        texts.insert((*text).to_owned());
    }
    Ok(texts)
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            json_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
    Ok(())
}

fn collect(value: &Value, texts: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(text)) = map.get("text") {
                texts.insert(text.clone());
            }
            if let Some(message @ Value::Object(m)) = map.get("message") {
                if m.contains_key("type") {
                    texts.insert(message.to_string());
                }
            }
            map.values().for_each(|v| collect(v, texts));
        }
        Value::Array(items) => items.iter().for_each(|v| collect(v, texts)),
        _ => {}
    }
}

/// Frames the server tests (`tests/sessions.rs`, `tests/limits_and_faults.rs`,
/// `tests/demo_faults.rs`) send, as text, and the server messages they expect.
const TEST_TEXTS: &[&str] = &[
    r#"{"type":"connect","protocol":1}"#,
    r#"{"type":"connect","protocol":1,"token":"alice"}"#,
    r#"{"type":"connect","protocol":2}"#,
    r#"{"type":"connect","protocol":1,"session":"s1-2"}"#,
    r#"{"type":"request","id":1,"method":"echo","params":{"a":1}}"#,
    r#"{"type":"request","id":2,"method":"no.such.method","params":null}"#,
    r#"{"type":"request","id":1,"method":"order.create","params":"book","idem":"k-1"}"#,
    r#"{"type":"request","id":1,"method":"slow","params":300,"timeout_ms":100}"#,
    r#"{"type":"request","id":5,"method":7}"#,
    r#"{"type":"request","id":"x"}"#,
    r#"{"type":"subscribe","channel":"news"}"#,
    r#"{"type":"subscribe","channel":"news","since":{"epoch":"e1","offset":3}}"#,
    r#"{"type":"unsubscribe","channel":"news"}"#,
    r#"{"type":"ping"}"#,
    r#"{"type":"pong"}"#,
    r#"{"type":"hologram"}"#,
    r#"{"type":"ping","pad":"pppppppppppppppppppppppppppppppppppppppp"}"#,
    "{not json",
    "[\"ping\"]",
    r#"{"type":"welcome","session":"s1-2","protocol":1,"ping_interval_ms":25000}"#,
    r#"{"type":"response","id":1,"result":{"a":1}}"#,
    r#"{"type":"response","id":2,"error":{"code":"not_found","message":"no such method"}}"#,
    r#"{"type":"subscribed","channel":"news","epoch":"e1","offset":3,"recovered":true}"#,
    r#"{"type":"unsubscribed","channel":"news","code":"lagged","reason":"subscriber fell behind"}"#,
    r#"{"type":"publication","channel":"news","epoch":"e1","offset":4,"data":4}"#,
    r#"{"type":"reconnect","reason":"deploy","min_delay_ms":100,"max_delay_ms":200}"#,
    r#"{"type":"error","code":"rate_limited","message":"slow down","retry_after_ms":50}"#,
];

/// The streams of `ws/`'s unit tests, each message text as one frame, and
/// the rule breakers, with a few read splits and limits each.
fn ws_seeds(texts: &BTreeSet<String>) -> Vec<Vec<u8>> {
    let mut streams: Vec<(Vec<u8>, usize)> = Vec::new();
    // text_fragments_pings_and_close
    let mut s = masked_frame(0x01, "héllo ".as_bytes());
    s.extend(masked_frame(0x89, b"p"));
    s.extend(masked_frame(0x80, "wörld".as_bytes()));
    s.extend(masked_frame(0x82, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
    s.extend(masked_frame(0x88, &[0x03, 0xe8, b'o', b'k']));
    streams.push((s, 1024));
    // rule_breakers_get_their_close_codes
    for breaker in [
        vec![0x81, 0x00],
        masked_frame(0xC1, b"x"),
        masked_frame(0x83, b"x"),
        masked_frame(0x09, b"x"),
        masked_frame(0x80, b"x"),
        masked_frame(0x89, &[0; 126]),
        masked_frame(0x81, &[0xff]),
        masked_frame(0x01, &[0xce, 0xba, 0xff]),
        masked_frame(0x88, &[0x03]),
        masked_frame(0x88, &[0x03, 0xed]),
        masked_frame(0x88, &[0x03, 0xe8, 0xff]),
        masked_frame(0x82, &[0; 2000]),
    ] {
        streams.push((breaker, 1024));
    }
    // a_message_over_the_limit_in_fragments_is_too_big (limit 125 here)
    let mut s = masked_frame(0x02, &[0; 70]);
    s.extend(masked_frame(0x80, &[0; 70]));
    streams.push((s, 125));
    // frames_split_anywhere_reassemble: 16- and 64-bit lengths
    streams.push((masked_frame(0x81, &[b'a'; 300]), 4096));
    streams.push((masked_frame(0x81, &vec![b'a'; 70_000]), 1 << 20));
    // A text split across fragments inside a UTF-8 sequence, with a ping
    // between them, then a close without a code.
    let mut s = masked_frame(0x01, &"ü".as_bytes()[..1]);
    s.extend(masked_frame(0x89, b""));
    s.extend(masked_frame(0x80, &"ü".as_bytes()[1..]));
    s.extend(masked_frame(0x8A, b"unsolicited"));
    s.extend(masked_frame(0x88, b""));
    streams.push((s, 1024));
    // Every message text, one frame each, in one stream.
    let all: Vec<u8> = texts
        .iter()
        .flat_map(|t| masked_frame(0x81, t.as_bytes()))
        .collect();
    streams.push((all, 4096));
    let mut seeds = Vec::new();
    for (stream, max) in &streams {
        for split in [None, Some(0), Some(3), Some(7)] {
            seeds.push(ws_frames_input(split, *max, stream));
        }
    }
    seeds
}

fn text(s: &str) -> FuzzStr {
    FuzzStr(s.to_owned())
}

fn connect() -> FuzzFrame {
    FuzzFrame::Connect {
        protocol: 1,
        token: None,
        session: None,
    }
}

fn request(id: u64, method: FuzzMethod, params: FuzzParams, idem: Option<FuzzKey>) -> FuzzFrame {
    FuzzFrame::Request {
        id,
        method,
        params,
        idem,
        timeout_ms: None,
    }
}

/// Sessions transcribed from the server's tests, plus one per frame kind.
fn sessions() -> Vec<Vec<FuzzFrame>> {
    use FuzzFrame::*;
    vec![
        // sessions.rs: requests are answered, unknown methods too.
        vec![
            connect(),
            request(1, FuzzMethod::Echo, FuzzParams::Object(text("a"), 1), None),
            request(
                2,
                FuzzMethod::Other(text("no.such.method")),
                FuzzParams::Null,
                None,
            ),
            Yield,
            Yield,
        ],
        // sessions.rs: an idempotent order, retried, and another key.
        vec![
            connect(),
            request(
                1,
                FuzzMethod::OrderCreate,
                FuzzParams::Str(text("book")),
                Some(FuzzKey::K1),
            ),
            Yield,
            request(
                7,
                FuzzMethod::OrderCreate,
                FuzzParams::Str(text("book")),
                Some(FuzzKey::K1),
            ),
            request(
                8,
                FuzzMethod::OrderCreate,
                FuzzParams::Str(text("book")),
                Some(FuzzKey::K2),
            ),
            Yield,
        ],
        // sessions.rs: subscribe, publications, resume from a position.
        vec![
            Publish(FuzzChannel::News, FuzzParams::Int(1)),
            Publish(FuzzChannel::News, FuzzParams::Int(2)),
            connect(),
            Subscribe {
                channel: FuzzChannel::News,
                since: Some((FuzzEpoch::Current, 1)),
            },
            Yield,
            Publish(FuzzChannel::News, FuzzParams::Int(3)),
            Yield,
            Unsubscribe(FuzzChannel::News),
            Subscribe {
                channel: FuzzChannel::Feed,
                since: Some((FuzzEpoch::Other(text("gone")), 9)),
            },
            Yield,
        ],
        // limits_and_faults.rs: malformed frames get errors, then a close.
        vec![
            connect(),
            Text(text("{not json")),
            Text(text(r#"{"type":"hologram"}"#)),
            Text(text(r#"{"type":"request","id":"x"}"#)),
            Text(text(r#"{"type":"request","id":5,"method":7}"#)),
            Binary(FuzzBytes(vec![1, 2, 3])),
        ],
        // limits_and_faults.rs: a frame over the limit; invalid UTF-8.
        vec![connect(), Padded(5000)],
        vec![connect(), Raw(FuzzBytes(masked_frame(0x81, &[0x7b, 0xff])))],
        // limits_and_faults.rs: a flood of requests past the burst.
        {
            let mut flood = vec![connect()];
            flood.extend(
                (0..40).map(|id| request(id, FuzzMethod::Echo, FuzzParams::Int(id as i64), None)),
            );
            flood
        },
        // limits_and_faults.rs: more subscriptions than allowed.
        {
            let mut subs = vec![connect()];
            subs.extend((0..6).map(|n| Subscribe {
                channel: FuzzChannel::Other(text(&format!("a{n}"))),
                since: None,
            }));
            subs.push(Yield);
            subs
        },
        // A request before connect; a second connect; a wrong protocol.
        vec![FuzzFrame::Ping, connect()],
        vec![connect(), connect()],
        vec![FuzzFrame::Connect {
            protocol: 2,
            token: Some(text("alice")),
            session: Some(text("s1-2")),
        }],
        // Control frames, fragments, pings and pongs at both levels, a close.
        vec![
            WsPing(FuzzBytes(b"hello".to_vec())),
            connect(),
            Fragmented {
                text: text(r#"{"type":"ping"}"#),
                pieces: 3,
                ping: true,
            },
            FuzzFrame::Ping,
            FuzzFrame::Pong,
            WsPong(FuzzBytes(Vec::new())),
            request(3, FuzzMethod::Slow, FuzzParams::Millis(1), None),
            Yield,
            Close {
                code: Some(1000),
                reason: text("bye"),
            },
        ],
        vec![
            connect(),
            Close {
                code: Some(1005),
                reason: text(""),
            },
        ],
        vec![
            connect(),
            request(
                4,
                FuzzMethod::Echo,
                FuzzParams::Json(text(r#"{"deep":[[[[1]]]],"f":1.5e300}"#)),
                Some(FuzzKey::Other(text("k-9"))),
            ),
            Yield,
        ],
    ]
}
