//! The byte stream under a WebSocket session, and the one place a user may
//! wrap it.
//!
//! A [`StreamLayer`] installed with
//! [`ServerBuilder::stream_layer`](crate::ServerBuilder::stream_layer) sees
//! every session's stream once its upgrade is answered (HTTP routes are not
//! wrapped) and returns the stream the session runs on. A session over the
//! SSE fallback has no byte stream of its own: the layer is handed one that
//! carries nothing, flushed before every read and write of the session, so
//! a layer that holds that flush pending or fails it holds or ends the
//! session as it would a WebSocket one (it cannot see the session's bytes). Everything the
//! session reads and writes, its close frame and the end of the connection
//! (shutdown and drop) pass through the wrapper, so a wrapper can count or
//! shape traffic, or stand in for a network fault: belay-demo's fault bench
//! freezes and cuts sessions this way.
//!
//! ```
//! use belay_server::stream::{BoxedStream, StreamLayer};
//! use std::net::SocketAddr;
//!
//! /// Logs who connected, and leaves the stream as it is.
//! struct LogPeers;
//!
//! impl StreamLayer for LogPeers {
//!     fn wrap(&self, stream: BoxedStream, peer: SocketAddr) -> BoxedStream {
//!         eprintln!("session from {peer}");
//!         stream
//!     }
//! }
//!
//! let server = belay_server::Server::builder().stream_layer(LogPeers).build();
//! # drop(server);
//! ```

use std::net::SocketAddr;

use tokio::io::{AsyncRead, AsyncWrite};

/// What a session's stream is: bytes both ways, movable between tasks.
pub trait ByteStream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> ByteStream for T {}

/// A session's stream, boxed so that layers compose.
pub type BoxedStream = Box<dyn ByteStream>;

/// Wraps each WebSocket session's byte stream, and holds each SSE
/// session's I/O (see the module docs).
pub trait StreamLayer: Send + Sync + 'static {
    /// The stream the session from `peer` runs on, given the upgraded one.
    /// Called once per session, on the upgrade's task; keep it cheap.
    fn wrap(&self, stream: BoxedStream, peer: SocketAddr) -> BoxedStream;
}
