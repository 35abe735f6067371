//! The SSE + HTTP fallback (spec/PROTOCOL.md §1.7): for networks that block
//! WebSocket upgrades, a session runs over an event stream (server →
//! client) and POSTs (client → server), driven by the same connection task
//! and the same core machine as a WebSocket session.
//!
//! ```text
//!  POST /sse ── admission (as an upgrade) ──▶ connection task ──▶ events into the body (pipe)
//!                                                   ▲
//!  POST /sse/send ── Belay-Stream, Belay-Seq ───────┘ one body at a time, answered once read
//!  POST /sse/close ─────────────────────────────────┘
//! ```
//!
//! | request | answer |
//! |---|---|
//! | `POST /sse` refused like an upgrade (origin, draining, source, rate) | 403 / 503 / 429 / 503 + `Retry-After` |
//! | `POST /sse`, body over `max_frame_len` or not UTF-8 | 413 / 400 |
//! | `POST /sse` | 200, `text/event-stream`: `open`, then one event per message, `close` |
//! | send: unknown stream | 404 |
//! | send: no or malformed `Belay-Seq` | 400 |
//! | send: a number already taken | 204 (body ignored) |
//! | send: a number past the next | 409, stream closed 1002 `protocol error` |
//! | send: body over `max_frame_len` / not UTF-8 | 413 (once the rest is read and dropped, bounded) / 400, stream closed 1009 / 1007 |
//! | send: not read within 10 s | 503 + `Retry-After: 1`, stream ended (1006 for the client) |
//! | open, send or close: body not in full within `body_timeout` (5 s) | 408, connection closed; a send's stream ended (1006) |
//! | send | 204 once every message of it was read |
//! | close | 204, the connection handles it as a close frame |

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use belay_proto::message::Codec;
use belay_proto::server::SendVerdict;
use bytes::Bytes;
use tokio::sync::oneshot;

use crate::connection::{self, Admission};
use crate::peer_limits::SlotCell;
use crate::request_body::read_body;
use crate::shared::Server;
use crate::upgrade;
use crate::ws::WsError;

mod events;
mod gate;
mod pipe;
mod relay;
mod transport;

pub use crate::sse_relay::{RelayAnswer, RelayedSend, SseRelay};

use belay_proto::server::UpgradeVerdict;

use crate::sse_streams as streams;

/// The header naming a send's or a close's stream.
pub const STREAM_HEADER: &str = "belay-stream";
/// The header numbering a send.
pub const SEQ_HEADER: &str = "belay-seq";

/// How long a send may wait for its connection to read it.
const SEND_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest body of a close.
const MAX_CLOSE_BODY: usize = 1024;

/// `POST /sse`: open a stream.
pub(crate) async fn open(
    State(server): State<Server>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
    let shared = Arc::clone(&server.shared);
    let mut admitted = match upgrade::admit(&shared, &request, peer) {
        Ok(admitted) => admitted,
        Err(refused) => {
            if let UpgradeVerdict::Refuse { status, reason, .. } = &refused {
                crate::logs::refused(peer, "sse", Some(*status), None, reason);
            }
            return upgrade::answer(refused);
        }
    };
    if let Admission::Refused { retry_after } = admitted.admission {
        // A page can read this status (unlike a failed upgrade's).
        let answer = respond(Answer::Overloaded { retry_after });
        let status = answer.status().as_u16();
        crate::logs::refused(peer, "sse", Some(status), None, "over the accept rate");
        return answer;
    }
    let connection = request.extensions().get::<SlotCell>().cloned();
    let limit = shared.config.limits.max_frame_len();
    // Still pending while its body arrives: a stalled one holds a pending
    // slot, bounded in number, and for `body_timeout` at most.
    let body = match read_body(request.into_body(), limit, shared.config.body_timeout).await {
        Ok(body) => body,
        Err(refused) => {
            let answer = respond(Answer::BadBody(refused));
            let status = answer.status().as_u16();
            crate::logs::refused(peer, "sse", Some(status), None, "bad first body");
            return answer;
        }
    };
    admitted.upgraded();
    let (id, inbound, guard) = shared.sse.open(shared.node_id());
    if let Some(entry) = shared.sse.get(&id) {
        // The channel is new: it has room for this first body (number 0).
        let (taken, _) = oneshot::channel();
        let _ = entry
            .inbound
            .try_send(streams::Inbound::Body { body, taken });
    }
    let (out, body) = pipe::pipe();
    out.write(&events::open(&id));
    let gate = shared
        .stream_layer
        .as_deref()
        .map(|layer| gate::Gate::new(layer, peer));
    let transport = transport::SseTransport::new(out, inbound, guard, connection, gate);
    let meta = admitted.into_meta(peer, Codec::Json);
    crate::logs::accepted(peer, meta.source(), "sse", shared.node_id());
    tokio::spawn(connection::run(Arc::clone(&shared), transport, meta));
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache, no-transform")
        // nginx (and proxies that follow it) pass each event on at once.
        .header("x-accel-buffering", "no")
        .body(Body::new(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// `POST /sse/send`: messages for a stream.
pub(crate) async fn send(State(server): State<Server>, request: Request) -> Response {
    let shared = &server.shared;
    let Some(id) = stream_of(request.headers()).map(str::to_owned) else {
        return respond(Answer::UnknownStream);
    };
    let Some(seq) = request
        .headers()
        .get(SEQ_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return respond(Answer::BadSeq);
    };
    let slot = request.extensions().get::<SlotCell>().cloned();
    let limit = shared.config.limits.max_frame_len();
    let body = read_body(request.into_body(), limit, shared.config.body_timeout);
    let answer = match shared.sse.get(&id) {
        Some(entry) => take_send(&entry, seq, body).await,
        None => match relay::route(shared, &id) {
            Some((relay, node)) => {
                let body = body.await;
                relay::forward(relay, node, RelayedSend::send(&id, seq, body)).await
            }
            None => Answer::UnknownStream,
        },
    };
    if let (Answer::Taken, Some(slot)) = (answer, slot) {
        // A stream's client keeps this connection alive for its next send:
        // it no longer counts as a connection waiting to be upgraded.
        slot.settle();
    }
    respond(answer)
}

/// A send for `entry`: numbered `seq`, its body read (only when it is the
/// next) by `body`.
async fn take_send(
    entry: &streams::StreamEntry,
    seq: u64,
    body: impl std::future::Future<Output = Result<Bytes, BadBody>>,
) -> Answer {
    // Held to the end: sends are one at a time, in number order.
    let mut order = entry.order.lock().await;
    match order.handle_send(seq) {
        SendVerdict::Read => {}
        SendVerdict::Repeat => return Answer::Taken,
        // A gap: a send went missing.
        _ => {
            fail(entry, WsError::Protocol("out of order")).await;
            return Answer::OutOfOrder;
        }
    }
    let body = match body.await {
        Ok(body) => body,
        Err(refused) => {
            fail(entry, refused.error()).await;
            return Answer::BadBody(refused);
        }
    };
    order.taken();
    let (taken, read) = oneshot::channel();
    let handed = async {
        entry
            .inbound
            .send(streams::Inbound::Body { body, taken })
            .await
            .map_err(|_| ())?;
        read.await.map_err(|_| ())
    };
    match tokio::time::timeout(SEND_READ_TIMEOUT, handed).await {
        Ok(Ok(())) => Answer::Taken,
        // The connection ended before reading all of it.
        Ok(Err(())) => Answer::UnknownStream,
        Err(_) => {
            fail(entry, WsError::Io(std::io::ErrorKind::TimedOut.into())).await;
            Answer::NotReadInTime
        }
    }
}

/// `POST /sse/close`: the client closes its stream.
pub(crate) async fn close(State(server): State<Server>, request: Request) -> Response {
    let shared = &server.shared;
    let Some(id) = stream_of(request.headers()).map(str::to_owned) else {
        return respond(Answer::UnknownStream);
    };
    let code = match read_body(
        request.into_body(),
        MAX_CLOSE_BODY,
        shared.config.body_timeout,
    )
    .await
    {
        Ok(body) => close_code(&body),
        Err(refused) => return respond(Answer::BadBody(refused)),
    };
    match shared.sse.get(&id) {
        Some(entry) => respond(take_close(&entry, code).await),
        None => match relay::route(shared, &id) {
            Some((relay, node)) => {
                respond(relay::forward(relay, node, RelayedSend::close(&id, code)).await)
            }
            None => respond(Answer::UnknownStream),
        },
    }
}

/// The code of a close's body `{"code":1000,"reason":"…"}`, if it has one.
fn close_code(body: &[u8]) -> Option<u16> {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()?
        .get("code")?
        .as_u64()
        .and_then(|code| u16::try_from(code).ok())
}

async fn take_close(entry: &streams::StreamEntry, code: Option<u16>) -> Answer {
    let _ = tokio::time::timeout(
        SEND_READ_TIMEOUT,
        entry.inbound.send(streams::Inbound::Close(code)),
    )
    .await;
    Answer::Taken
}

/// What a send or a close is answered (on this node, or relayed from the
/// node holding the stream): the core's table.
pub(crate) use belay_proto::server::{BadBody, SseAnswer as Answer};

/// The HTTP response of `answer`.
fn respond(answer: Answer) -> Response {
    let answer = answer.http();
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = if answer.text.is_empty() {
        status.into_response()
    } else {
        (status, answer.text).into_response()
    };
    if let Some(secs) = answer.retry_after_secs {
        insert_header(&mut response, header::RETRY_AFTER, &secs.to_string());
    }
    if answer.close_connection {
        insert_header(&mut response, header::CONNECTION, "close");
    }
    response
}

fn stream_of(headers: &HeaderMap) -> Option<&str> {
    headers.get(STREAM_HEADER)?.to_str().ok()
}

/// Tell the stream's connection to close with `error`'s code (at most
/// `SEND_READ_TIMEOUT` of waiting for room: a connection that reads
/// nothing closes anyway).
async fn fail(entry: &streams::StreamEntry, error: WsError) {
    let _ = tokio::time::timeout(
        SEND_READ_TIMEOUT,
        entry.inbound.send(streams::Inbound::Fail(error)),
    )
    .await;
}

fn insert_header(response: &mut Response, name: header::HeaderName, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        response.headers_mut().insert(name, value);
    }
}

/// The connection's error for a refused body.
trait BadBodyError {
    fn error(self) -> WsError;
}

impl BadBodyError for BadBody {
    fn error(self) -> WsError {
        match self {
            BadBody::TooLarge => WsError::TooBig,
            BadBody::NotUtf8 => WsError::InvalidUtf8,
            BadBody::TimedOut => WsError::Io(std::io::ErrorKind::TimedOut.into()),
        }
    }
}
