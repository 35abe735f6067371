//! One transport: dial (TCP, TLS for `wss://`, the WebSocket upgrade), then
//! pump frames both ways until the driver closes it or the peer goes away.
//!
//! A transport task decides nothing: it reports facts (opened, failed,
//! closed, a frame) tagged with its [`TransportId`] and the core drops
//! the ones from a transport it no longer owns.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use belay_proto::message::{encode_client, encode_client_binary, ClientMessage, Codec};
use belay_proto::{CloseCode, CloseInfo, Failure, TransportId};
use futures_util::{SinkExt, StreamExt};
use http::Uri;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_websockets::{Message, WebSocketStream};

use crate::upgrade::{self, Prefixed};

/// How long a single write may stall before the transport is reported failed.
const WRITE_STALL: Duration = Duration::from_secs(10);
/// How long closing may take (sending our close frame, then reading the
/// peer's answer) before the socket is simply dropped.
const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// Where to connect, parsed once.
#[derive(Debug)]
pub(crate) struct Target {
    uri: Uri,
    pub(crate) host: String,
    pub(crate) port: u16,
    /// `Some` for `wss://`.
    tls: Option<Arc<rustls::ClientConfig>>,
    /// The codec offered first in the upgrade (JSON: none is offered).
    pub(crate) codec: Codec,
    /// The local address connections are made from (`None`: the system's choice).
    local: Option<IpAddr>,
}

impl Target {
    /// Parse `url`; `tls` is used for `wss://` only.
    pub(crate) fn parse(url: &str, tls: Arc<rustls::ClientConfig>) -> Result<Target, Failure> {
        let invalid = |detail: String| Failure::InvalidConfig { detail };
        let uri: Uri = url
            .parse()
            .map_err(|e| invalid(format!("invalid URL {url:?}: {e}")))?;
        let secure = match uri.scheme_str() {
            Some("ws") => false,
            Some("wss") => true,
            other => {
                return Err(invalid(format!(
                    "unsupported scheme {other:?} in {url:?} (use ws:// or wss://)"
                )))
            }
        };
        let host = uri
            .host()
            .ok_or_else(|| invalid(format!("no host in {url:?}")))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(if secure { 443 } else { 80 });
        Ok(Target {
            uri,
            host,
            port,
            tls: secure.then_some(tls),
            codec: Codec::Json,
            local: None,
        })
    }

    /// Connect from `local` (port chosen by the system).
    pub(crate) fn with_local_address(mut self, local: Option<IpAddr>) -> Target {
        self.local = local;
        self
    }

    /// Offer `codec` first in every upgrade (spec/PROTOCOL.md §1.8).
    pub(crate) fn with_codec(mut self, codec: Codec) -> Target {
        self.codec = codec;
        self
    }

    /// The fallback's endpoints' common path (spec §1.7): the WebSocket
    /// path with its last segment `ws` replaced by `sse` (`/ws` → `/sse`,
    /// `/belay/ws` → `/belay/sse`), or `/sse` appended to any other path.
    pub(crate) fn sse_path(&self) -> String {
        let path = self.uri.path().trim_end_matches('/');
        match path.strip_suffix("/ws") {
            Some(base) => format!("{base}/sse"),
            None => format!("{path}/sse"),
        }
    }

    /// The control-plane heartbeat of resident hosts (docs/HOSTS.md): the
    /// WebSocket path with its last segment `ws` replaced by
    /// `hosts/heartbeat`, or that appended to any other path.
    pub(crate) fn heartbeat_path(&self) -> String {
        let path = self.uri.path().trim_end_matches('/');
        let base = path.strip_suffix("/ws").unwrap_or(path);
        format!("{base}/hosts/heartbeat")
    }

    /// The `Host` header's value.
    pub(crate) fn authority(&self) -> String {
        match self.uri.authority() {
            Some(authority) => authority.as_str().to_owned(),
            None => format!("{}:{}", self.host, self.port),
        }
    }
}

/// A fact about one transport, for the driver.
#[derive(Debug)]
pub(crate) enum Fact {
    /// Open, speaking this codec.
    Opened(Codec),
    Failed(Failure),
    Closed(CloseInfo),
    /// A text frame: JSON.
    Frame(String),
    /// A binary frame: the binary codec.
    Binary(Vec<u8>),
}

/// What the driver asks of a transport.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// A message, encoded by the transport in its codec.
    Message(ClientMessage),
    Close(CloseCode, String),
}

/// Anything a WebSocket can run over (plain TCP or TLS).
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

type Socket = WebSocketStream<Prefixed<Box<dyn Io>>>;

/// The transport task: dial, report, pump. Ends when the driver closes it
/// (or drops its sender), or when the connection ends.
pub(crate) async fn run(
    id: TransportId,
    target: Arc<Target>,
    mut outgoing: mpsc::UnboundedReceiver<Outgoing>,
    facts: mpsc::UnboundedSender<(TransportId, Fact)>,
) {
    let report = |fact: Fact| {
        // The driver may be gone (shutting down): nobody to tell.
        let _ = facts.send((id, fact));
    };
    let (mut ws, codec) = tokio::select! {
        dialed = dial(&target) => match dialed {
            Ok(dialed) => dialed,
            Err(failure) => return report(Fact::Failed(failure)),
        },
        // A close (or the driver dropping us) cancels the attempt.
        _ = wait_for_close(&mut outgoing) => return,
    };
    report(Fact::Opened(codec));
    loop {
        tokio::select! {
            command = outgoing.recv() => match command {
                Some(Outgoing::Message(message)) => {
                    let frame = match codec {
                        Codec::Binary => Message::binary(encode_client_binary(&message)),
                        _ => Message::text(encode_client(&message)),
                    };
                    match tokio::time::timeout(WRITE_STALL, ws.send(frame)).await {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => return report(Fact::Failed(ws_failure(&e))),
                        Err(_) => return report(Fact::Failed(Failure::network("write stalled"))),
                    }
                }
                Some(Outgoing::Close(code, reason)) => return close(ws, code, &reason).await,
                None => return close(ws, CloseCode::GOING_AWAY, "client gone").await,
            },
            frame = ws.next() => match frame {
                Some(Ok(message)) => {
                    if let Some(text) = message.as_text() {
                        report(Fact::Frame(text.to_owned()));
                    } else if message.is_binary() {
                        report(Fact::Binary(message.as_payload().to_vec()));
                    } else if let Some((code, reason)) = message.as_close() {
                        report(Fact::Closed(CloseInfo::new(CloseCode(u16::from(code)), reason)));
                        // Let the codec send its answer to the close, briefly.
                        let _ = tokio::time::timeout(CLOSE_GRACE, drain(&mut ws)).await;
                        return;
                    }
                    // Pings are answered by the codec.
                }
                Some(Err(tokio_websockets::Error::PayloadTooLong { len, max_len })) => {
                    // Refused from the frame header: nothing of it was buffered.
                    report(Fact::Failed(Failure::network(format!(
                        "a frame of {len} bytes from the server is over the {max_len}-byte limit: closed 1009"
                    ))));
                    return close_too_big(ws).await;
                }
                Some(Err(e)) => return report(Fact::Failed(ws_failure(&e))),
                None => return report(Fact::Closed(CloseInfo::abnormal())),
            },
        }
    }
}

/// Resolve once the driver asks for a close (or drops the sender); text
/// before the open cannot happen (the core transmits only once opened).
pub(crate) async fn wait_for_close(outgoing: &mut mpsc::UnboundedReceiver<Outgoing>) {
    while let Some(command) = outgoing.recv().await {
        if matches!(command, Outgoing::Close(..)) {
            return;
        }
    }
}

/// Send our close frame and give the peer a moment to answer; a frozen peer
/// gets no more than [`CLOSE_GRACE`] for each step.
async fn close(mut ws: Socket, code: CloseCode, reason: &str) {
    let frame = tokio_websockets::CloseCode::try_from(code.0)
        .map(|code| Message::close(Some(code), reason))
        .unwrap_or_else(|_| Message::close(None, ""));
    if let Ok(Ok(())) = tokio::time::timeout(CLOSE_GRACE, ws.send(frame)).await {
        let _ = tokio::time::timeout(CLOSE_GRACE, drain(&mut ws)).await;
    }
}

/// Close after a frame over the limit (spec §1.4: 1009). A frame header
/// over the limit has already queued the codec's own 1009 (the stream counts
/// as closed, so our frame is refused and the flush sends the codec's); a
/// fragmented message over the limit leaves the stream open, so ours goes.
/// The rest of the frame is never read: the socket is dropped after the
/// close is flushed.
async fn close_too_big(mut ws: Socket) {
    let frame = Message::close(
        Some(tokio_websockets::CloseCode::MESSAGE_TOO_BIG),
        "frame too large",
    );
    let _ = tokio::time::timeout(CLOSE_GRACE, async {
        let _ = ws.send(frame).await;
        let _ = ws.flush().await;
    })
    .await;
}

async fn drain(ws: &mut Socket) {
    while let Some(Ok(_)) = ws.next().await {}
}

async fn dial(target: &Target) -> Result<(Socket, Codec), Failure> {
    let io = connect(target).await?;
    upgrade::upgrade(io, &target.uri, target.codec).await
}

/// Open a WebSocket and close it at once, with no session on it: whether
/// an upgrade gets through now (the fallback's probe).
pub(crate) async fn probe(target: Arc<Target>) -> bool {
    match dial(&target).await {
        Ok((ws, _)) => {
            close(ws, CloseCode::NORMAL, "probe").await;
            true
        }
        Err(_) => false,
    }
}

/// The TCP connection to the target, and TLS over it for `wss://`.
pub(crate) async fn connect(target: &Target) -> Result<Box<dyn Io>, Failure> {
    let addrs = tokio::net::lookup_host((target.host.as_str(), target.port))
        .await
        .map_err(|e| Failure::network(format!("cannot resolve {}: {e}", target.host)))?;
    let mut last = None;
    let mut tcp = None;
    for addr in addrs {
        match connect_from(target.local, addr).await {
            Ok(stream) => {
                tcp = Some(stream);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let tcp = match (tcp, last) {
        (Some(tcp), _) => tcp,
        (None, Some(e)) => return Err(io_failure(&e)),
        (None, None) => {
            return Err(Failure::network(format!(
                "{} resolved to no address",
                target.host
            )))
        }
    };
    // Frames are small and latency matters more than packet count.
    let _ = tcp.set_nodelay(true);
    let io: Box<dyn Io> = match &target.tls {
        None => Box::new(tcp),
        Some(config) => {
            let name =
                rustls::pki_types::ServerName::try_from(target.host.clone()).map_err(|e| {
                    Failure::InvalidConfig {
                        detail: format!("invalid TLS server name {:?}: {e}", target.host),
                    }
                })?;
            let connector = tokio_rustls::TlsConnector::from(Arc::clone(config));
            let tls = connector
                .connect(name, tcp)
                .await
                .map_err(|e| Failure::network(format!("TLS handshake failed: {e}")))?;
            Box::new(tls)
        }
    };
    Ok(io)
}

/// A TCP connection to `addr`, from `local` if set.
async fn connect_from(local: Option<IpAddr>, addr: SocketAddr) -> io::Result<TcpStream> {
    let Some(local) = local else {
        return TcpStream::connect(addr).await;
    };
    let socket = match local {
        IpAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        IpAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.bind(SocketAddr::new(local, 0))?;
    socket.connect(addr).await
}

/// What a codec or upgrade error means for the core.
fn ws_failure(error: &tokio_websockets::Error) -> Failure {
    match error {
        tokio_websockets::Error::Io(e) => io_failure(e),
        other => Failure::network(other.to_string()),
    }
}

/// OS error numbers meaning "this device has no route": the attempt never
/// reached the server (ENETDOWN, ENETUNREACH, EHOSTUNREACH).
#[cfg(target_os = "linux")]
const NO_ROUTE: &[i32] = &[100, 101, 113];
#[cfg(target_os = "macos")]
const NO_ROUTE: &[i32] = &[50, 51, 65];
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
const NO_ROUTE: &[i32] = &[];

/// Refused, reset, timed out … reached (or may have reached) the server:
/// [`Failure::Network`]. No route from this device: [`Failure::Unreachable`].
pub(crate) fn io_failure(error: &io::Error) -> Failure {
    let no_route = error
        .raw_os_error()
        .is_some_and(|code| NO_ROUTE.contains(&code));
    if no_route {
        Failure::unreachable(error.to_string())
    } else {
        Failure::network(error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn no_route_errors_are_unreachable_and_refusals_are_network() {
        let unreachable = io::Error::from_raw_os_error(101);
        assert!(matches!(
            io_failure(&unreachable),
            Failure::Unreachable { .. }
        ));
        let refused = io::Error::from_raw_os_error(111);
        assert!(matches!(io_failure(&refused), Failure::Network { .. }));
    }

    #[test]
    fn only_ws_and_wss_urls_are_accepted() {
        let tls = crate::tls::TlsSettings::default().client_config().unwrap();
        assert!(Target::parse("ws://127.0.0.1:1/ws", Arc::clone(&tls)).is_ok());
        assert!(Target::parse("wss://example.com/ws", Arc::clone(&tls)).is_ok());
        assert!(matches!(
            Target::parse("http://example.com/", tls),
            Err(Failure::InvalidConfig { .. })
        ));
    }
}
