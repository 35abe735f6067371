//! The floor: a bare tokio-websockets server with just enough of the Belay
//! protocol for the load clients — a fixed `welcome`, `echo` by patching the
//! request into a response, one broadcast channel, and quiet-connection
//! pings with a timeout. One task per connection, no per-connection queue
//! (publications are batched into one flush, like Belay's connection task):
//! what any WebSocket server on this codec must pay at least.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::broadcast;
use tokio_websockets::{Message, ServerBuilder};

use crate::clients::websocket::{field_u64, message_type, wall_micros};

const WELCOME: &str =
    r#"{"type":"welcome","session":"floor","protocol":1,"ping_interval_ms":25000}"#;
const PING: &str = r#"{"type":"ping"}"#;

/// How the floor behaves.
#[derive(Debug, Clone, Copy)]
pub struct FloorConfig {
    /// Ping a connection after this long without a frame.
    pub ping_interval: Duration,
    /// Close it if nothing arrives this long after the ping.
    pub pong_timeout: Duration,
}

impl Default for FloorConfig {
    fn default() -> Self {
        FloorConfig {
            ping_interval: Duration::from_secs(25),
            pong_timeout: Duration::from_secs(10),
        }
    }
}

/// Accept and serve connections forever.
pub async fn serve(listener: TcpListener, config: FloorConfig) {
    let (live, _) = broadcast::channel::<Bytes>(1_024);
    let offsets = Arc::new(AtomicU64::new(0));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, most likely: back off briefly.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let live = live.clone();
        let offsets = Arc::clone(&offsets);
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            connection(stream, config, live, offsets).await;
        });
    }
}

async fn connection(
    stream: TcpStream,
    config: FloorConfig,
    live: broadcast::Sender<Bytes>,
    offsets: Arc<AtomicU64>,
) {
    let Ok((_, mut ws)) = ServerBuilder::new().accept(stream).await else {
        return;
    };
    let mut subscription: Option<broadcast::Receiver<Bytes>> = None;
    let mut quiet_since = tokio::time::Instant::now();
    let mut pinged = false;
    loop {
        let deadline = quiet_since
            + if pinged {
                config.ping_interval + config.pong_timeout
            } else {
                config.ping_interval
            };
        let publication = async {
            match subscription.as_mut() {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            frame = ws.next() => {
                let Some(Ok(message)) = frame else { return };
                quiet_since = tokio::time::Instant::now();
                pinged = false;
                if message.is_close() {
                    return;
                }
                let Some(text) = message.as_text() else { continue };
                let reply = match message_type(text) {
                    Some("connect") => Some(Bytes::from_static(WELCOME.as_bytes())),
                    Some("request") => Some(respond(text, &live, &offsets)),
                    Some("subscribe") => {
                        subscription = Some(live.subscribe());
                        Some(Bytes::from_static(
                            br#"{"type":"subscribed","channel":"bench","epoch":"floor","offset":0,"recovered":false}"#,
                        ))
                    }
                    _ => None,
                };
                if let Some(reply) = reply {
                    if ws.send(Message::text(reply)).await.is_err() {
                        return;
                    }
                }
            }
            publication = publication => match publication {
                Ok(frame) => {
                    // Batch what is already queued into one flush, as Belay's connection task does.
                    if ws.feed(Message::text(frame)).await.is_err() {
                        return;
                    }
                    if let Some(rx) = subscription.as_mut() {
                        for _ in 0..64 {
                            let Ok(more) = rx.try_recv() else { break };
                            if ws.feed(Message::text(more)).await.is_err() {
                                return;
                            }
                        }
                    }
                    if ws.flush().await.is_err() {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            },
            () = tokio::time::sleep_until(deadline) => {
                if pinged {
                    let _ = ws.send(Message::close(None, "heartbeat timeout")).await;
                    return;
                }
                pinged = true;
                if ws.send(Message::text(PING)).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// `echo`: the params come back as the result (the load client puts
/// `params` last). `bench.publish`: start publishing, answer at once.
fn respond(text: &str, live: &broadcast::Sender<Bytes>, offsets: &Arc<AtomicU64>) -> Bytes {
    let id = field_u64(text, "id").unwrap_or(0);
    if text.contains(r#""method":"bench.publish""#) {
        let messages = field_u64(text, "messages").unwrap_or(0).min(100_000);
        let rate = text
            .split(r#""rate":"#)
            .nth(1)
            .and_then(|s| s.trim_end_matches('}').split([',', '}']).next())
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or(100.0);
        spawn_publisher(live.clone(), Arc::clone(offsets), messages, rate);
        return Bytes::from(format!(r#"{{"type":"response","id":{id},"result":null}}"#));
    }
    let params = text
        .split_once(r#""params":"#)
        .map_or("null", |(_, rest)| rest.strip_suffix('}').unwrap_or(rest));
    Bytes::from(format!(
        r#"{{"type":"response","id":{id},"result":{params}}}"#
    ))
}

/// Publish `messages` stamped frames at `rate` per second.
pub fn spawn_publisher(
    live: broadcast::Sender<Bytes>,
    offsets: Arc<AtomicU64>,
    messages: u64,
    rate: f64,
) {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / rate.clamp(0.1, 1e6)));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        for n in 0..messages {
            ticker.tick().await;
            let offset = offsets.fetch_add(1, Ordering::Relaxed) + 1;
            let frame = format!(
                r#"{{"type":"publication","channel":"bench","epoch":"floor","offset":{offset},"data":{{"n":{n},"t":{}}}}}"#,
                wall_micros()
            );
            let _ = live.send(Bytes::from(frame));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_is_patched_into_a_response() {
        let (live, _) = broadcast::channel(1);
        let offsets = Arc::new(AtomicU64::new(0));
        let reply = respond(
            r#"{"type":"request","id":42,"method":"echo","params":{"a":[1,2]}}"#,
            &live,
            &offsets,
        );
        assert_eq!(
            reply,
            Bytes::from_static(br#"{"type":"response","id":42,"result":{"a":[1,2]}}"#)
        );
    }
}
