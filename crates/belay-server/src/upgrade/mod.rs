//! The WebSocket upgrade: everything that can be refused before a socket
//! exists is refused here, cheaply. The checks after the handshake's own
//! are the core's decision ([`belay_proto::server::UpgradeDecision`]), in
//! this order; this module counts the source and takes the admission
//! token between its steps and turns the verdict into HTTP.
//!
//! | check | response |
//! |---|---|
//! | not a GET, not HTTP/1.1 or later, or not a valid WebSocket upgrade (RFC 6455 §4.2.1: `Upgrade`, `Connection`, version 13, a `Sec-WebSocket-Key` that is base64 of 16 bytes) | HTTP 400 (405 for another method) |
//! | `Origin` not in the allow-list | HTTP 403 |
//! | draining | HTTP 503 + `Retry-After: 5` |
//! | too many connections from this IP (counted from the TCP accept, or from `X-Forwarded-For`/`Forwarded` behind a trusted proxy) | HTTP 429 + `Retry-After` |
//! | over the source's share of the accept rate, or over the accept rate, native client (no `Origin`) | HTTP 503 + `Retry-After` |
//! | the same, browser (`Origin` present) | upgrade, then `reconnect` advice and close 1013 with the hint in the reason (a browser cannot read an HTTP status of a failed upgrade) |
//!
//! The files: `handshake` (the request's RFC 6455 checks, the subprotocol
//! and codec it chose, the 101 answer), `admission` (origin, draining, the
//! source's slot and the accept rate, through the core's decision),
//! `refusal` (the HTTP answer to a refused request), `handoff` (the socket
//! taken out of hyper and handed to the session's task) and `io` (the
//! socket types a session runs on).

mod admission;
mod handoff;
mod handshake;
mod io;
mod refusal;
#[cfg(test)]
mod task_size;

pub(crate) use admission::admit;
pub(crate) use handshake::Handshake;
pub(crate) use refusal::answer;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::response::{IntoResponse, Response};

use belay_proto::message::Codec;
use belay_proto::server::UpgradeVerdict;

use crate::connection;
use crate::logs;
use crate::shared::Server;

/// This transport's name in the logs.
const TRANSPORT: &str = "websocket";

/// The `/ws` route: the handshake's checks, the admission checks, then the
/// 101 answer and the session's connection task.
pub(crate) async fn handle(
    State(server): State<Server>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
    let shared = Arc::clone(&server.shared);
    let handshake = match Handshake::validate(&request) {
        Ok(handshake) => handshake,
        Err(refused) => {
            let response = refused.into_response();
            let status = response.status().as_u16();
            logs::refused(
                peer,
                TRANSPORT,
                Some(status),
                None,
                "not a WebSocket upgrade",
            );
            return response;
        }
    };
    let mut admitted = match admit(&shared, &request, peer) {
        Ok(admitted) => admitted,
        Err(refused) => {
            if let UpgradeVerdict::Refuse { status, reason, .. } = &refused {
                logs::refused(peer, TRANSPORT, Some(*status), None, reason);
            }
            return answer(refused);
        }
    };
    admitted.upgraded();
    let layer = shared.stream_layer.clone().map(|layer| (layer, peer));
    let max_frame_len = shared.config.limits.max_frame_len();
    let codec = handshake.codec.unwrap_or_default();
    let meta = admitted.into_meta(peer, codec);
    logs::accepted(peer, meta.source(), TRANSPORT, shared.node_id());
    handshake.accept(request, max_frame_len, layer, move |mut ws| {
        ws.set_binary_messages(codec == Codec::Binary);
        connection::run(shared, ws, meta)
    })
}
