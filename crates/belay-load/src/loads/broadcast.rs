//! Broadcast fan-out: S subscribers of one channel; a publisher session asks
//! the server (method `bench.publish`) to publish M messages at X per second,
//! each stamped with its publish time; subscribers measure delivery latency.
//! With [`Publisher::Http`] the load itself publishes the same messages
//! through the server's HTTP API instead ([`crate::loads::http_publish`]).

use std::net::IpAddr;
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_websockets::Message;

use belay_proto::message::{ClientMessage, Codec, MessageKind, Subscribe};

use crate::clients::target::Target;
use crate::clients::{websocket, wire};
use crate::loads::http_publish::{self, HttpPublishReport, HttpPublisher};
use crate::measure::stats::Latencies;
use crate::LoadError;

/// The method the bench servers expose to start publishing.
pub const PUBLISH_METHOD: &str = "bench.publish";

/// Who publishes.
#[derive(Debug, Clone, Default)]
pub enum Publisher {
    /// A session asks the server to publish (method `bench.publish`, which
    /// calls `Server::publish`), stamped when each publish starts.
    #[default]
    Method,
    /// The load posts each message to the server's `POST /api/publish`,
    /// stamped when each request is written.
    Http(HttpPublisher),
}

/// How to run the broadcast load.
#[derive(Debug, Clone)]
pub struct BroadcastConfig {
    /// Subscribers (at most 1,000,000).
    pub subscribers: usize,
    /// Publications (at most 100,000).
    pub messages: u64,
    /// Publications per second.
    pub rate: f64,
    /// The channel.
    pub channel: String,
    /// Source addresses, round-robin.
    pub sources: Vec<IpAddr>,
    /// Bound on the whole run.
    pub time_limit: Duration,
    /// Who publishes.
    pub publisher: Publisher,
    /// The codec the subscribers ask for (JSON: none offered); the
    /// publisher session speaks JSON.
    pub codec: Codec,
}

impl BroadcastConfig {
    /// `subscribers` of `bench`, `messages` at `rate`/s, within 180 s.
    pub fn new(subscribers: usize, messages: u64, rate: f64) -> Self {
        BroadcastConfig {
            subscribers: subscribers.min(1_000_000),
            messages: messages.min(100_000),
            rate: rate.clamp(0.1, 1_000_000.0),
            channel: "bench".into(),
            sources: Vec::new(),
            time_limit: Duration::from_secs(180),
            publisher: Publisher::Method,
            codec: Codec::Json,
        }
    }
}

/// What the broadcast load measured.
#[derive(Debug)]
pub struct BroadcastReport {
    /// Subscribers confirmed.
    pub subscribers: usize,
    /// Publications requested.
    pub messages: u64,
    /// Publications received, over all subscribers.
    pub deliveries: u64,
    /// Deliveries expected (subscribers × messages).
    pub expected: u64,
    /// From the publish request to the last delivery.
    pub elapsed: Duration,
    /// Publish-to-delivery latencies.
    pub latencies: Latencies,
    /// The first problem seen, if any.
    pub first_error: Option<String>,
    /// With [`Publisher::Http`]: what the HTTP publisher saw.
    pub http: Option<HttpPublishReport>,
    /// From the earliest to the latest publish stamp delivered: how long
    /// the publisher took to issue the messages (`None` without deliveries).
    pub publish_span: Option<Duration>,
}

impl BroadcastReport {
    /// Deliveries per second.
    pub fn deliveries_per_sec(&self) -> f64 {
        self.deliveries as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Run the load.
pub async fn run(target: &Target, config: &BroadcastConfig) -> Result<BroadcastReport, LoadError> {
    let deadline = tokio::time::Instant::now() + config.time_limit;
    let subscribe = wire::frame(
        config.codec,
        &ClientMessage::Subscribe(Subscribe {
            channel: config.channel.clone(),
            since: None,
            token: None,
        }),
    );
    // Open and subscribe, 256 at a time; each task then waits for its deliveries.
    let permits = std::sync::Arc::new(Semaphore::new(256));
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::unbounded_channel::<Result<(), String>>();
    let mut tasks = JoinSet::new();
    for i in 0..config.subscribers {
        let permit = Semaphore::acquire_owned(std::sync::Arc::clone(&permits))
            .await
            .map_err(|_| LoadError::Protocol("semaphore closed".into()))?;
        let target = target.clone();
        let source = websocket::source_for(&config.sources, i);
        let subscribe = subscribe.clone();
        let ready_tx = ready_tx.clone();
        let messages = config.messages;
        let codec = config.codec;
        tasks.spawn(async move {
            let opened = async {
                let mut ws = wire::open(&target, source, Duration::from_secs(10), codec).await?;
                ws.send(subscribe).await?;
                let answer = wire::next_non_ping(&mut ws, codec).await?;
                if answer.kind() != Some(MessageKind::Subscribed) {
                    return Err(LoadError::Protocol(format!(
                        "expected subscribed, got {}",
                        answer.describe()
                    )));
                }
                Ok(ws)
            };
            let opened = tokio::time::timeout_at(deadline, opened).await;
            drop(permit);
            let mut ws = match opened {
                Ok(Ok(ws)) => {
                    let _ = ready_tx.send(Ok(()));
                    ws
                }
                Ok(Err(e)) => {
                    let _ = ready_tx.send(Err(e.to_string()));
                    return (0, Latencies::new(), None, None, None);
                }
                Err(_) => {
                    let _ = ready_tx.send(Err("time limit while subscribing".into()));
                    return (0, Latencies::new(), None, None, None);
                }
            };
            drop(ready_tx);
            let mut latencies = Latencies::new();
            let mut got = 0u64;
            let mut last = None;
            // The earliest and latest publish stamps this subscriber saw.
            let mut stamps: Option<(u64, u64)> = None;
            let mut error = None;
            while got < messages {
                match tokio::time::timeout_at(deadline, wire::next_non_ping(&mut ws, codec)).await {
                    Ok(Ok(frame)) if frame.kind() == Some(MessageKind::Publication) => {
                        let now = websocket::wall_micros();
                        if let Some(t) = frame.payload_u64("t") {
                            latencies.record_micros(now.saturating_sub(t));
                            stamps = Some(match stamps {
                                Some((lo, hi)) => (lo.min(t), hi.max(t)),
                                None => (t, t),
                            });
                        }
                        got += 1;
                        last = Some(Instant::now());
                    }
                    Ok(Ok(frame)) => {
                        error.get_or_insert(format!("unexpected frame: {}", frame.describe()));
                    }
                    Ok(Err(e)) => {
                        error.get_or_insert(e.to_string());
                        break;
                    }
                    Err(_) => {
                        error.get_or_insert("time limit before every publication arrived".into());
                        break;
                    }
                }
            }
            let _ = ws.send(Message::close(None, "")).await;
            (got, latencies, last, error, stamps)
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
    let publisher_source = websocket::source_for(&config.sources, config.subscribers);
    let mut report = BroadcastReport {
        subscribers: subscribed,
        messages: config.messages,
        deliveries: 0,
        expected: subscribed as u64 * config.messages,
        elapsed: Duration::ZERO,
        latencies: Latencies::new(),
        first_error,
        http: None,
        publish_span: None,
    };
    let (start, publisher_task) = match &config.publisher {
        Publisher::Method => {
            // One more session asks the server to publish.
            let mut publisher =
                websocket::open(target, publisher_source, Duration::from_secs(10)).await?;
            let start = Instant::now();
            let request = format!(
                r#"{{"type":"request","id":1,"method":"{PUBLISH_METHOD}","params":{{"channel":"{}","messages":{},"rate":{}}}}}"#,
                config.channel, config.messages, config.rate
            );
            publisher.send(Message::text(request)).await?;
            // Keep the publisher session answering pings while the subscribers work.
            let task = tokio::spawn(async move {
                loop {
                    if websocket::next_non_ping(&mut publisher).await.is_err() {
                        return None;
                    }
                }
            });
            (start, task)
        }
        Publisher::Http(http) => {
            let (target, http) = (target.clone(), http.clone());
            let (channel, messages, rate) = (config.channel.clone(), config.messages, config.rate);
            let start = Instant::now();
            let task = tokio::spawn(async move {
                Some(
                    http_publish::run(
                        &target,
                        publisher_source,
                        &http,
                        &channel,
                        messages,
                        rate,
                        deadline,
                    )
                    .await,
                )
            });
            (start, task)
        }
    };
    let mut last_delivery = start;
    let mut stamps: Option<(u64, u64)> = None;
    while let Some(done) = tasks.join_next().await {
        let Ok((got, latencies, last, error, seen)) = done else {
            continue;
        };
        report.deliveries += got;
        report.latencies.merge(latencies);
        if let Some((lo, hi)) = seen {
            stamps = Some(match stamps {
                Some((a, b)) => (lo.min(a), hi.max(b)),
                None => (lo, hi),
            });
        }
        if let Some(last) = last {
            last_delivery = last_delivery.max(last);
        }
        if report.first_error.is_none() {
            report.first_error = error;
        }
    }
    if matches!(config.publisher, Publisher::Http(_)) {
        match publisher_task.await {
            Ok(Some(Ok(http))) => {
                if report.first_error.is_none() {
                    report.first_error.clone_from(&http.first_error);
                }
                report.http = Some(http);
            }
            Ok(Some(Err(e))) => {
                report.first_error.get_or_insert(e.to_string());
            }
            Ok(None) | Err(_) => {
                report
                    .first_error
                    .get_or_insert("the HTTP publisher failed".into());
            }
        }
    } else {
        publisher_task.abort();
    }
    report.elapsed = last_delivery.saturating_duration_since(start);
    report.publish_span = stamps.map(|(lo, hi)| Duration::from_micros(hi - lo));
    Ok(report)
}
