//! A minimal load client of the SSE fallback (spec/PROTOCOL.md §1.7): the
//! stream on one TCP connection (HTTP/1.1, its chunked body decoded here),
//! sends on a second one kept alive between them. Messages are told apart
//! by their `"type"` as in [`crate::clients::websocket`]; pings are answered.

use std::net::IpAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::clients::target::Target;
use crate::clients::websocket::{self, CONNECT, PONG};
use crate::LoadError;

/// An open session over the fallback.
#[derive(Debug)]
pub struct SseSession {
    target: Target,
    source: Option<IpAddr>,
    stream: TcpStream,
    /// Bytes of the chunked body not yet decoded.
    chunked: Vec<u8>,
    /// Decoded body not yet split into events.
    text: String,
    id: String,
    next_seq: u64,
    /// The connection the sends go on (opened at the first).
    sends: Option<TcpStream>,
}

impl SseSession {
    /// Open a stream with `connect` and wait for `welcome` (answering
    /// pings), within `bound`.
    pub async fn open(
        target: &Target,
        source: Option<IpAddr>,
        bound: Duration,
    ) -> Result<SseSession, LoadError> {
        let work = async {
            let mut stream = websocket::dial(target.addr, source).await?;
            let request = format!(
                "POST /sse HTTP/1.1\r\nHost: {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{CONNECT}",
                target.addr,
                CONNECT.len()
            );
            stream.write_all(request.as_bytes()).await?;
            let (status, rest) = read_head(&mut stream).await?;
            if status != 200 {
                return Err(LoadError::Protocol(format!("POST /sse answered {status}")));
            }
            let mut session = SseSession {
                target: target.clone(),
                source,
                stream,
                chunked: rest,
                text: String::new(),
                id: String::new(),
                next_seq: 1,
                sends: None,
            };
            let open = session.next_event().await?;
            session.id = open
                .strip_prefix("open:")
                .map(|data| {
                    let v: serde_json::Value = serde_json::from_str(data).unwrap_or_default();
                    v["stream"].as_str().unwrap_or_default().to_owned()
                })
                .ok_or_else(|| LoadError::Protocol(format!("expected open, got {open}")))?;
            loop {
                let text = session.next_text().await?;
                match websocket::message_type(&text) {
                    Some("welcome") => return Ok(session),
                    Some("ping") => session.send(PONG).await?,
                    _ => return Err(LoadError::Protocol(format!("expected welcome, got {text}"))),
                }
            }
        };
        tokio::time::timeout(bound, work)
            .await
            .map_err(|_| LoadError::Timeout("opening an SSE session"))?
    }

    /// Send `body` (one or more messages, one per line) and wait for `204`.
    pub async fn send(&mut self, body: &str) -> Result<(), LoadError> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let request = format!(
            "POST /sse/send HTTP/1.1\r\nHost: {}\r\nContent-Type: text/plain\r\nBelay-Stream: {}\r\n\
             Belay-Seq: {seq}\r\nContent-Length: {}\r\n\r\n{body}",
            self.target.addr,
            self.id,
            body.len()
        );
        let mut sends = match self.sends.take() {
            Some(sends) => sends,
            None => websocket::dial(self.target.addr, self.source).await?,
        };
        sends.write_all(request.as_bytes()).await?;
        let (status, _) = read_head(&mut sends).await?;
        if status != 204 {
            return Err(LoadError::Protocol(format!("a send answered {status}")));
        }
        self.sends = Some(sends);
        Ok(())
    }

    /// The next message (its JSON); an error when the stream ends.
    pub async fn next_text(&mut self) -> Result<String, LoadError> {
        loop {
            let event = self.next_event().await?;
            if let Some(data) = event.strip_prefix("message:") {
                return Ok(data.to_owned());
            }
            if event.starts_with("close:") {
                return Err(LoadError::Protocol(format!(
                    "closed by the server: {event}"
                )));
            }
        }
    }

    /// The next message that is not a `ping`; pings are answered.
    pub async fn next_non_ping(&mut self) -> Result<String, LoadError> {
        loop {
            let text = self.next_text().await?;
            if websocket::message_type(&text) == Some("ping") {
                self.send(PONG).await?;
            } else {
                return Ok(text);
            }
        }
    }

    /// Close the stream (`POST /sse/close`, no wait for more).
    pub async fn close(mut self) {
        let body = r#"{"code":1000,"reason":"done"}"#;
        let request = format!(
            "POST /sse/close HTTP/1.1\r\nHost: {}\r\nBelay-Stream: {}\r\nContent-Length: {}\r\n\r\n{body}",
            self.target.addr,
            self.id,
            body.len()
        );
        if let Some(mut sends) = self.sends.take() {
            let _ = sends.write_all(request.as_bytes()).await;
            let _ = tokio::time::timeout(Duration::from_secs(2), read_head(&mut sends)).await;
        }
    }

    /// The next event as `name:data` (`message` for unnamed ones).
    async fn next_event(&mut self) -> Result<String, LoadError> {
        loop {
            if let Some(at) = self.text.find("\n\n") {
                let block: String = self.text.drain(..at + 2).collect();
                let mut name = "message";
                let mut data = "";
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event: ") {
                        name = v;
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data = v;
                    }
                }
                return Ok(format!("{name}:{data}"));
            }
            if !self.decode_chunk()? {
                let mut buf = [0u8; 16 * 1024];
                let n = self.stream.read(&mut buf).await?;
                if n == 0 {
                    return Err(LoadError::Protocol("the stream ended".into()));
                }
                self.chunked.extend_from_slice(&buf[..n]);
            }
        }
    }

    /// Move one whole chunk into `text`; whether there was one.
    fn decode_chunk(&mut self) -> Result<bool, LoadError> {
        let Some(line_end) = self.chunked.windows(2).position(|w| w == b"\r\n") else {
            return Ok(false);
        };
        let size = std::str::from_utf8(&self.chunked[..line_end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next().unwrap_or("").trim(), 16).ok())
            .ok_or_else(|| LoadError::Protocol("a malformed chunk".into()))?;
        if size == 0 {
            return Err(LoadError::Protocol("the stream ended".into()));
        }
        let start = line_end + 2;
        if self.chunked.len() < start + size + 2 {
            return Ok(false);
        }
        let data = std::str::from_utf8(&self.chunked[start..start + size])
            .map_err(|_| LoadError::Protocol("the stream is not UTF-8".into()))?;
        self.text.push_str(data);
        self.chunked.drain(..start + size + 2);
        Ok(true)
    }
}

/// Read an HTTP/1.1 response head: its status and the bytes after it. A
/// body with `Content-Length` is read too (and dropped).
async fn read_head(stream: &mut TcpStream) -> Result<(u16, Vec<u8>), LoadError> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let at = loop {
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err(LoadError::Protocol("closed before an answer".into()));
        }
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..at]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| LoadError::Protocol(format!("not an HTTP answer: {head}")))?;
    let mut rest = raw[at + 4..].to_vec();
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while rest.len() < length {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        rest.extend_from_slice(&buf[..n]);
    }
    if length > 0 {
        rest.drain(..length.min(rest.len()));
    }
    Ok((status, rest))
}
