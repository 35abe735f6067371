//! The channel load: many sessions, each subscribing to many distinct
//! channels and then leaving them, to measure what a channel costs the
//! server and whether that memory comes back.
//!
//! Each session subscribes to `per_session` channels named
//! `bench-{round}-{session}-{n}` (unique), pipelined, and waits for every
//! `subscribed`; then unsubscribes them all (no reply is sent for an
//! unsubscribe, so a final `echo` round trip shows the server has handled
//! them). Bounded in count by the arguments and in time by `bound`.

use std::net::IpAddr;
use std::time::Duration;

use futures_util::SinkExt;
use tokio_websockets::Message;

use crate::client::{self, message_type, next_non_ping, Session};
use crate::target::Target;
use crate::LoadError;

/// Open `sessions` sessions, round-robin over `sources`.
pub async fn open_sessions(
    target: &Target,
    sessions: usize,
    sources: &[IpAddr],
    bound: Duration,
) -> Result<Vec<Session>, LoadError> {
    let mut open = Vec::with_capacity(sessions);
    for i in 0..sessions {
        open.push(client::open(target, client::source_for(sources, i), bound).await?);
    }
    Ok(open)
}

/// Subscribe every session to `per_session` fresh channels of `round` and
/// wait until all are confirmed. Returns how many were confirmed.
pub async fn subscribe_all(
    sessions: &mut [Session],
    round: usize,
    per_session: usize,
    bound: Duration,
) -> Result<usize, LoadError> {
    let work = async {
        let mut tasks = Vec::new();
        for (s, ws) in sessions.iter_mut().enumerate() {
            tasks.push(async move {
                for n in 0..per_session {
                    let frame =
                        format!(r#"{{"type":"subscribe","channel":"bench-{round}-{s}-{n}"}}"#);
                    ws.send(Message::text(frame)).await?;
                }
                let mut confirmed = 0;
                while confirmed < per_session {
                    let text = next_non_ping(ws).await?;
                    match message_type(&text) {
                        Some("subscribed") => confirmed += 1,
                        _ => return Err(LoadError::Protocol(format!("subscribe refused: {text}"))),
                    }
                }
                Ok::<usize, LoadError>(confirmed)
            });
        }
        let mut total = 0;
        for result in futures_util::future::join_all(tasks).await {
            total += result?;
        }
        Ok(total)
    };
    tokio::time::timeout(bound, work)
        .await
        .map_err(|_| LoadError::Timeout("subscribing"))?
}

/// Unsubscribe every session from the channels of `round`, then make one
/// `echo` round trip on each, so the server has handled them all.
pub async fn unsubscribe_all(
    sessions: &mut [Session],
    round: usize,
    per_session: usize,
    bound: Duration,
) -> Result<(), LoadError> {
    let work = async {
        let mut tasks = Vec::new();
        for (s, ws) in sessions.iter_mut().enumerate() {
            tasks.push(async move {
                for n in 0..per_session {
                    let frame =
                        format!(r#"{{"type":"unsubscribe","channel":"bench-{round}-{s}-{n}"}}"#);
                    ws.send(Message::text(frame)).await?;
                }
                ws.send(Message::text(
                    r#"{"type":"request","id":1,"method":"echo","params":0}"#,
                ))
                .await?;
                loop {
                    let text = next_non_ping(ws).await?;
                    if message_type(&text) == Some("response") {
                        return Ok::<(), LoadError>(());
                    }
                }
            });
        }
        for result in futures_util::future::join_all(tasks).await {
            result?;
        }
        Ok(())
    };
    tokio::time::timeout(bound, work)
        .await
        .map_err(|_| LoadError::Timeout("unsubscribing"))?
}

/// One series of the server's `/metrics` (plain HTTP/1.1 on loopback).
pub async fn metric(target: &Target, series: &str) -> Result<f64, LoadError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = client::dial(target.addr, None).await?;
    let request = format!(
        "GET /metrics HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        target.addr
    );
    tcp.write_all(request.as_bytes()).await?;
    let mut body = String::new();
    tokio::time::timeout(Duration::from_secs(10), tcp.read_to_string(&mut body))
        .await
        .map_err(|_| LoadError::Timeout("reading /metrics"))??;
    body.lines()
        .find_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            (name == series).then(|| value.parse().ok())?
        })
        .ok_or_else(|| LoadError::Protocol(format!("no {series} in /metrics")))
}
