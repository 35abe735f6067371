//! The WebSocket upgrade (RFC 6455 §4.1), done here rather than by
//! tokio-websockets: its client keeps only the status of a refused upgrade,
//! and the core must also hear a refusal's `Retry-After` (spec §2.7: 429 and
//! 503 carry one; §6.2: it is advice). After a `101` the stream is handed to tokio-websockets.
//!
//! ```text
//!   GET /ws HTTP/1.1 ──────────────▶
//!   ◀── HTTP/1.1 101 + Sec-WebSocket-Accept   → WebSocketStream (frame limit set)
//!   ◀── HTTP/1.1 503 + Retry-After: 5         → Failure::Rejected { 503, Some(5000) }
//! ```

use std::hash::{BuildHasher, RandomState};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use base64::Engine;
use belay_proto::message::{Codec, MAX_FRAME_LEN};
use belay_proto::Failure;
use http::Uri;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio_websockets::{ClientBuilder, Limits, WebSocketStream};

use crate::transport::io_failure;

/// The longest response head read before giving up: a real server's is a
/// few hundred bytes, and a hostile one must not make us buffer more.
const MAX_RESPONSE_HEAD: usize = 16 * 1024;
/// The most response headers parsed.
const MAX_HEADERS: usize = 64;
/// RFC 6455 §1.3: appended to the key before hashing.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// `Retry-After` values above this are read as this: the core clamps every
/// server hint to an hour anyway (`MAX_HINT_DELAY`), and the product with 1000 must not
/// overflow.
const MAX_RETRY_AFTER_SECS: u64 = belay_proto::backoff::MAX_HINT_DELAY.as_secs();

/// Upgrade `stream` to a WebSocket for `uri`. A non-101 answer is
/// [`Failure::Rejected`] with its `Retry-After`; anything else that goes
/// wrong is a network failure.
pub(crate) async fn upgrade<S>(
    mut stream: S,
    uri: &Uri,
    codec: Codec,
) -> Result<(WebSocketStream<Prefixed<S>>, Codec), Failure>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let key = new_key();
    stream
        .write_all(&request(uri, &key, codec))
        .await
        .map_err(|e| io_failure(&e))?;
    stream.flush().await.map_err(|e| io_failure(&e))?;

    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let (status, accept, answered, consumed) = loop {
        let n = stream.read(&mut chunk).await.map_err(|e| io_failure(&e))?;
        if n == 0 {
            return Err(Failure::network(
                "the server closed the connection during the upgrade",
            ));
        }
        head.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        match response.parse(&head) {
            Ok(httparse::Status::Complete(consumed)) => {
                let status = response.code.unwrap_or(0);
                if status != 101 {
                    return Err(Failure::Rejected {
                        status,
                        retry_after_ms: header(response.headers, "retry-after")
                            .and_then(retry_after_ms),
                    });
                }
                let accept = header(response.headers, "sec-websocket-accept").map(<[u8]>::to_vec);
                let answered = header(response.headers, "sec-websocket-protocol")
                    .map(|v| String::from_utf8_lossy(v).into_owned());
                break (status, accept, answered, consumed);
            }
            Ok(httparse::Status::Partial) if head.len() < MAX_RESPONSE_HEAD => {}
            Ok(httparse::Status::Partial) => {
                return Err(Failure::network("the upgrade response head is too long"))
            }
            Err(e) => return Err(Failure::network(format!("invalid upgrade response: {e}"))),
        }
    };
    debug_assert_eq!(status, 101);
    // Like tokio-websockets' own client, the accept is what proves the
    // server speaks WebSocket.
    if accept.as_deref() != Some(expected_accept(&key).as_bytes()) {
        return Err(Failure::network(
            "the upgrade response has a wrong or missing Sec-WebSocket-Accept",
        ));
    }
    let codec = negotiated(codec, answered.as_deref())?;
    // Frames the server sent right behind the 101 are read first.
    let leftover = head.split_off(consumed);
    let stream = Prefixed {
        leftover,
        read: 0,
        inner: stream,
    };
    // The frame limit is enforced as each frame header is read, before any
    // payload is buffered: a larger frame ends the stream with
    // `Error::PayloadTooLong` and a queued 1009 close.
    let limits = Limits::default().max_payload_len(Some(MAX_FRAME_LEN));
    Ok((ClientBuilder::new().limits(limits).take_over(stream), codec))
}

/// The codec a `101` naming `answered` leaves the connection in, after an
/// upgrade that offered `offered` first (JSON: offered nothing). A name
/// that was not offered fails the upgrade (RFC 6455 §4.1).
fn negotiated(offered: Codec, answered: Option<&str>) -> Result<Codec, Failure> {
    let codec = Codec::from_subprotocol(answered)
        .filter(|codec| offered != Codec::Json || *codec == Codec::Json);
    codec.ok_or_else(|| {
        Failure::network(format!(
            "the server chose the subprotocol {:?}, which was not offered",
            answered.unwrap_or_default()
        ))
    })
}

/// The upgrade request (RFC 6455 §4.1), the same tokio-websockets sends,
/// offering `codec`'s subprotocol first unless it is JSON (then nothing is
/// offered, and the server speaks JSON).
fn request(uri: &Uri, key: &str, codec: Codec) -> Vec<u8> {
    let path = uri
        .path_and_query()
        .map(|p| p.as_str())
        .filter(|p| !p.is_empty())
        .unwrap_or("/");
    // `Uri::host` keeps an IPv6 address's brackets, as `Host` wants them.
    let host = uri.host().unwrap_or_default();
    let port = uri.port_u16().map(|p| format!(":{p}")).unwrap_or_default();
    let protocols = match codec {
        Codec::Json => String::new(),
        codec => format!("Sec-WebSocket-Protocol: {}\r\n", codec.offer()),
    };
    format!(
        "GET {path} HTTP/1.1\r\nHost: {host}{port}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\
         {protocols}\r\n"
    )
    .into_bytes()
}

/// A fresh `Sec-WebSocket-Key`: 16 bytes, base64. It is a nonce against
/// caching proxies, not a secret, so the std hasher's random keys suffice.
fn new_key() -> String {
    let state = RandomState::new();
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&state.hash_one(1u8).to_le_bytes());
    bytes[8..].copy_from_slice(&state.hash_one(2u8).to_le_bytes());
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn expected_accept(key: &str) -> String {
    let mut sha = sha1_smol::Sha1::new();
    sha.update(key.as_bytes());
    sha.update(ACCEPT_GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(sha.digest().bytes())
}

/// The first header named `name` (ASCII case-insensitive).
fn header<'h>(headers: &[httparse::Header<'h>], name: &str) -> Option<&'h [u8]> {
    headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .map(|h| h.value)
}

/// `Retry-After: <delta-seconds>` in ms (RFC 9110 §10.2.3). The HTTP-date
/// form, an empty value and anything that is not all digits read as `None`;
/// huge values are capped at [`MAX_RETRY_AFTER_SECS`].
pub(crate) fn retry_after_ms(value: &[u8]) -> Option<u64> {
    let digits = value.trim_ascii();
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let secs = digits.iter().fold(0u64, |secs, digit| {
        secs.saturating_mul(10)
            .saturating_add(u64::from(digit - b'0'))
    });
    Some(secs.min(MAX_RETRY_AFTER_SECS) * 1000)
}

/// A stream that yields `leftover` (bytes read past the response head)
/// before reading `inner` again.
pub(crate) struct Prefixed<S> {
    leftover: Vec<u8>,
    read: usize,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.read < this.leftover.len() {
            let rest = &this.leftover[this.read..];
            let n = rest.len().min(buf.remaining());
            buf.put_slice(&rest[..n]);
            this.read += n;
            if this.read == this.leftover.len() {
                this.leftover = Vec::new();
                this.read = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_101s_subprotocol_sets_the_codec_and_one_not_offered_fails_the_upgrade() {
        assert_eq!(
            negotiated(Codec::Binary, Some("belay.bin.1")),
            Ok(Codec::Binary)
        );
        assert_eq!(
            negotiated(Codec::Binary, Some("belay.json.1")),
            Ok(Codec::Json)
        );
        // A server from before negotiation answers without the header.
        assert_eq!(negotiated(Codec::Binary, None), Ok(Codec::Json));
        assert_eq!(negotiated(Codec::Json, None), Ok(Codec::Json));
        for (offered, answered) in [(Codec::Binary, "mqtt"), (Codec::Json, "belay.bin.1")] {
            let failed = negotiated(offered, Some(answered));
            assert!(
                matches!(&failed, Err(Failure::Network { detail, .. }) if detail.contains("not offered")),
                "{failed:?}"
            );
        }
    }

    #[test]
    fn the_request_offers_binary_first_and_json_offers_nothing() {
        let uri: Uri = "ws://127.0.0.1:1/ws".parse().unwrap();
        let binary = String::from_utf8(request(&uri, "k", Codec::Binary)).unwrap();
        assert!(binary.contains("\r\nSec-WebSocket-Protocol: belay.bin.1, belay.json.1\r\n\r\n"));
        let json = String::from_utf8(request(&uri, "k", Codec::Json)).unwrap();
        assert!(!json.contains("Sec-WebSocket-Protocol") && json.ends_with("13\r\n\r\n"));
    }

    #[test]
    fn retry_after_reads_delta_seconds_only() {
        assert_eq!(retry_after_ms(b"5"), Some(5_000));
        assert_eq!(retry_after_ms(b" 2 "), Some(2_000));
        assert_eq!(retry_after_ms(b"0"), Some(0));
        assert_eq!(retry_after_ms(b"Wed, 21 Oct 2015 07:28:00 GMT"), None);
        for garbage in [&b""[..], b"soon", b"-1", b"1.5", b"+3", b"3s", b"\xff"] {
            assert_eq!(retry_after_ms(garbage), None, "{garbage:?}");
        }
    }

    #[test]
    fn absurd_retry_after_values_are_capped_without_overflow() {
        let cap = MAX_RETRY_AFTER_SECS * 1000;
        assert_eq!(retry_after_ms(b"86400"), Some(cap));
        assert_eq!(retry_after_ms(b"18446744073709551616"), Some(cap));
        assert_eq!(retry_after_ms(&[b'9'; 400]), Some(cap));
    }

    #[test]
    fn the_accept_is_rfc_6455s_example() {
        // RFC 6455 §1.3.
        assert_eq!(
            expected_accept("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
        assert_eq!(new_key().len(), 24);
    }

    #[test]
    fn the_request_names_path_query_and_host() {
        let uri: Uri = "ws://[::1]:8080/ws?x=1".parse().unwrap();
        let text = String::from_utf8(request(&uri, "k", Codec::Json)).unwrap();
        assert!(
            text.starts_with("GET /ws?x=1 HTTP/1.1\r\nHost: [::1]:8080\r\n"),
            "{text}"
        );
        let uri: Uri = "ws://example.com".parse().unwrap();
        let text = String::from_utf8(request(&uri, "k", Codec::Json)).unwrap();
        assert!(
            text.starts_with("GET / HTTP/1.1\r\nHost: example.com\r\n"),
            "{text}"
        );
    }
}
