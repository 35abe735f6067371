//! A minimal load client: one TCP socket (bound to a chosen loopback source
//! address), one tokio-websockets stream, frames told apart by their
//! `"type"` field without a full JSON decode.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_websockets::{ClientBuilder, Message, WebSocketStream};

use crate::clients::target::Target;
use crate::LoadError;

/// An open Belay session.
pub type Session = WebSocketStream<TcpStream>;

/// The `connect` frame the load clients send.
pub const CONNECT: &str = r#"{"type":"connect","protocol":1}"#;
/// The `pong` frame answering a server `ping`.
pub const PONG: &str = r#"{"type":"pong"}"#;

/// The value of the first `"type":"…"` field of a frame. Both servers
/// serialise the type first, so this is the message kind.
pub fn message_type(text: &str) -> Option<&str> {
    let start = text.find("\"type\":\"")? + 8;
    let rest = &text[start..];
    Some(&rest[..rest.find('"')?])
}

/// The unsigned integer after the first `"key":` in `text`.
pub fn field_u64(text: &str, key: &str) -> Option<u64> {
    let pattern = format!("\"{key}\":");
    let start = text.find(&pattern)? + pattern.len();
    let digits: &str = &text[start..];
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse().ok()
}

/// Microseconds since the Unix epoch (comparable across processes on one host).
pub fn wall_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// Connect a TCP socket to `addr`, from `(source, 0)` if a source is given.
pub async fn dial(addr: SocketAddr, source: Option<IpAddr>) -> Result<TcpStream, LoadError> {
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    if let Some(ip) = source {
        socket.bind(SocketAddr::new(ip, 0))?;
    }
    let stream = socket.connect(addr).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// Upgrade, send `connect` and wait for `welcome` (answering pings), all
/// within `bound`.
pub async fn open(
    target: &Target,
    source: Option<IpAddr>,
    bound: Duration,
) -> Result<Session, LoadError> {
    let work = async {
        let stream = dial(target.addr, source).await?;
        let (mut ws, _) = ClientBuilder::from_uri(target.uri.clone())
            .connect_on(stream)
            .await?;
        ws.send(Message::text(CONNECT)).await?;
        loop {
            let text = next_text(&mut ws).await?;
            match message_type(&text) {
                Some("welcome") => return Ok(ws),
                Some("ping") => ws.send(Message::text(PONG)).await?,
                _ => return Err(LoadError::Protocol(format!("expected welcome, got {text}"))),
            }
        }
    };
    tokio::time::timeout(bound, work)
        .await
        .map_err(|_| LoadError::Timeout("opening a session"))?
}

/// The next text or binary message (skipping WebSocket-level pings and
/// pongs, which the codec answers); an error when the connection closes.
pub async fn next_data(ws: &mut Session) -> Result<Message, LoadError> {
    loop {
        let message = ws
            .next()
            .await
            .ok_or_else(|| LoadError::Protocol("connection closed".into()))??;
        if let Some((code, reason)) = message.as_close() {
            return Err(LoadError::Protocol(format!(
                "closed by the server: {} {reason}",
                u16::from(code)
            )));
        }
        if message.is_text() || message.is_binary() {
            return Ok(message);
        }
    }
}

/// The next text frame (binary frames, which a JSON session never gets,
/// are passed over); an error when the connection closes.
pub async fn next_text(ws: &mut Session) -> Result<String, LoadError> {
    loop {
        if let Some(text) = next_data(ws).await?.as_text() {
            return Ok(text.to_owned());
        }
    }
}

/// The next text frame that is not a Belay `ping`; pings are answered.
pub async fn next_non_ping(ws: &mut Session) -> Result<String, LoadError> {
    loop {
        let text = next_text(ws).await?;
        if message_type(&text) == Some("ping") {
            ws.send(Message::text(PONG)).await?;
        } else {
            return Ok(text);
        }
    }
}

/// Round-robin over the source addresses (`None` when there are none).
pub fn source_for(sources: &[IpAddr], index: usize) -> Option<IpAddr> {
    (!sources.is_empty()).then(|| sources[index % sources.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_classified_by_type() {
        assert_eq!(message_type(r#"{"type":"ping"}"#), Some("ping"));
        assert_eq!(
            message_type(r#"{"type":"welcome","session":"s1","protocol":1}"#),
            Some("welcome")
        );
        assert_eq!(message_type("{}"), None);
        assert_eq!(message_type(r#"{"type":"trunc"#), None);
    }

    #[test]
    fn numeric_fields_are_found() {
        let frame = r#"{"type":"publication","channel":"bench","epoch":"e","offset":7,"data":{"n":3,"t":1700000000123456}}"#;
        assert_eq!(field_u64(frame, "t"), Some(1_700_000_000_123_456));
        assert_eq!(field_u64(frame, "offset"), Some(7));
        assert_eq!(field_u64(frame, "missing"), None);
        assert_eq!(field_u64(r#"{"t":"x"}"#, "t"), None);
    }

    #[test]
    fn sources_rotate() {
        let ips: Vec<IpAddr> = vec![
            "127.0.0.1".parse().expect("ip"),
            "127.0.0.2".parse().expect("ip"),
        ];
        assert_eq!(source_for(&ips, 3), Some(ips[1]));
        assert_eq!(source_for(&[], 3), None);
    }
}
