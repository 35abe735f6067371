//! The errors the client's handles return.

/// How a request ended when it did not produce a result.
///
/// `Timeout` and `ConnectionClosed` mean the fate of the request is unknown
/// (it may have run); retry with an idempotency key
/// ([`RequestOptions::idempotency_key`](crate::RequestOptions)) to be safe.
/// `NotReady`, `TooLarge` and `Closed` mean it was never sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The protocol level was down: the request was never sent.
    #[error("not ready: the request was not sent")]
    NotReady,
    /// No answer before the deadline: the request may or may not have run.
    #[error("no answer before the deadline")]
    Timeout,
    /// The connection was lost before an answer: the request may or may not have run.
    #[error("the connection closed before an answer")]
    ConnectionClosed,
    /// The server answered with an error.
    #[error("server error {code}: {message}")]
    Server {
        /// The server's error code (spec/PROTOCOL.md §4.5); an unknown one
        /// is [`ErrorCode::Other`](crate::ErrorCode::Other).
        code: crate::ErrorCode,
        /// The server's message.
        message: String,
        /// The earliest sensible retry, in ms, when the server said
        /// (`rate_limited`, `unavailable`, `host_asleep`).
        retry_after_ms: Option<u64>,
    },
    /// The request's frame would be longer than the protocol's frame limit
    /// ([`MAX_FRAME_LEN`](belay_proto::message::MAX_FRAME_LEN), 1 MiB): it
    /// was refused at once and never sent (the server would close the
    /// connection for it). The connection is unaffected.
    #[error("the request frame is {len} bytes, over the {max}-byte limit: not sent")]
    TooLarge {
        /// The encoded frame's length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The client was closed (or every handle dropped).
    #[error("the client is closed")]
    Closed,
}

/// Why [`ClientBuilder::connect`](crate::ClientBuilder::connect) made no client:
/// its settings can never connect, so nothing was started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The URL is not a `ws://` or `wss://` URL with a host.
    #[error("unusable URL: {0}")]
    Url(String),
    /// The TLS settings could not be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// Why a subscription could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubscribeError {
    /// This client already has a subscription to the channel.
    #[error("already subscribed to {0:?}")]
    AlreadySubscribed(String),
    /// The client was closed (or every handle dropped).
    #[error("the client is closed")]
    Closed,
}

/// A command sent to a client that is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the client is closed")]
pub struct Closed;

/// Why the TLS settings could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The PEM text held no certificate, or could not be parsed.
    #[error("no usable certificate in the PEM input: {0}")]
    Pem(String),
    /// rustls refused the certificate as a trust anchor.
    #[error("invalid root certificate: {0}")]
    Rustls(#[from] rustls::Error),
}
