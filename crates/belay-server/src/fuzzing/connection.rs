//! The `connection` target: one whole session through the connection
//! driver, fed a sequence of [`FuzzFrame`]s.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;

use arbitrary::{Arbitrary, Unstructured};
use belay_proto::message::{decode_server, Reply, ServerMessage};
use belay_proto::server::Limits;
use belay_proto::testing::invariants::ServerInvariants;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::connection::{self, Admission, ConnectionMeta};
use crate::ws::WebSocket;
use crate::{Server, ServerConfig};

use super::reference::{
    parse_server_frames, OP_BINARY, OP_CLOSE, OP_CONTINUATION, OP_PING, OP_PONG, OP_TEXT,
};
use super::ws_frames::splitmix64;

use super::input::*;
/// The message limit the `connection` target's server has (small, so the
/// fuzzer reaches it).
const FUZZ_MAX_FRAME: usize = 4096;

/// How many scheduler rounds a [`FuzzFrame::Yield`] gives the server (enough
/// for a request task to answer and the answer to be written).
const YIELD_ROUNDS: usize = 16;

/// How long a session may take after the client has sent everything.
const SESSION_BOUND: Duration = Duration::from_secs(10);

/// The server every `connection` run gets: the demo's methods, a small
/// frame limit, a small burst (so rate limits are reachable) and a short
/// handshake deadline.
fn fuzz_server() -> Server {
    let mut limits = Limits::default();
    limits
        .set_max_frame_len(FUZZ_MAX_FRAME)
        .set_burst(24)
        .set_messages_per_sec(50.0)
        .set_max_subscriptions(4)
        .set_outbound_queue(64)
        .set_handshake_timeout(Duration::from_secs(2));
    Server::builder()
        .config(ServerConfig::default().with_limits(limits))
        .methods(fuzz_methods())
        .build()
}

/// The methods a fuzzed session may call ([`FuzzMethod`]): `echo` answers
/// its params, `order.create` numbers each execution (so a replayed key
/// shows), `slow` answers after the given milliseconds (at most 30 s).
fn fuzz_methods() -> crate::rpc::Methods {
    use crate::rpc::RpcError;
    use std::sync::atomic::{AtomicU64, Ordering};
    let executions = Arc::new(AtomicU64::new(0));
    let mut methods = crate::rpc::Methods::new();
    methods.register("echo", |_ctx, value: serde_json::Value| async move {
        Ok::<_, RpcError>(value)
    });
    methods.register("order.create", move |ctx, item: serde_json::Value| {
        let n = executions.fetch_add(1, Ordering::Relaxed) + 1;
        async move { Ok::<_, RpcError>(json!({ "order": n, "item": item, "key": ctx.idempotency_key })) }
    });
    methods.register("slow", |_ctx, ms: u64| async move {
        tokio::time::sleep(Duration::from_millis(ms.min(30_000))).await;
        Ok::<_, RpcError>(ms)
    });
    methods
}

/// The one place that knows how the `/ws` upgrade hands a socket to the
/// connection driver (see `upgrade::handle`); adapt it when that changes.
async fn run_session<S>(server: &Server, ws: WebSocket<S>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let meta = ConnectionMeta {
        peer: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 40_000)),
        header_token: None,
        admission: Admission::Admitted,
        codec: belay_proto::message::Codec::Json,
        _peer_slot: None,
    };
    connection::run(Arc::clone(&server.shared), ws, meta).await;
}

/// Fuzz target `connection`'s input decoding: the frames `data` stands for.
pub fn decode_frames(data: &[u8]) -> Vec<FuzzFrame> {
    Vec::<FuzzFrame>::arbitrary_take_rest(Unstructured::new(data)).unwrap_or_default()
}

/// What one [`connection()`] session produced (for tests that check the
/// harness reaches the server's logic, not just its first refusal).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionOutcome {
    /// The server sent `welcome`.
    pub welcomed: bool,
    /// The server's messages, by type name (`welcome`, `response`, ...).
    pub messages: Vec<String>,
    /// Results (not errors) among the responses.
    pub results: usize,
    /// Pongs the server sent.
    pub pongs: usize,
    /// The code of the server's close frame, if it sent one with a code.
    pub close_code: Option<u16>,
}

/// Fuzz target `connection`: run one session fed `frames` (then a close)
/// and check what the server wrote. Panics if an invariant breaks.
pub fn connection(frames: &[FuzzFrame]) -> SessionOutcome {
    // A runtime per session: tasks a session leaves behind (a `slow`
    // request) go with it, so runs do not influence each other.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    let server = fuzz_server();
    let (client, socket) = tokio::io::duplex(64 * 1024);
    let (mut from_server, mut to_server) = tokio::io::split(client);
    let written = rt.block_on(async {
        let session = run_session(&server, WebSocket::new(socket, &[], FUZZ_MAX_FRAME));
        let send = async {
            let mut epochs: HashMap<String, String> = HashMap::new();
            let mut mask_seed = 0x5eed_u64;
            for frame in frames {
                match frame {
                    FuzzFrame::Publish(channel, data) => {
                        // A refused publication (a bad channel name, a
                        // payload too deep or too large) changes nothing.
                        if let Ok(publication) = server.publish(channel.name(), data.value()).await
                        {
                            epochs.insert(channel.name().to_owned(), publication.epoch);
                        }
                    }
                    FuzzFrame::Yield => {
                        for _ in 0..YIELD_ROUNDS {
                            tokio::task::yield_now().await;
                        }
                    }
                    frame => {
                        let bytes = wire_bytes(frame, &epochs, &mut mask_seed);
                        if to_server.write_all(&bytes).await.is_err() {
                            // The server is gone: nothing more to say.
                            return;
                        }
                    }
                }
            }
            // Let the server answer what it read before the close (a peer
            // that closes first loses what is still queued for it).
            for _ in 0..4 * YIELD_ROUNDS {
                tokio::task::yield_now().await;
            }
            let close = client_frame(OP_CLOSE, true, &1000u16.to_be_bytes(), &mut mask_seed);
            let _ = to_server.write_all(&close).await;
            let _ = to_server.shutdown().await;
        };
        let receive = async {
            let mut written = Vec::new();
            let _ = from_server.read_to_end(&mut written).await;
            written
        };
        let all = async { tokio::join!(session, send, receive).2 };
        match tokio::time::timeout(SESSION_BOUND, all).await {
            Ok(written) => written,
            Err(_) => panic!("the session did not end within {SESSION_BOUND:?} of the close"),
        }
    });
    drop(rt);
    assert_eq!(
        server.metrics().open_connections(),
        0,
        "the connection is still counted after its task ended"
    );
    check_server_output(frames, &written)
}

/// Check everything the server wrote in one session.
fn check_server_output(frames: &[FuzzFrame], written: &[u8]) -> SessionOutcome {
    let mut outcome = SessionOutcome::default();
    let parsed = parse_server_frames(written).unwrap_or_else(|e| panic!("server output: {e}"));
    // Raw bytes may hold any frames, so counts are only checked without them.
    let exact = !frames.iter().any(|f| matches!(f, FuzzFrame::Raw(_)));
    let pings_sent = frames
        .iter()
        .map(|f| match f {
            FuzzFrame::WsPing(_) => 1,
            FuzzFrame::Fragmented { ping, .. } => usize::from(*ping),
            _ => 0,
        })
        .sum::<usize>();
    // The message-level invariants are the core's one checker's, at the
    // wire: nothing after the close, welcome first and once, one response
    // per request (each request frame may be answered once; a text frame
    // may carry any request), only close codes a server may send.
    let mut invariants = ServerInvariants::at_the_wire();
    for frame in frames {
        match frame {
            FuzzFrame::Request { id, .. } => invariants.request_sent(Some(*id)),
            FuzzFrame::Text(_) | FuzzFrame::Fragmented { .. } => invariants.request_sent(None),
            _ => {}
        }
    }
    if !exact {
        invariants.requests_uncounted();
    }
    let mut pongs = 0;
    for (i, (opcode, payload)) in parsed.iter().enumerate() {
        match *opcode {
            OP_TEXT => {
                let text = std::str::from_utf8(payload)
                    .unwrap_or_else(|_| panic!("server text frame {i} is not UTF-8"));
                let message = decode_server(text)
                    .unwrap_or_else(|e| panic!("server frame {text:?} does not decode: {e}"));
                outcome.messages.push(message.kind().name().to_owned());
                if let Err(violation) = invariants.message(&message) {
                    panic!("the server's messages: {violation}");
                }
                match message {
                    ServerMessage::Welcome(_) => outcome.welcomed = true,
                    ServerMessage::Response(response) => {
                        if matches!(response.reply, Reply::Result(_)) {
                            outcome.results += 1;
                        }
                    }
                    _ => {}
                }
            }
            OP_PONG => {
                pongs += 1;
                assert!(payload.len() <= 125, "a pong of {} bytes", payload.len());
            }
            OP_CLOSE => {
                assert_eq!(i, parsed.len() - 1, "frames after the server's close");
                check_close_payload(payload);
                if let [hi, lo, ..] = payload[..] {
                    let code = u16::from_be_bytes([hi, lo]);
                    outcome.close_code = Some(code);
                    if let Err(violation) = invariants.close(code) {
                        panic!("the server's close: {violation}");
                    }
                }
            }
            other => panic!("the server sent a frame with opcode {other:#x}"),
        }
    }
    outcome.pongs = pongs;
    if exact {
        assert!(pongs <= pings_sent, "{pongs} pongs for {pings_sent} pings");
    }
    outcome
}

/// A server's close: empty, or a code it may send and a UTF-8 reason.
fn check_close_payload(payload: &[u8]) {
    assert!(payload.len() <= 125, "a close of {} bytes", payload.len());
    if payload.is_empty() {
        return;
    }
    assert!(payload.len() >= 2, "a close payload of one byte");
    assert!(
        std::str::from_utf8(&payload[2..]).is_ok(),
        "a close reason that is not UTF-8"
    );
}

/// The bytes a client puts on the wire for `frame`.
fn wire_bytes(frame: &FuzzFrame, epochs: &HashMap<String, String>, mask: &mut u64) -> Vec<u8> {
    let text = |message: Value, mask: &mut u64| {
        client_frame(OP_TEXT, true, message.to_string().as_bytes(), mask)
    };
    let cut = |bytes: &[u8]| bytes[..bytes.len().min(125)].to_vec();
    match frame {
        FuzzFrame::Text(s) => client_frame(OP_TEXT, true, s.0.as_bytes(), mask),
        FuzzFrame::Connect {
            protocol,
            token,
            session,
        } => {
            let mut m = json!({ "type": "connect", "protocol": protocol });
            if let Some(token) = token {
                m["token"] = json!(token.0);
            }
            if let Some(session) = session {
                m["session"] = json!(session.0);
            }
            text(m, mask)
        }
        FuzzFrame::Request {
            id,
            method,
            params,
            idem,
            timeout_ms,
        } => {
            let method = match method {
                FuzzMethod::Echo => "echo",
                FuzzMethod::OrderCreate => "order.create",
                FuzzMethod::Slow => "slow",
                FuzzMethod::Other(name) => &name.0,
            };
            let mut m = json!({
                "type": "request", "id": id, "method": method, "params": params.value(),
            });
            if let Some(idem) = idem {
                m["idem"] = json!(idem.key());
            }
            if let Some(ms) = timeout_ms {
                m["timeout_ms"] = json!(ms);
            }
            text(m, mask)
        }
        FuzzFrame::Subscribe { channel, since } => {
            let mut m = json!({ "type": "subscribe", "channel": channel.name() });
            if let Some((epoch, offset)) = since {
                let epoch = match epoch {
                    FuzzEpoch::Current => epochs.get(channel.name()).cloned().unwrap_or_default(),
                    FuzzEpoch::Other(epoch) => epoch.0.clone(),
                };
                m["since"] = json!({ "epoch": epoch, "offset": offset });
            }
            text(m, mask)
        }
        FuzzFrame::Unsubscribe(channel) => text(
            json!({ "type": "unsubscribe", "channel": channel.name() }),
            mask,
        ),
        FuzzFrame::Ping => text(json!({ "type": "ping" }), mask),
        FuzzFrame::Pong => text(json!({ "type": "pong" }), mask),
        FuzzFrame::Padded(len) => {
            let pad = "p".repeat(usize::from(*len));
            text(json!({ "type": "ping", "pad": pad }), mask)
        }
        FuzzFrame::Fragmented { text, pieces, ping } => {
            let bytes = text.0.as_bytes();
            let pieces = 1 + usize::from(*pieces % 8);
            let step = bytes.len().div_ceil(pieces).max(1);
            let parts: Vec<&[u8]> = if bytes.is_empty() {
                vec![&[]]
            } else {
                bytes.chunks(step).collect()
            };
            let mut out = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                let opcode = if i == 0 { OP_TEXT } else { OP_CONTINUATION };
                out.extend(client_frame(opcode, i + 1 == parts.len(), part, mask));
                if i == 0 && *ping {
                    out.extend(client_frame(OP_PING, true, b"mid", mask));
                }
            }
            out
        }
        FuzzFrame::Binary(bytes) => client_frame(OP_BINARY, true, &bytes.0, mask),
        FuzzFrame::WsPing(bytes) => client_frame(OP_PING, true, &cut(&bytes.0), mask),
        FuzzFrame::WsPong(bytes) => client_frame(OP_PONG, true, &cut(&bytes.0), mask),
        FuzzFrame::Close { code, reason } => {
            let mut payload = Vec::new();
            if let Some(code) = code {
                payload.extend_from_slice(&code.to_be_bytes());
                payload.extend_from_slice(reason.0.as_bytes());
            }
            client_frame(OP_CLOSE, true, &cut(&payload), mask)
        }
        FuzzFrame::Raw(bytes) => bytes.0.clone(),
        FuzzFrame::Publish(..) | FuzzFrame::Yield => Vec::new(),
    }
}

/// One masked client frame (mask keys from a seeded generator).
pub(super) fn client_frame(opcode: u8, fin: bool, payload: &[u8], seed: &mut u64) -> Vec<u8> {
    let key = (splitmix64(seed) as u32).to_be_bytes();
    let mut out = Vec::with_capacity(payload.len() + 14);
    out.push(if fin { 0x80 } else { 0 } | opcode);
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if let Ok(len) = u16::try_from(len) {
        out.push(0x80 | 126);
        out.extend_from_slice(&len.to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&key);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    out
}
