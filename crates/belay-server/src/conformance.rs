//! WebSocket conformance: an echo route for the Autobahn test suite.
//!
//! Autobahn's fuzzing client needs a server that echoes every message. The
//! route here performs exactly the upgrade that `/ws` performs (the same
//! header validation and accept key, the same server codec, Belay's own
//! `ws` module) and then echoes text and binary messages back; every ping is
//! answered and close frames are returned by the codec itself. So `scripts/autobahn.sh`,
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
use std::time::Duration;

use crate::upgrade::Handshake;
use crate::ws::Message;

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
    let handshake = match Handshake::validate(&request) {
        Ok(handshake) => handshake,
        Err(refused) => return refused.into_response(),
    };
    handshake.accept(request, ECHO_MAX_PAYLOAD, None, |mut ws| async move {
        // Every ping is answered; the codec validates UTF-8 and
        // fragmentation and answers the peer's close; a broken rule closes
        // with its code.
        let linger = Duration::from_secs(5);
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(text))) => ws.queue_text(&text),
                Some(Ok(Message::Binary(data))) => ws.queue_binary(&data),
                Some(Ok(Message::Ping(payload))) => ws.queue_pong(&payload),
                Some(Ok(Message::Pong)) => {}
                Some(Ok(Message::Close(_))) | None => break,
                Some(Err(error)) => {
                    if let Some(code) = error.close_code() {
                        ws.close(Some(code), error.reason(), linger).await;
                    }
                    return;
                }
            }
        }
        ws.close(None, "", linger).await;
    })
}
