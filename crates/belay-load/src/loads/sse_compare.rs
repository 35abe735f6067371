//! The SSE fallback against WebSocket on the same server (server-bench
//! `sse`): one broadcast reaching subscribers over both at once, and
//! request round trips over each (idle sessions over either are
//! [`crate::loads::idle`]'s, with [`IdleConfig::sse`](crate::loads::idle::IdleConfig::sse)).

use std::net::IpAddr;
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use tokio::task::JoinSet;
use tokio_websockets::Message;

use crate::clients::sse::SseSession;
use crate::clients::target::Target;
use crate::clients::websocket;
use crate::loads::broadcast::PUBLISH_METHOD;
use crate::measure::stats::Latencies;
use crate::LoadError;

/// Bound on opening one session.
const OPEN_BOUND: Duration = Duration::from_secs(10);

/// Publish→delivery latencies of one broadcast (`messages` at `rate`/s on
/// `channel`) to `each` WebSocket and `each` SSE subscribers at once:
/// (WebSocket, SSE, deliveries missing).
pub async fn broadcast_both(
    target: &Target,
    each: usize,
    messages: u64,
    rate: f64,
    sources: &[IpAddr],
) -> Result<(Latencies, Latencies, u64), LoadError> {
    let channel = "sse-bench";
    let subscribe = format!(r#"{{"type":"subscribe","channel":"{channel}"}}"#);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(180);
    let mut tasks: JoinSet<(bool, Latencies, u64)> = JoinSet::new();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::unbounded_channel::<Result<(), String>>();
    for i in 0..2 * each {
        let over_sse = i % 2 == 1;
        let (target, source) = (target.clone(), websocket::source_for(sources, i));
        let (subscribe, ready_tx) = (subscribe.clone(), ready_tx.clone());
        tasks.spawn(async move {
            let mut latencies = Latencies::new();
            let mut got = 0;
            let record = |text: &str, latencies: &mut Latencies| {
                if websocket::message_type(text) == Some("publication") {
                    if let Some(t) = websocket::field_u64(text, "t") {
                        latencies.record_micros(websocket::wall_micros().saturating_sub(t));
                    }
                    true
                } else {
                    false
                }
            };
            if over_sse {
                let opened = async {
                    let mut s = SseSession::open(&target, source, OPEN_BOUND).await?;
                    s.send(&subscribe).await?;
                    let text = s.next_non_ping().await?;
                    if websocket::message_type(&text) != Some("subscribed") {
                        return Err(LoadError::Protocol(format!(
                            "expected subscribed, got {text}"
                        )));
                    }
                    Ok(s)
                };
                let mut s = match opened.await {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.to_string()));
                        return (true, latencies, 0);
                    }
                };
                let _ = ready_tx.send(Ok(()));
                while got < messages {
                    match tokio::time::timeout_at(deadline, s.next_non_ping()).await {
                        Ok(Ok(text)) => got += u64::from(record(&text, &mut latencies)),
                        _ => break,
                    }
                }
                s.close().await;
            } else {
                let opened = async {
                    let mut ws = websocket::open(&target, source, OPEN_BOUND).await?;
                    ws.send(Message::text(subscribe)).await?;
                    let text = websocket::next_non_ping(&mut ws).await?;
                    if websocket::message_type(&text) != Some("subscribed") {
                        return Err(LoadError::Protocol(format!(
                            "expected subscribed, got {text}"
                        )));
                    }
                    Ok(ws)
                };
                let mut ws = match opened.await {
                    Ok(ws) => ws,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.to_string()));
                        return (false, latencies, 0);
                    }
                };
                let _ = ready_tx.send(Ok(()));
                while got < messages {
                    match tokio::time::timeout_at(deadline, websocket::next_non_ping(&mut ws)).await
                    {
                        Ok(Ok(text)) => got += u64::from(record(&text, &mut latencies)),
                        _ => break,
                    }
                }
                let _ = ws.send(Message::close(None, "")).await;
            }
            (over_sse, latencies, got)
        });
    }
    drop(ready_tx);
    for _ in 0..2 * each {
        match ready_rx.recv().await {
            Some(Ok(())) => {}
            Some(Err(e)) => return Err(LoadError::Protocol(format!("a subscriber failed: {e}"))),
            None => break,
        }
    }
    let mut publisher =
        websocket::open(target, websocket::source_for(sources, 2 * each), OPEN_BOUND).await?;
    let request = format!(
        r#"{{"type":"request","id":1,"method":"{PUBLISH_METHOD}","params":{{"channel":"{channel}","messages":{messages},"rate":{rate}}}}}"#
    );
    publisher.send(Message::text(request)).await?;
    let keep =
        tokio::spawn(
            async move { while websocket::next_non_ping(&mut publisher).await.is_ok() {} },
        );
    let (mut ws, mut sse, mut got) = (Latencies::new(), Latencies::new(), 0);
    while let Some(done) = tasks.join_next().await {
        let (over_sse, latencies, n) = done.map_err(|e| LoadError::Protocol(e.to_string()))?;
        got += n;
        if over_sse {
            sse.merge(latencies)
        } else {
            ws.merge(latencies)
        }
    }
    keep.abort();
    Ok((ws, sse, (2 * each as u64 * messages).saturating_sub(got)))
}

/// `requests` echo round trips, one at a time, over a WebSocket session
/// and over an SSE session: (WebSocket, SSE).
pub async fn echo_both(
    target: &Target,
    requests: usize,
) -> Result<(Latencies, Latencies), LoadError> {
    let request = |id: usize| {
        format!(r#"{{"type":"request","id":{id},"method":"echo","params":{{"n":{id}}}}}"#)
    };
    let mut ws = websocket::open(target, None, OPEN_BOUND).await?;
    let mut over_ws = Latencies::new();
    for id in 1..=requests {
        let started = Instant::now();
        ws.send(Message::text(request(id))).await?;
        loop {
            let text = websocket::next_non_ping(&mut ws).await?;
            if websocket::message_type(&text) == Some("response") {
                break;
            }
        }
        over_ws.record(started.elapsed());
    }
    let _ = ws.send(Message::close(None, "")).await;
    let mut sse = SseSession::open(target, None, OPEN_BOUND).await?;
    let mut over_sse = Latencies::new();
    for id in 1..=requests {
        let started = Instant::now();
        sse.send(&request(id)).await?;
        loop {
            let text = sse.next_non_ping().await?;
            if websocket::message_type(&text) == Some("response") {
                break;
            }
        }
        over_sse.record(started.elapsed());
    }
    sse.close().await;
    Ok((over_ws, over_sse))
}
