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

use crate::clients::target::Target;
use crate::clients::websocket::{self, message_type, next_non_ping, Session};
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
        open.push(websocket::open(target, websocket::source_for(sources, i), bound).await?);
    }
    Ok(open)
}

/// Send `per_session` frames of `kind` (`subscribe` or `unsubscribe`) on
/// session `s` for the channels of `round`.
async fn send_channel_frames(
    ws: &mut Session,
    kind: &str,
    round: usize,
    s: usize,
    per_session: usize,
) -> Result<(), LoadError> {
    for n in 0..per_session {
        let frame = format!(r#"{{"type":"{kind}","channel":"bench-{round}-{s}-{n}"}}"#);
        ws.send(Message::text(frame)).await?;
    }
    Ok(())
}

/// Run `tasks` together within `bound`; the first error wins.
async fn all<T>(
    tasks: Vec<impl std::future::Future<Output = Result<T, LoadError>>>,
    bound: Duration,
    what: &'static str,
) -> Result<Vec<T>, LoadError> {
    let results = tokio::time::timeout(bound, futures_util::future::join_all(tasks))
        .await
        .map_err(|_| LoadError::Timeout(what))?;
    results.into_iter().collect()
}

/// Subscribe every session to `per_session` fresh channels of `round` and
/// wait until all are confirmed. Returns how many were confirmed.
pub async fn subscribe_all(
    sessions: &mut [Session],
    round: usize,
    per_session: usize,
    bound: Duration,
) -> Result<usize, LoadError> {
    let tasks = sessions.iter_mut().enumerate().map(|(s, ws)| async move {
        send_channel_frames(ws, "subscribe", round, s, per_session).await?;
        let mut confirmed = 0;
        while confirmed < per_session {
            let text = next_non_ping(ws).await?;
            match message_type(&text) {
                Some("subscribed") => confirmed += 1,
                _ => return Err(LoadError::Protocol(format!("subscribe refused: {text}"))),
            }
        }
        Ok(confirmed)
    });
    Ok(all(tasks.collect(), bound, "subscribing")
        .await?
        .iter()
        .sum())
}

/// Unsubscribe every session from the channels of `round`, then make one
/// `echo` round trip on each, so the server has handled them all.
pub async fn unsubscribe_all(
    sessions: &mut [Session],
    round: usize,
    per_session: usize,
    bound: Duration,
) -> Result<(), LoadError> {
    let tasks = sessions.iter_mut().enumerate().map(|(s, ws)| async move {
        send_channel_frames(ws, "unsubscribe", round, s, per_session).await?;
        ws.send(Message::text(
            r#"{"type":"request","id":1,"method":"echo","params":0}"#,
        ))
        .await?;
        loop {
            if message_type(&next_non_ping(ws).await?) == Some("response") {
                return Ok(());
            }
        }
    });
    all(tasks.collect(), bound, "unsubscribing").await.map(drop)
}

/// One series of the server's `/metrics` (plain HTTP/1.1 on loopback).
pub async fn metric(target: &Target, series: &str) -> Result<f64, LoadError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = websocket::dial(target.addr, None).await?;
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
