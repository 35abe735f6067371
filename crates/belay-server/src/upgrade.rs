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

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use bytes::Bytes;
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use belay_proto::message::Codec;
use belay_proto::server::{UpgradeDecision, UpgradeVerdict, Violation};

use crate::connection::{self, Admission, ConnectionMeta};
use crate::metrics::{lock, Metrics};
use crate::peer_limits::{PeerSlot, SlotCell};
use crate::shared::{Lifecycle, Server, Shared};
use crate::stream::{BoxedStream, StreamLayer};
use crate::ws::WebSocket;

const WS_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

pub(crate) async fn handle(
    State(server): State<Server>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
    let shared = Arc::clone(&server.shared);
    let handshake = match Handshake::validate(&request) {
        Ok(handshake) => handshake,
        Err(refused) => return refused.into_response(),
    };
    let mut admitted = match admit(&shared, &request, peer) {
        Ok(admitted) => admitted,
        Err(refused) => return answer(refused),
    };
    admitted.upgraded();
    let layer = shared.stream_layer.clone().map(|layer| (layer, peer));
    let max_frame_len = shared.config.limits.max_frame_len();
    let codec = handshake.codec.unwrap_or_default();
    let meta = admitted.into_meta(peer, codec);
    handshake.accept(request, max_frame_len, layer, move |mut ws| {
        ws.set_binary_messages(codec == Codec::Binary);
        connection::run(shared, ws, meta)
    })
}

/// A session the checks let in: how it was admitted, its source's slot
/// (still pending until [`Admitted::upgraded`]) and the
/// `Authorization: Bearer` token, if any.
pub(crate) struct Admitted {
    pub(crate) admission: Admission,
    slot: PeerSlot,
    token: Option<String>,
}

impl Admitted {
    /// The session exists (upgraded, or its stream's first body read): its
    /// connection no longer counts as pending.
    pub(crate) fn upgraded(&mut self) {
        self.slot.upgraded();
    }

    /// What the connection's driver is given.
    pub(crate) fn into_meta(self, peer: SocketAddr, codec: Codec) -> ConnectionMeta {
        ConnectionMeta {
            peer,
            header_token: self.token,
            admission: self.admission,
            codec,
            _peer_slot: Some(self.slot),
        }
    }
}

/// The checks every new session passes, whatever its transport (this
/// WebSocket upgrade, or `POST /sse`): origin, draining, the source's
/// connections, the accept rate (spec/PROTOCOL.md §2.7). The decisions
/// are the core's (`UpgradeDecision`); counting the source and taking an
/// admission token happen here, between its steps.
pub(crate) fn admit(
    shared: &Arc<Shared>,
    request: &Request,
    peer: SocketAddr,
) -> Result<Admitted, UpgradeVerdict> {
    let headers = request.headers();
    let limits = &shared.config.limits;
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let draining = *shared.lifecycle.borrow() != Lifecycle::Serving;
    let decision = UpgradeDecision::new(limits, origin, draining)?;
    let (decision, slot) = decision.source_counted(source_slot(shared, request, peer))?;
    let now = shared.clock.now();
    let source_share = match slot.key() {
        Some(key) => lock(&shared.sources).admit(now, key),
        None => Ok(()),
    };
    let admitted = source_share.and_then(|()| lock(&shared.admission).try_take(now));
    if let Err(wait) = admitted {
        Metrics::add(&shared.metrics.admission_refusals);
        shared.emit("admission_refused", format!("{peer}: retry after {wait:?}"));
    }
    let admission = match decision.admitted(admitted) {
        UpgradeVerdict::Upgrade => Admission::Admitted,
        UpgradeVerdict::UpgradeThenRefuse { retry_after } => Admission::Refused { retry_after },
        refused => return Err(refused),
    };
    Ok(Admitted {
        admission,
        slot,
        token: bearer(headers),
    })
}

/// The slot counting this connection against its source: the one the
/// accept loop took, unless a trusted proxy names the client in
/// `X-Forwarded-For`/`Forwarded` (then the client is counted instead of
/// the proxy); taken here when the router is served some other way.
fn source_slot(
    shared: &Arc<Shared>,
    request: &Request,
    peer: SocketAddr,
) -> Result<PeerSlot, Violation> {
    let from_accept = request
        .extensions()
        .get::<SlotCell>()
        .and_then(SlotCell::take);
    let proxies = &shared.config.trusted_proxies;
    let forwarded_by_proxy = !proxies.is_empty() && proxies.trusts(peer.ip());
    if !forwarded_by_proxy {
        if let Some(slot) = from_accept {
            return Ok(slot);
        }
        return PeerSlot::acquire(shared, Some(peer.ip()));
    }
    let values = |name: header::HeaderName| -> Vec<&str> {
        request
            .headers()
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect()
    };
    let client = proxies.client(
        peer.ip(),
        &values(header::HeaderName::from_static("x-forwarded-for")),
        &values(header::FORWARDED),
    );
    let counted = (!proxies.trusts(client)).then_some(client);
    let slot = PeerSlot::acquire(shared, counted)?;
    // The proxy's own connection is now this client's: stop counting it
    // as not yet upgraded.
    drop(from_accept);
    Ok(slot)
}

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

/// The task of one upgraded connection: it waits for hyper to hand the
/// socket over, then spawns `session` on it as a task of its own and ends.
/// The session's task is most of an idle connection's memory; spawned by
/// itself it does not also carry this future's arguments (the closure, the
/// layer, hyper's `OnUpgrade`), which an async fn keeps for its whole life
/// and which took it past tokio's 2 KiB task class (see
/// `connection::task_size`).
pub(crate) async fn upgraded<F, Fut>(
    on_upgrade: hyper::upgrade::OnUpgrade,
    max_payload: usize,
    layer: Option<(Arc<dyn StreamLayer>, SocketAddr)>,
    session: F,
) where
    F: FnOnce(WebSocket<WsIo>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Ok(upgraded) = on_upgrade.await else {
        return;
    };
    let (io, read_buf) = WsIo::take(upgraded);
    let io = match layer {
        Some((layer, peer)) => WsIo::Layered(layer.wrap(Box::new(io), peer)),
        None => io,
    };
    let ws = WebSocket::new(io, &read_buf, max_payload);
    // Not held across the session: it can pin hyper's whole read buffer
    // (kilobytes per idle connection).
    drop(read_buf);
    tokio::spawn(session(ws));
}

/// The socket under a WebSocket session: the bare TCP stream or TLS stream
/// when the server's accept loop served the upgrade (the usual case), or
/// hyper's boxed upgrade when the router was served some other way.
pub(crate) enum WsIo {
    /// Plain TCP.
    Tcp(TcpStream),
    /// TLS (boxed: the rustls state is large).
    Tls(Box<TlsStream<TcpStream>>),
    /// Anything else hyper upgraded.
    Upgraded(TokioIo<Upgraded>),
    /// What a [`StreamLayer`] made of one of the above.
    Layered(BoxedStream),
}

impl WsIo {
    /// Take the socket out of hyper's upgrade, with the bytes that arrived
    /// after the request (normally none).
    fn take(upgraded: Upgraded) -> (WsIo, Bytes) {
        let upgraded = match upgraded.downcast::<TokioIo<TcpStream>>() {
            Ok(parts) => return (WsIo::Tcp(parts.io.into_inner()), parts.read_buf),
            Err(upgraded) => upgraded,
        };
        match upgraded.downcast::<TokioIo<TlsStream<TcpStream>>>() {
            Ok(parts) => (WsIo::Tls(Box::new(parts.io.into_inner())), parts.read_buf),
            Err(upgraded) => (WsIo::Upgraded(TokioIo::new(upgraded)), Bytes::new()),
        }
    }
}

macro_rules! delegate {
    ($self:ident, $io:ident => $call:expr) => {
        match $self.get_mut() {
            WsIo::Tcp($io) => {
                let $io = Pin::new($io);
                $call
            }
            WsIo::Tls($io) => {
                let $io = Pin::new($io.as_mut());
                $call
            }
            WsIo::Upgraded($io) => {
                let $io = Pin::new($io);
                $call
            }
            WsIo::Layered($io) => {
                let $io = Pin::new($io.as_mut());
                $call
            }
        }
    };
}

impl AsyncRead for WsIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        delegate!(self, io => io.poll_read(cx, buf))
    }
}

impl AsyncWrite for WsIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        delegate!(self, io => io.poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, io => io.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, io => io.poll_shutdown(cx))
    }
}

/// The request is not a WebSocket upgrade: HTTP 405 for another method,
/// else 400.
#[derive(Debug, Clone, Copy)]
pub(crate) enum NotAnUpgrade {
    /// Not a `GET`.
    Method,
    /// Not HTTP/1.1 or later, or the upgrade headers are missing or wrong.
    Headers,
}

impl IntoResponse for NotAnUpgrade {
    fn into_response(self) -> Response {
        match self {
            NotAnUpgrade::Method => (
                StatusCode::METHOD_NOT_ALLOWED,
                [(header::ALLOW, "GET")],
                "a WebSocket upgrade is a GET",
            )
                .into_response(),
            NotAnUpgrade::Headers => {
                (StatusCode::BAD_REQUEST, "expected a WebSocket upgrade").into_response()
            }
        }
    }
}

/// The HTTP answer to an upgrade the core refused.
pub(crate) fn answer(verdict: UpgradeVerdict) -> Response {
    let UpgradeVerdict::Refuse {
        status,
        retry_after_secs,
        reason,
    } = verdict
    else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    let mut response = (status, reason).into_response();
    if let Some(secs) = retry_after_secs {
        if let Ok(value) = HeaderValue::from_str(&secs.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    response
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

fn accept_key(key: &str) -> String {
    let mut sha = sha1_smol::Sha1::new();
    sha.update(key.as_bytes());
    sha.update(WS_GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(sha.digest().bytes())
}

pub(crate) fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    value.strip_prefix("Bearer ").map(str::to_owned)
}

#[cfg(test)]
mod tests {
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
