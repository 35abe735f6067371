//! A socket.io v4 client over engine.io v4, WebSocket transport only: the
//! load clients' way into a socket.io server.
//!
//! Text packets only (no binary attachments), main namespace only:
//!
//! ```text
//!   server                           client
//!   0{"sid":…,"pingInterval":…}  ─▶           engine.io open
//!                                ◀─  40       socket.io connect to "/"
//!   40{"sid":…}                  ─▶           connected
//!   2                            ─▶           engine.io ping (every pingInterval)
//!                                ◀─  3        pong
//!                                ◀─  42N["echo",N]     event with ack id N
//!   43N[N]                       ─▶           its acknowledgement
//!   42["publication",{…}]        ─▶           event without ack
//! ```

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use futures_util::SinkExt;
use tokio_websockets::{ClientBuilder, Message};

use crate::clients::target::Target;
use crate::clients::websocket::{self, Session};
use crate::LoadError;

/// The engine.io endpoint on a socket.io server, WebSocket from the start.
pub const PATH: &str = "/socket.io/?EIO=4&transport=websocket";

/// The socket.io endpoint of a server listening at `addr` (loopback only).
pub fn target(addr: SocketAddr) -> Result<Target, LoadError> {
    Target::parse(&format!("ws://{addr}{PATH}"))
}

/// One text packet, told apart by its first characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Packet<'a> {
    /// engine.io `open` (`0` + JSON handshake).
    Open(&'a str),
    /// engine.io `close` (`1`) or socket.io `disconnect` (`41`).
    Close,
    /// engine.io `ping` (`2`), answered with `3`.
    Ping,
    /// socket.io `connect` acknowledged (`40` + JSON with the socket id).
    Connected(&'a str),
    /// socket.io `connect_error` (`44` + JSON).
    ConnectError(&'a str),
    /// socket.io event without an ack id (`42` + the argument array).
    Event(&'a str),
    /// socket.io event asking for an ack (`42N` + the argument array).
    EventWithAck {
        /// The ack id.
        id: u64,
        /// The argument array, as text.
        args: &'a str,
    },
    /// socket.io acknowledgement (`43N` + the argument array).
    Ack {
        /// The ack id it answers.
        id: u64,
        /// The argument array, as text.
        args: &'a str,
    },
    /// Anything else (upgrade, noop, other namespaces, binary events).
    Other(&'a str),
}

/// Classify one text packet.
pub fn parse(text: &str) -> Packet<'_> {
    let bytes = text.as_bytes();
    match bytes.first() {
        Some(b'0') => Packet::Open(&text[1..]),
        Some(b'1') => Packet::Close,
        Some(b'2') if bytes.len() == 1 => Packet::Ping,
        Some(b'4') => match bytes.get(1) {
            Some(b'0') => Packet::Connected(&text[2..]),
            Some(b'1') => Packet::Close,
            Some(b'4') => Packet::ConnectError(&text[2..]),
            Some(b'2') => match split_id(&text[2..]) {
                (None, args) => Packet::Event(args),
                (Some(id), args) => Packet::EventWithAck { id, args },
            },
            Some(b'3') => match split_id(&text[2..]) {
                (Some(id), args) => Packet::Ack { id, args },
                (None, _) => Packet::Other(text),
            },
            _ => Packet::Other(text),
        },
        _ => Packet::Other(text),
    }
}

/// The ack id in front of a packet's argument array, if any.
fn split_id(rest: &str) -> (Option<u64>, &str) {
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return (None, rest);
    }
    (rest[..digits].parse().ok(), &rest[digits..])
}

/// The event name of an argument array `["name",…]`.
pub fn event_name(args: &str) -> Option<&str> {
    let rest = args.strip_prefix("[\"")?;
    Some(&rest[..rest.find('"')?])
}

/// The text of an event with ack id `id`: `42{id}["{event}",{json}]`.
pub fn emit_with_ack(id: u64, event: &str, json: &str) -> String {
    format!("42{id}[\"{event}\",{json}]")
}

/// Upgrade to the engine.io endpoint, read `open`, connect to the main
/// namespace and wait until it is connected (answering pings), all within
/// `bound`.
pub async fn open(
    target: &Target,
    source: Option<IpAddr>,
    bound: Duration,
) -> Result<Session, LoadError> {
    let work = async {
        let stream = websocket::dial(target.addr, source).await?;
        let (mut ws, _) = ClientBuilder::from_uri(target.uri.clone())
            .connect_on(stream)
            .await?;
        let first = websocket::next_text(&mut ws).await?;
        if !matches!(parse(&first), Packet::Open(_)) {
            return Err(LoadError::Protocol(format!(
                "expected the engine.io open packet, got {first:?}"
            )));
        }
        ws.send(Message::text("40")).await?;
        loop {
            let text = websocket::next_text(&mut ws).await?;
            match parse(&text) {
                Packet::Connected(_) => return Ok(ws),
                Packet::Ping => ws.send(Message::text("3")).await?,
                other => {
                    return Err(LoadError::Protocol(format!(
                        "expected the socket.io connect answer, got {other:?}"
                    )))
                }
            }
        }
    };
    tokio::time::timeout(bound, work)
        .await
        .map_err(|_| LoadError::Timeout("opening a socket.io session"))?
}

/// The next text packet that is not an engine.io ping (pings are answered
/// with a pong); an error on a close packet or when the connection closes.
pub async fn next_non_ping(ws: &mut Session) -> Result<String, LoadError> {
    loop {
        let text = websocket::next_text(ws).await?;
        match parse(&text) {
            Packet::Ping => ws.send(Message::text("3")).await?,
            Packet::Close => {
                return Err(LoadError::Protocol(
                    "the socket.io server closed the session".into(),
                ))
            }
            _ => return Ok(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_are_classified() {
        let open = r#"0{"sid":"a","upgrades":[],"pingInterval":10000,"pingTimeout":10000,"maxPayload":1000000}"#;
        assert!(matches!(parse(open), Packet::Open(json) if json.starts_with("{\"sid\"")));
        assert_eq!(parse("2"), Packet::Ping);
        assert_eq!(parse("1"), Packet::Close);
        assert_eq!(parse("41"), Packet::Close);
        assert_eq!(
            parse(r#"40{"sid":"x"}"#),
            Packet::Connected(r#"{"sid":"x"}"#)
        );
        assert!(matches!(
            parse(r#"44{"message":"no"}"#),
            Packet::ConnectError(_)
        ));
        assert_eq!(
            parse(r#"42["publication",{"n":1,"t":5}]"#),
            Packet::Event(r#"["publication",{"n":1,"t":5}]"#)
        );
        assert_eq!(
            parse(r#"4217["echo",17]"#),
            Packet::EventWithAck {
                id: 17,
                args: r#"["echo",17]"#
            }
        );
        assert_eq!(
            parse("43123[123]"),
            Packet::Ack {
                id: 123,
                args: "[123]"
            }
        );
        assert!(matches!(parse("43[1]"), Packet::Other(_)));
        assert!(matches!(parse("6"), Packet::Other(_)));
        assert!(matches!(parse(""), Packet::Other(_)));
        assert!(matches!(parse("22"), Packet::Other(_)));
    }

    #[test]
    fn events_are_named_and_written() {
        assert_eq!(
            event_name(r#"["publication",{"n":1}]"#),
            Some("publication")
        );
        assert_eq!(event_name("[1]"), None);
        assert_eq!(emit_with_ack(3, "echo", "3"), r#"423["echo",3]"#);
        assert_eq!(
            target("127.0.0.1:9".parse().expect("addr"))
                .expect("loopback")
                .uri
                .to_string(),
            "ws://127.0.0.1:9/socket.io/?EIO=4&transport=websocket"
        );
    }
}
