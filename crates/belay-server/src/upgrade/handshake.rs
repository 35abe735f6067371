//! The upgrade request's own checks (RFC 6455 §4.2.1), the codec its
//! `Sec-WebSocket-Protocol` list chose, and the 101 answer.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;

use belay_proto::message::Codec;

use super::handoff::upgraded;
use super::io::WsIo;
use super::refusal::NotAnUpgrade;
use crate::stream::StreamLayer;
use crate::ws::WebSocket;

const WS_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// A request that is a valid WebSocket upgrade (RFC 6455 §4.2.1), not yet
/// answered. Every WebSocket route (`/ws` here, the conformance echo route)
/// goes through it, so they share one handshake and one codec setup.
pub(crate) struct Handshake {
    key: String,
    /// The codec the client's `Sec-WebSocket-Protocol` list chose
    /// (spec/PROTOCOL.md §1.8); `None`: answered without the header, JSON.
    pub(crate) codec: Option<Codec>,
}

impl Handshake {
    /// Check the upgrade request (RFC 6455 §4.2.1): a `GET` of HTTP/1.1 or
    /// later with `Upgrade: websocket`, `Connection: upgrade`,
    /// `Sec-WebSocket-Version: 13` and a `Sec-WebSocket-Key` that is the
    /// base64 encoding of 16 bytes.
    pub(crate) fn validate(request: &Request) -> Result<Handshake, NotAnUpgrade> {
        if request.method() != axum::http::Method::GET {
            return Err(NotAnUpgrade::Method);
        }
        if request.version() < axum::http::Version::HTTP_11 {
            return Err(NotAnUpgrade::Headers);
        }
        let key = websocket_key(request.headers()).ok_or(NotAnUpgrade::Headers)?;
        Ok(Handshake {
            key,
            codec: chosen_codec(request.headers()),
        })
    }

    /// Answer 101 Switching Protocols and, once hyper hands over the
    /// connection, run `session` on Belay's WebSocket codec with messages
    /// limited to `max_payload` bytes. hyper's connection state (its read
    /// and write buffers) is released first: the socket is taken back out of
    /// the upgrade when the server's own accept loop served it. `session` is
    /// dropped unrun if the upgrade never completes. With a `layer`, the
    /// session runs on the stream the layer makes of the socket.
    pub(crate) fn accept<F, Fut>(
        self,
        request: Request,
        max_payload: usize,
        layer: Option<(Arc<dyn StreamLayer>, SocketAddr)>,
        session: F,
    ) -> Response
    where
        F: FnOnce(WebSocket<WsIo>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        tokio::spawn(upgraded(
            hyper::upgrade::on(request),
            max_payload,
            layer,
            session,
        ));
        let mut response = Response::builder()
            .status(StatusCode::SWITCHING_PROTOCOLS)
            .header(header::UPGRADE, "websocket")
            .header(header::CONNECTION, "Upgrade")
            .header(header::SEC_WEBSOCKET_ACCEPT, accept_key(&self.key));
        if let Some(codec) = self.codec {
            response = response.header(header::SEC_WEBSOCKET_PROTOCOL, codec.subprotocol());
        }
        response
            .body(axum::body::Body::empty())
            .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
    }
}

/// The codec of the first Belay subprotocol in the request's
/// `Sec-WebSocket-Protocol` headers, in the client's order.
fn chosen_codec(headers: &HeaderMap) -> Option<Codec> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(Codec::choose)
}

fn websocket_key(headers: &HeaderMap) -> Option<String> {
    let has = |name: header::HeaderName, want: &str| {
        headers.get_all(name).iter().any(|v| {
            v.to_str()
                .map(|s| s.split(',').any(|p| p.trim().eq_ignore_ascii_case(want)))
                .unwrap_or(false)
        })
    };
    if !has(header::UPGRADE, "websocket") || !has(header::CONNECTION, "upgrade") {
        return None;
    }
    if headers.get(header::SEC_WEBSOCKET_VERSION)?.as_bytes() != b"13" {
        return None;
    }
    let key = headers
        .get(header::SEC_WEBSOCKET_KEY)?
        .to_str()
        .ok()?
        .trim();
    let decoded = base64::engine::general_purpose::STANDARD.decode(key).ok()?;
    (decoded.len() == 16).then(|| key.to_owned())
}

/// The `Sec-WebSocket-Accept` answering `key`.
fn accept_key(key: &str) -> String {
    let mut sha = sha1_smol::Sha1::new();
    sha.update(key.as_bytes());
    sha.update(WS_GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(sha.digest().bytes())
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn a_key_that_is_not_base64_of_16_bytes_is_not_an_upgrade() {
        let headers = |key: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
            h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
            h.insert(
                header::SEC_WEBSOCKET_VERSION,
                HeaderValue::from_static("13"),
            );
            h.insert(
                header::SEC_WEBSOCKET_KEY,
                HeaderValue::from_str(key).unwrap(),
            );
            h
        };
        assert!(websocket_key(&headers("dGhlIHNhbXBsZSBub25jZQ==")).is_some());
        assert!(websocket_key(&headers("not base64!")).is_none());
        assert!(websocket_key(&headers("c2hvcnQ=")).is_none());
    }

    #[test]
    fn accept_key_matches_rfc_6455_example() {
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }
}
