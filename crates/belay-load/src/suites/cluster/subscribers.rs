//! Subscribers of one channel spread round-robin over several nodes, each
//! checking that offsets follow one another; and the `bench.publish` call
//! that waits for the node's summary.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_websockets::Message;

use crate::clients::target::Target;
use crate::clients::websocket;
use crate::measure::stats::Latencies;
use crate::LoadError;

/// How to run the subscribers.
#[derive(Debug, Clone)]
pub struct SubscribeConfig {
    /// The channel.
    pub channel: String,
    /// Subscribers in all (at most 100,000), subscriber `i` on node `i % nodes`.
    pub subscribers: usize,
    /// Publications each subscriber waits for.
    pub messages: u64,
    /// Source addresses, round-robin.
    pub sources: Vec<IpAddr>,
    /// Handshakes in flight at once.
    pub handshakes: usize,
    /// Bound on the whole run, from [`subscribe`].
    pub time_limit: Duration,
}

impl SubscribeConfig {
    /// `subscribers` of `channel` waiting for `messages` each; 256
    /// handshakes at once; 300 s in all.
    pub fn new(channel: &str, subscribers: usize, messages: u64, sources: Vec<IpAddr>) -> Self {
        SubscribeConfig {
            channel: channel.to_owned(),
            subscribers: subscribers.min(100_000),
            messages,
            sources,
            handshakes: 256,
            time_limit: Duration::from_secs(300),
        }
    }
}

/// What one subscriber saw.
#[derive(Debug, Default)]
struct Seen {
    got: u64,
    gaps: u64,
    latencies: Latencies,
    last: Option<Instant>,
    error: Option<String>,
}

/// Subscribers confirmed and receiving.
#[derive(Debug)]
pub struct Subscribers {
    tasks: JoinSet<Seen>,
    /// Subscribers confirmed (`subscribed`).
    pub subscribed: usize,
    /// The first failure while subscribing.
    pub first_error: Option<String>,
    messages: u64,
}

/// What the subscribers received.
#[derive(Debug)]
pub struct DeliveryReport {
    /// Subscribers confirmed.
    pub subscribers: usize,
    /// Publications received in all.
    pub deliveries: u64,
    /// Subscribers × publications.
    pub expected: u64,
    /// Publications whose offset did not follow the one before (lost or
    /// out of order).
    pub gaps: u64,
    /// When the last publication arrived.
    pub last_delivery: Option<Instant>,
    /// Publish-to-delivery latencies (publish stamp to receipt, wall clock).
    pub latencies: Latencies,
    /// The first problem seen.
    pub first_error: Option<String>,
}

/// Open and subscribe every subscriber (subscriber `i` on `targets[i %
/// len]`), and return once each is confirmed or failed; they keep
/// receiving until [`Subscribers::collect`].
pub async fn subscribe(
    targets: &[Target],
    config: &SubscribeConfig,
) -> Result<Subscribers, LoadError> {
    if targets.is_empty() {
        return Err(LoadError::Target("no nodes".into()));
    }
    let deadline = tokio::time::Instant::now() + config.time_limit;
    let request = format!(r#"{{"type":"subscribe","channel":"{}"}}"#, config.channel);
    let permits = Arc::new(Semaphore::new(config.handshakes.max(1)));
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::unbounded_channel::<Result<(), String>>();
    let mut tasks = JoinSet::new();
    for i in 0..config.subscribers {
        let permit = Arc::clone(&permits)
            .acquire_owned()
            .await
            .map_err(|_| LoadError::Protocol("semaphore closed".into()))?;
        let target = targets[i % targets.len()].clone();
        let source = websocket::source_for(&config.sources, i);
        let request = request.clone();
        let ready_tx = ready_tx.clone();
        let messages = config.messages;
        tasks.spawn(async move {
            let opened = async {
                let mut ws = websocket::open(&target, source, Duration::from_secs(20)).await?;
                ws.send(Message::text(request)).await?;
                let text = websocket::next_non_ping(&mut ws).await?;
                match websocket::message_type(&text) {
                    Some("subscribed") => Ok((ws, websocket::field_u64(&text, "offset"))),
                    _ => Err(LoadError::Protocol(format!(
                        "expected subscribed, got {text}"
                    ))),
                }
            };
            let opened = tokio::time::timeout_at(deadline, opened).await;
            drop(permit);
            let (mut ws, mut offset) = match opened {
                Ok(Ok(opened)) => {
                    let _ = ready_tx.send(Ok(()));
                    opened
                }
                Ok(Err(e)) => {
                    let _ = ready_tx.send(Err(e.to_string()));
                    return Seen::default();
                }
                Err(_) => {
                    let _ = ready_tx.send(Err("time limit while subscribing".into()));
                    return Seen::default();
                }
            };
            drop(ready_tx);
            let mut seen = Seen::default();
            while seen.got < messages {
                match tokio::time::timeout_at(deadline, websocket::next_non_ping(&mut ws)).await {
                    Ok(Ok(text)) if websocket::message_type(&text) == Some("publication") => {
                        let now = websocket::wall_micros();
                        if let Some(t) = websocket::field_u64(&text, "t") {
                            seen.latencies.record_micros(now.saturating_sub(t));
                        }
                        let this = websocket::field_u64(&text, "offset");
                        if let (Some(before), Some(this)) = (offset, this) {
                            if this != before + 1 {
                                seen.gaps += 1;
                            }
                        }
                        offset = this;
                        seen.got += 1;
                        seen.last = Some(Instant::now());
                    }
                    Ok(Ok(text)) => {
                        seen.error
                            .get_or_insert(format!("unexpected frame: {text}"));
                        if websocket::message_type(&text) == Some("unsubscribed") {
                            break;
                        }
                    }
                    Ok(Err(e)) => {
                        seen.error.get_or_insert(e.to_string());
                        break;
                    }
                    Err(_) => {
                        seen.error
                            .get_or_insert("time limit before every publication arrived".into());
                        break;
                    }
                }
            }
            let _ = ws.send(Message::close(None, "")).await;
            seen
        });
    }
    drop(ready_tx);
    let mut subscribed = 0usize;
    let mut first_error = None;
    for _ in 0..config.subscribers {
        match tokio::time::timeout_at(deadline, ready_rx.recv()).await {
            Ok(Some(Ok(()))) => subscribed += 1,
            Ok(Some(Err(e))) => {
                first_error.get_or_insert(e);
            }
            Ok(None) | Err(_) => break,
        }
    }
    Ok(Subscribers {
        tasks,
        subscribed,
        first_error,
        messages: config.messages,
    })
}

impl Subscribers {
    /// Wait for every subscriber to have its publications (or its time
    /// limit) and add up what they saw.
    pub async fn collect(mut self) -> DeliveryReport {
        let mut report = DeliveryReport {
            subscribers: self.subscribed,
            deliveries: 0,
            expected: self.subscribed as u64 * self.messages,
            gaps: 0,
            last_delivery: None,
            latencies: Latencies::new(),
            first_error: self.first_error.take(),
        };
        while let Some(done) = self.tasks.join_next().await {
            let Ok(seen) = done else { continue };
            report.deliveries += seen.got;
            report.gaps += seen.gaps;
            report.latencies.merge(seen.latencies);
            report.last_delivery = report.last_delivery.max(seen.last);
            if report.first_error.is_none() {
                report.first_error = seen.error;
            }
        }
        report
    }
}

/// What a node answered `bench.publish` with `wait`.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishAnswer {
    /// Publications done.
    pub published: u64,
    /// Publications refused.
    pub failed: u64,
    /// From the first to the last publication's completion, on the node.
    pub elapsed: Duration,
    /// The channel's epoch.
    pub epoch: String,
    /// The highest offset published.
    pub last_offset: u64,
}

impl PublishAnswer {
    /// Publications per second, as the node measured them.
    pub fn per_sec(&self) -> f64 {
        self.published as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// How to call `bench.publish`.
#[derive(Debug, Clone)]
pub struct PublishRequest {
    /// The channel.
    pub channel: String,
    /// Publications.
    pub messages: u64,
    /// Publications per second in all (1,000,000: back to back).
    pub rate: f64,
    /// Publishing tasks on the node, each awaiting its publications in turn.
    pub concurrency: u64,
    /// Spread over this many channels (`CHANNEL.0` …), publication `n` on
    /// `CHANNEL.{n % channels}`; 1: all on `channel` itself.
    pub channels: u64,
}

/// Open a session on `target`, ask for the publications with `wait`, and
/// return the node's summary, within `bound`.
pub async fn publish(
    target: &Target,
    source: Option<IpAddr>,
    request: &PublishRequest,
    bound: Duration,
) -> Result<PublishAnswer, LoadError> {
    let work = async {
        let mut ws = websocket::open(target, source, Duration::from_secs(20)).await?;
        let frame = serde_json::json!({
            "type": "request",
            "id": 1,
            "method": super::node::PUBLISH_METHOD,
            "params": {
                "channel": request.channel,
                "messages": request.messages,
                "rate": request.rate,
                "concurrency": request.concurrency,
                "channels": request.channels,
                "wait": true,
            },
        });
        ws.send(Message::text(frame.to_string())).await?;
        loop {
            let text = websocket::next_non_ping(&mut ws).await?;
            if websocket::message_type(&text) != Some("response") {
                continue;
            }
            let _ = ws.send(Message::close(None, "")).await;
            return parse_answer(&text);
        }
    };
    tokio::time::timeout(bound, work)
        .await
        .map_err(|_| LoadError::Timeout("waiting for bench.publish"))?
}

fn parse_answer(text: &str) -> Result<PublishAnswer, LoadError> {
    let bad = || LoadError::Protocol(format!("unexpected bench.publish answer {text}"));
    let value: Value = serde_json::from_str(text).map_err(|_| bad())?;
    let result = value.get("result").ok_or_else(bad)?;
    Ok(PublishAnswer {
        published: result["published"].as_u64().ok_or_else(bad)?,
        failed: result["failed"].as_u64().unwrap_or(0),
        elapsed: Duration::from_micros(result["elapsed_us"].as_u64().ok_or_else(bad)?),
        epoch: result["epoch"].as_str().unwrap_or_default().to_owned(),
        last_offset: result["last_offset"].as_u64().unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse() {
        let a = parse_answer(
            r#"{"type":"response","id":1,"result":{"published":5,"failed":0,"elapsed_us":2000,"epoch":"e1","last_offset":9}}"#,
        )
        .expect("answer");
        assert_eq!(a.published, 5);
        assert_eq!(a.last_offset, 9);
        assert_eq!(a.per_sec(), 2_500.0);
        assert!(parse_answer(r#"{"type":"response","id":1,"error":{"code":"x"}}"#).is_err());
    }
}
