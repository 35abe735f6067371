//! The socket a WebSocket session runs on.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use crate::stream::BoxedStream;

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
    /// What a [`StreamLayer`](crate::stream::StreamLayer) made of one of the above.
    Layered(BoxedStream),
}

impl WsIo {
    /// Take the socket out of hyper's upgrade, with the bytes that arrived
    /// after the request (normally none).
    pub(super) fn take(upgraded: Upgraded) -> (WsIo, Bytes) {
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
