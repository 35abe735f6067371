//! A minimal RFC 6455 server-side WebSocket codec whose buffers are released
//! whenever the connection is idle.
//!
//! Why not a general codec: an idle session must cost a few kilobytes, and a
//! `FramedRead`-style codec keeps an 8 KiB read buffer per connection for its
//! whole life. Here:
//!
//! * reads go through one 16 KiB scratch buffer per worker thread; only the
//!   bytes of a frame that has not fully arrived are kept per connection, and
//!   that buffer is dropped as soon as it is empty;
//! * encoded frames wait in a write buffer that is dropped as soon as it is
//!   flushed;
//! * a fragmented message being reassembled lives in a box that exists only
//!   while the message does.
//!
//! What it checks (a peer that breaks a rule gets the close code in
//! brackets, through [`WsError::close_code`]): client frames are masked, RSV
//! bits are zero (no extension is negotiated), opcodes are known, control
//! frames are final and at most 125 bytes, continuations continue something
//! and data frames do not interrupt a fragmented message [1002]; a message is
//! at most `max_payload` bytes in all its fragments [1009]; text messages and
//! close reasons are UTF-8, checked fragment by fragment so an invalid
//! message fails as soon as a fragment shows it [1007]; close codes are
//! valid to receive [1002]. Pings are answered with a pong carrying the same
//! payload; a close is answered with a close echoing its code, after which
//! nothing more is read or sent. Nothing a peer sends can make it panic.
//!
//! Reading stops while more than [`HIGH_WATER`] bytes wait to be written, so
//! a peer that sends but does not read cannot grow the write buffer without
//! bound (the server's outbound queue bound takes over from there).
//!
//! The files: the pure rules, tested on byte slices, in `frame` (one
//! client frame off the received bytes), `assemble` (frames to messages,
//! UTF-8, close payloads), `encode` (server frames, close payloads, frame
//! boundaries in the write buffer) and `error`; the I/O in `socket` (the
//! [`WebSocket`] over a socket), `scratch` (the per-thread read buffer)
//! and `closing` (the lingering close).

mod assemble;
mod closing;
mod encode;
mod error;
mod frame;
mod scratch;
mod socket;

pub(crate) use closing::LINGER_BYTES;
pub(crate) use error::WsError;
pub(crate) use socket::WebSocket;

use bytes::Bytes;

/// Reading pauses while this many bytes wait to be written.
pub(crate) const HIGH_WATER: usize = 64 * 1024;

/// A message from the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Message {
    /// A complete text message (valid UTF-8).
    Text(Bytes),
    /// A complete binary message.
    Binary(Bytes),
    /// A ping, with its payload (not answered yet: see
    /// [`WebSocket::queue_pong`]).
    Ping(Bytes),
    /// A pong.
    Pong,
    /// The peer closed, with this code if it sent one (the close is already
    /// answered; nothing more will be read).
    Close(Option<u16>),
}

/// What [`WebSocket::poll_event`] saw.
#[derive(Debug)]
pub(crate) enum Event {
    /// A message from the peer.
    Message(Message),
    /// The codec gave up on the peer.
    Error(WsError),
    /// The peer is gone (end of stream, or after its close).
    End,
    /// The write buffer, full (at least [`HIGH_WATER`]) when this call
    /// began, has drained below it: more may be queued.
    Room,
}

#[cfg(test)]
mod masked;
#[cfg(test)]
mod tests;
