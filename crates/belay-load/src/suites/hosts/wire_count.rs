//! A counting TCP relay between a host and its relay: bytes each way,
//! TCP connections, HTTP messages, and WebSocket frames (parsed from the
//! byte stream after the `101`), so what an idle host costs is measured
//! on the wire, heartbeats included.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What went through.
#[derive(Debug, Default)]
pub struct WireCounts {
    /// TCP connections opened.
    pub connections: AtomicU64,
    /// Bytes host → relay (TCP payload).
    pub bytes_up: AtomicU64,
    /// Bytes relay → host (TCP payload).
    pub bytes_down: AtomicU64,
    /// HTTP requests and responses (the upgrade's too).
    pub http_messages: AtomicU64,
    /// WebSocket frames, both ways.
    pub ws_frames: AtomicU64,
}

/// A snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// TCP connections opened.
    pub connections: u64,
    /// Bytes both ways.
    pub bytes: u64,
    /// HTTP messages plus WebSocket frames.
    pub messages: u64,
    /// Of which WebSocket frames.
    pub ws_frames: u64,
}

impl WireCounts {
    /// The counts now.
    pub fn totals(&self) -> Totals {
        let http = self.http_messages.load(Ordering::Relaxed);
        let ws = self.ws_frames.load(Ordering::Relaxed);
        Totals {
            connections: self.connections.load(Ordering::Relaxed),
            bytes: self.bytes_up.load(Ordering::Relaxed) + self.bytes_down.load(Ordering::Relaxed),
            messages: http + ws,
            ws_frames: ws,
        }
    }
}

impl Totals {
    /// What came since `earlier`.
    pub fn since(self, earlier: Totals) -> Totals {
        Totals {
            connections: self.connections - earlier.connections,
            bytes: self.bytes - earlier.bytes,
            messages: self.messages - earlier.messages,
            ws_frames: self.ws_frames - earlier.ws_frames,
        }
    }
}

/// Listen on a free loopback port and relay every connection to `target`,
/// counting into the returned counters.
pub async fn start(target: SocketAddr) -> std::io::Result<(SocketAddr, Arc<WireCounts>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let counts = Arc::new(WireCounts::default());
    let shared = Arc::clone(&counts);
    tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            let counts = Arc::clone(&shared);
            tokio::spawn(async move {
                if let Ok(outbound) = TcpStream::connect(target).await {
                    counts.connections.fetch_add(1, Ordering::Relaxed);
                    relay(inbound, outbound, counts).await;
                }
            });
        }
    });
    Ok((addr, counts))
}

async fn relay(inbound: TcpStream, outbound: TcpStream, counts: Arc<WireCounts>) {
    let (host_read, host_write) = inbound.into_split();
    let (relay_read, relay_write) = outbound.into_split();
    tokio::join!(
        pump(host_read, relay_write, &counts, &counts.bytes_up),
        pump(relay_read, host_write, &counts, &counts.bytes_down),
    );
}

/// Copy one direction until it ends, counting its bytes into `bytes` and
/// its messages into `counts`.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    counts: &WireCounts,
    bytes: &AtomicU64,
) {
    let mut reader = StreamReader::default();
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0 || to.write_all(&buf[..n]).await.is_err() {
            break;
        }
        bytes.fetch_add(n as u64, Ordering::Relaxed);
        reader.feed(&buf[..n], counts);
    }
    let _ = to.shutdown().await;
}

/// One direction of a connection: HTTP until a message head says
/// `101` or `Upgrade: websocket` (then frames), counted as they pass.
#[derive(Default)]
struct StreamReader {
    websocket: bool,
    /// The HTTP head read so far (bounded: a head is small).
    head: Vec<u8>,
    /// A frame header read so far.
    frame: Vec<u8>,
    /// Payload bytes of the current frame still to skip.
    skip: u64,
}

impl StreamReader {
    fn feed(&mut self, mut bytes: &[u8], counts: &WireCounts) {
        while !bytes.is_empty() {
            if !self.websocket {
                let Some(end) = self.http_head(bytes) else {
                    return;
                };
                counts.http_messages.fetch_add(1, Ordering::Relaxed);
                let head = String::from_utf8_lossy(&self.head).to_ascii_lowercase();
                self.websocket =
                    head.contains("upgrade: websocket") || head.starts_with("http/1.1 101");
                self.head.clear();
                // A heartbeat answer's body follows its head; it is counted
                // in bytes, not parsed.
                if !self.websocket {
                    return;
                }
                bytes = &bytes[end..];
                continue;
            }
            if self.skip > 0 {
                let take = self.skip.min(bytes.len() as u64);
                self.skip -= take;
                bytes = &bytes[take as usize..];
                continue;
            }
            self.frame.push(bytes[0]);
            bytes = &bytes[1..];
            if let Some(payload) = frame_payload_len(&self.frame) {
                counts.ws_frames.fetch_add(1, Ordering::Relaxed);
                self.skip = payload;
                self.frame.clear();
            }
        }
    }

    /// Take bytes into the head until its blank line: where the head ends
    /// in `bytes`, once it has.
    fn http_head(&mut self, bytes: &[u8]) -> Option<usize> {
        for (i, b) in bytes.iter().enumerate() {
            if self.head.len() < 16 * 1024 {
                self.head.push(*b);
            }
            if self.head.ends_with(b"\r\n\r\n") {
                return Some(i + 1);
            }
        }
        None
    }
}

/// A complete frame header's payload length (RFC 6455 §5.2), or `None`
/// while `header` is not complete.
fn frame_payload_len(header: &[u8]) -> Option<u64> {
    let [_, second, rest @ ..] = header else {
        return None;
    };
    let mask = if second & 0x80 != 0 { 4 } else { 0 };
    let (len, ext) = match second & 0x7f {
        126 => (None, 2),
        127 => (None, 8),
        n => (Some(u64::from(n)), 0),
    };
    if rest.len() < ext + mask {
        return None;
    }
    Some(len.unwrap_or_else(|| {
        rest[..ext]
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_counted_across_reads_after_the_upgrade() {
        let counts = WireCounts::default();
        let mut reader = StreamReader::default();
        reader.feed(b"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n", &counts);
        // A masked 5-byte text frame, split, then a 200-byte one.
        reader.feed(&[0x81, 0x85, 1, 2], &counts);
        reader.feed(&[3, 4, b'h', b'e', b'l', b'l', b'o'], &counts);
        let mut long = vec![0x82, 0xfe, 0x00, 200, 1, 2, 3, 4];
        long.extend([0u8; 200]);
        reader.feed(&long, &counts);
        assert_eq!(counts.http_messages.load(Ordering::Relaxed), 1);
        assert_eq!(counts.ws_frames.load(Ordering::Relaxed), 2);
    }
}
