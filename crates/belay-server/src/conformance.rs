//! WebSocket conformance: an echo route for the Autobahn test suite.
//!
//! Autobahn's fuzzing client needs a server that echoes every message. The
//! route here performs exactly the upgrade that `/ws` performs (the same
//! header validation and accept key, the same tokio-websockets server codec)
//! and then echoes text and binary messages back; pings are answered and
//! close frames returned by the codec itself. So `scripts/autobahn.sh`,
//! which runs cases 1–10 against this route, tests the WebSocket layer the
//! Belay sessions run on, without the Belay protocol on top.
//!
//! One deliberate difference: `/ws` limits frames to the configured
//! `max_frame_len` (64 KiB by default, closing with 1009 above it), while
//! the echo route accepts frames up to [`ECHO_MAX_PAYLOAD`] (16 MiB), because
//! Autobahn's case 9 sends messages of up to 16 MiB and expects them echoed.
//! Never mount it on a production server: it lets a peer make the server
//! hold 16 MiB per frame.

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use futures_util::{SinkExt, StreamExt};
use tokio_websockets::Limits as WsLimits;

use crate::upgrade::Handshake;

/// The path of the echo route.
pub const ECHO_PATH: &str = "/echo";

/// Largest frame payload the echo route accepts: 16 MiB, the largest
/// message of Autobahn's case 9.
pub const ECHO_MAX_PAYLOAD: usize = 16 * 1024 * 1024;

/// A router with one route, [`ECHO_PATH`], that upgrades like `/ws` and
/// echoes every text and binary message. Merge it with
/// [`Server::router`](crate::Server::router) to serve both.
pub fn echo_router() -> Router {
    Router::new().route(ECHO_PATH, any(echo))
}

async fn echo(request: Request) -> Response {
    let handshake = match Handshake::validate(request.headers()) {
        Ok(handshake) => handshake,
        Err(refused) => return refused.into_response(),
    };
    let limits = WsLimits::default().max_payload_len(Some(ECHO_MAX_PAYLOAD));
    handshake.accept(request, limits, |mut ws| async move {
        // The codec answers pings, validates UTF-8 and fragmentation, and
        // returns the close frame; an error ends the session (the codec has
        // already sent the close frame the protocol asks for).
        while let Some(Ok(message)) = ws.next().await {
            if (message.is_text() || message.is_binary()) && ws.send(message).await.is_err() {
                break;
            }
        }
    })
}
