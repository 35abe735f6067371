//! A raw client of the SSE fallback (spec/PROTOCOL.md §1.7): the stream
//! read over a plain TCP connection (HTTP/1.1, chunked), its events parsed
//! by hand, and sends as plain POSTs, so a test sees exactly what the
//! server sends and decides nothing for it.

use std::net::SocketAddr;
use std::time::Duration;

use belay_proto::message::{decode_server, encode_client, ClientMessage, Connect, ServerMessage};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::http::{http_call_with, parse_head, HttpResponse};
use super::SOON;

/// One event of the stream.
#[derive(Debug, Clone, PartialEq)]
pub enum SseEvent {
    /// `event: open` with the stream's id.
    Open(String),
    /// A message.
    Message(ServerMessage),
    /// `event: close`.
    Close(u16, String),
    /// The response ended (without `close`, this is a 1006).
    End,
}

/// A raw session over the fallback.
pub struct SseRaw {
    addr: SocketAddr,
    tcp: TcpStream,
    /// Bytes of the chunked body not yet decoded.
    chunked: Vec<u8>,
    /// Decoded body not yet split into events.
    text: String,
    ended: bool,
    /// The stream's response head.
    pub head: HttpResponse,
    /// The stream's id (from `open`).
    pub stream: String,
    next_seq: u64,
}

impl SseRaw {
    /// `POST /sse` with `body` and extra header lines; the stream once its
    /// `open` event arrived, or the refusal (status, headers, body).
    pub async fn open(
        addr: SocketAddr,
        body: &str,
        headers: &[&str],
    ) -> Result<SseRaw, HttpResponse> {
        let mut tcp = TcpStream::connect(addr).await.expect("connect");
        let extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
        let request = format!(
            "POST /sse HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/plain\r\n{extra}\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        tcp.write_all(request.as_bytes()).await.expect("write");
        let mut raw = Vec::new();
        let mut buf = [0u8; 4096];
        let at = loop {
            if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break at;
            }
            let n = tokio::time::timeout(SOON, tcp.read(&mut buf))
                .await
                .expect("an answer within the bound")
                .expect("read");
            assert!(n > 0, "the server closed before answering");
            raw.extend_from_slice(&buf[..n]);
        };
        let head = String::from_utf8_lossy(&raw[..at]).into_owned();
        let (status, headers) = parse_head(&head);
        let rest = raw[at + 4..].to_vec();
        let mut head = HttpResponse {
            status,
            headers,
            body: String::new(),
        };
        if status != 200 {
            let mut rest = rest;
            let _ = tokio::time::timeout(SOON, tcp.read_to_end(&mut rest)).await;
            head.body = String::from_utf8_lossy(&rest).into_owned();
            return Err(head);
        }
        let mut sse = SseRaw {
            addr,
            tcp,
            chunked: rest,
            text: String::new(),
            ended: false,
            head,
            stream: String::new(),
            next_seq: 1,
        };
        match sse.recv().await {
            SseEvent::Open(stream) => sse.stream = stream,
            other => panic!("expected the open event, got {other:?}"),
        }
        Ok(sse)
    }

    /// Open with `connect` (and `token`) as the first body; the welcome.
    pub async fn connected(addr: SocketAddr, token: Option<&str>) -> (SseRaw, ServerMessage) {
        let connect = encode_client(&ClientMessage::Connect(Connect {
            protocol: 1,
            token: token.map(str::to_owned),
            session: None,
        }));
        let mut sse = SseRaw::open(addr, &connect, &[]).await.expect("a stream");
        let welcome = sse.recv_message().await;
        assert!(matches!(welcome, ServerMessage::Welcome(_)), "{welcome:?}");
        (sse, welcome)
    }

    /// The next event within `bound`; `None` if nothing came.
    pub async fn next_within(&mut self, bound: Duration) -> Option<SseEvent> {
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            if let Some(event) = self.parse_event() {
                return Some(event);
            }
            if self.ended {
                return Some(SseEvent::End);
            }
            self.decode_chunks();
            if self.text.contains("\n\n") || self.ended {
                continue;
            }
            let mut buf = [0u8; 8192];
            let read = tokio::time::timeout_at(deadline, self.tcp.read(&mut buf)).await;
            match read {
                Err(_) => return None,
                Ok(Ok(0)) | Ok(Err(_)) => self.ended = true,
                Ok(Ok(n)) => self.chunked.extend_from_slice(&buf[..n]),
            }
        }
    }

    /// The next event (within the "at once" bound).
    pub async fn recv(&mut self) -> SseEvent {
        self.next_within(SOON)
            .await
            .expect("an event within the bound")
    }

    /// The next message, answering pings on the way.
    pub async fn recv_message(&mut self) -> ServerMessage {
        loop {
            match self.recv().await {
                SseEvent::Message(ServerMessage::Ping) => {
                    let pong = self.send(&[&ClientMessage::Pong]).await;
                    assert_eq!(pong.status, 204, "{pong:?}");
                }
                SseEvent::Message(message) => return message,
                other => panic!("expected a message, got {other:?}"),
            }
        }
    }

    /// How the stream ends: its `close` event, or `None` for an end
    /// without one; within `bound`, skipping messages.
    pub async fn closed_within(&mut self, bound: Duration) -> Option<(u16, String)> {
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self
                .next_within(left)
                .await
                .expect("the stream ends within the bound")
            {
                SseEvent::Close(code, reason) => return Some((code, reason)),
                SseEvent::End => return None,
                _ => {}
            }
        }
    }

    /// Whether the server closes the stream's TCP connection within
    /// `bound` (everything still arriving is read and dropped).
    pub async fn tcp_closed_within(&mut self, bound: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + bound;
        let mut buf = [0u8; 64 * 1024];
        loop {
            match tokio::time::timeout_at(deadline, self.tcp.read(&mut buf)).await {
                Err(_) => return false,
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => {}
            }
        }
    }

    /// Send `messages` as the next numbered send.
    pub async fn send(&mut self, messages: &[&ClientMessage]) -> HttpResponse {
        let body: Vec<String> = messages.iter().map(|m| encode_client(m)).collect();
        let seq = self.next_seq;
        self.next_seq += 1;
        self.send_raw(seq, &body.join("\n")).await
    }

    /// A send with this number and body, as given.
    pub async fn send_raw(&self, seq: u64, body: &str) -> HttpResponse {
        send_to(self.addr, &self.stream, Some(seq), body).await
    }

    /// `POST /sse/close` with `code`.
    pub async fn close(&self, code: u16, reason: &str) -> HttpResponse {
        let body = serde_json::json!({ "code": code, "reason": reason }).to_string();
        let stream = format!("Belay-Stream: {}", self.stream);
        http_call_with(self.addr, "POST", "/sse/close", &[&stream], Some(&body)).await
    }

    fn decode_chunks(&mut self) {
        loop {
            let Some(line_end) = self.chunked.windows(2).position(|w| w == b"\r\n") else {
                return;
            };
            let size_line = String::from_utf8_lossy(&self.chunked[..line_end]).into_owned();
            let size = usize::from_str_radix(size_line.split(';').next().unwrap_or("").trim(), 16)
                .expect("a chunk size");
            if size == 0 {
                self.ended = true;
                self.chunked.clear();
                return;
            }
            let start = line_end + 2;
            if self.chunked.len() < start + size + 2 {
                return;
            }
            let data = String::from_utf8(self.chunked[start..start + size].to_vec())
                .expect("the stream is UTF-8");
            self.text.push_str(&data);
            self.chunked.drain(..start + size + 2);
        }
    }

    fn parse_event(&mut self) -> Option<SseEvent> {
        let at = self.text.find("\n\n")?;
        let block: String = self.text[..at].to_owned();
        self.text.drain(..at + 2);
        let mut name = None;
        let mut data = String::new();
        for line in block.lines() {
            if let Some(value) = line.strip_prefix("event: ") {
                name = Some(value.to_owned());
            } else if let Some(value) = line.strip_prefix("data: ") {
                data.push_str(value);
            }
        }
        let json = || serde_json::from_str::<serde_json::Value>(&data).expect("JSON data");
        Some(match name.as_deref() {
            Some("open") => SseEvent::Open(json()["stream"].as_str().expect("an id").to_owned()),
            Some("close") => {
                let v = json();
                SseEvent::Close(
                    v["code"].as_u64().expect("a code") as u16,
                    v["reason"].as_str().unwrap_or("").to_owned(),
                )
            }
            None => {
                SseEvent::Message(decode_server(&data).expect("the server sends valid messages"))
            }
            Some(other) => panic!("unknown event {other}"),
        })
    }
}

/// `POST /sse/send` for `stream` (with `Belay-Seq: seq` if given).
pub async fn send_to(addr: SocketAddr, stream: &str, seq: Option<u64>, body: &str) -> HttpResponse {
    let stream = format!("Belay-Stream: {stream}");
    let seq = seq.map(|s| format!("Belay-Seq: {s}"));
    let mut headers = vec![stream.as_str()];
    headers.extend(seq.as_deref());
    http_call_with(addr, "POST", "/sse/send", &headers, Some(body)).await
}
