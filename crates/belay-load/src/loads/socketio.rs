//! The idle, echo and broadcast loads of [`crate::loads::idle`], [`crate::loads::echo`]
//! and [`crate::loads::broadcast`], in socket.io: the same counts, bounds and
//! reports, with the socket.io client of [`crate::clients::socketio`].
//!
//! * idle: N sessions that answer engine.io pings with pongs;
//! * echo: C sessions × R sequential `42N["echo",N]`, each answered by
//!   the ack `43N[N]`;
//! * broadcast: S sessions `subscribe` (acknowledged) to one room; one more
//!   emits `bench.publish` and the server emits M stamped `publication`
//!   events to the room at X per second.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tokio_websockets::Message;

use crate::clients::socketio::{self, emit_with_ack, event_name, Packet};
use crate::clients::target::Target;
use crate::clients::websocket::{self, Session};
use crate::loads::broadcast::{BroadcastConfig, BroadcastReport, PUBLISH_METHOD};
use crate::loads::echo::{EchoConfig, EchoReport};
use crate::loads::idle::IdleConfig;
use crate::measure::stats::Latencies;
use crate::LoadError;

/// socket.io sessions held open until [`Fleet::close`].
#[derive(Debug)]
pub struct Fleet {
    /// Sessions that got connected.
    pub opened: usize,
    /// Sessions that failed to open.
    pub failed: usize,
    /// The first failure, if any.
    pub first_error: Option<String>,
    /// Time to open the fleet.
    pub open_time: Duration,
    alive: Arc<AtomicUsize>,
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
}

impl Fleet {
    /// Sessions still open now.
    pub fn alive(&self) -> usize {
        self.alive.load(Ordering::Relaxed)
    }

    /// Close every session (close frame, no wait for the answer) and wait,
    /// at most 30 s, for every task to end.
    pub async fn close(mut self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(30), async {
            while self.tasks.join_next().await.is_some() {}
        })
        .await;
        self.tasks.abort_all();
    }
}

/// Open `config.connections` socket.io sessions (as [`crate::loads::idle::open`]
/// opens Belay sessions: `concurrency` handshakes at a time, each within
/// `open_timeout`, all within `total_timeout`); each answers pings until
/// [`Fleet::close`].
pub async fn open_idle(target: &Target, config: &IdleConfig) -> Fleet {
    let start = Instant::now();
    let deadline = tokio::time::Instant::now() + config.total_timeout;
    let permits = Arc::new(Semaphore::new(config.concurrency.max(1)));
    let alive = Arc::new(AtomicUsize::new(0));
    let (stop, stop_rx) = watch::channel(false);
    let (result_tx, mut result_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut tasks = JoinSet::new();
    let mut spawned = 0usize;
    for i in 0..config.connections {
        let Ok(Ok(permit)) =
            tokio::time::timeout_at(deadline, Arc::clone(&permits).acquire_owned()).await
        else {
            break;
        };
        let target = target.clone();
        let source = websocket::source_for(&config.sources, i);
        let bound = config.open_timeout;
        let alive = Arc::clone(&alive);
        let mut stop = stop_rx.clone();
        let result_tx = result_tx.clone();
        tasks.spawn(async move {
            let opened = socketio::open(&target, source, bound).await;
            drop(permit);
            let mut ws = match opened {
                Ok(ws) => {
                    alive.fetch_add(1, Ordering::Relaxed);
                    let _ = result_tx.send(None);
                    ws
                }
                Err(e) => {
                    let _ = result_tx.send(Some(e.to_string()));
                    return;
                }
            };
            drop(result_tx);
            tokio::select! {
                _ = hold(&mut ws) => {}
                _ = stop.changed() => {
                    let _ = ws.send(Message::close(None, "")).await;
                }
            }
            alive.fetch_sub(1, Ordering::Relaxed);
        });
        spawned += 1;
    }
    drop(result_tx);
    let (mut opened, mut failed, mut first_error) = (0, 0, None);
    while opened + failed < spawned {
        let Ok(Some(result)) = tokio::time::timeout_at(deadline, result_rx.recv()).await else {
            break;
        };
        match result {
            None => opened += 1,
            Some(e) => {
                failed += 1;
                first_error.get_or_insert(e);
            }
        }
    }
    Fleet {
        opened,
        failed,
        first_error,
        open_time: start.elapsed(),
        alive,
        stop,
        tasks,
    }
}

/// Answer pings until the server closes.
async fn hold(ws: &mut Session) {
    while socketio::next_non_ping(ws).await.is_ok() {}
}

/// The echo load in socket.io: sessions open first, then the requests
/// start together; each session sends its next event when the previous one
/// was acknowledged.
pub async fn echo(target: &Target, config: &EchoConfig) -> Result<EchoReport, LoadError> {
    let deadline = tokio::time::Instant::now() + config.time_limit;
    let mut sessions = Vec::with_capacity(config.connections);
    for i in 0..config.connections {
        let source = websocket::source_for(&config.sources, i);
        let ws = tokio::time::timeout_at(
            deadline,
            socketio::open(target, source, Duration::from_secs(10)),
        )
        .await
        .map_err(|_| LoadError::Timeout("opening the echo sessions"))??;
        sessions.push(ws);
    }
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for mut ws in sessions {
        let requests = config.requests as u64;
        let method = config.method.clone();
        tasks.spawn(async move {
            let (mut completed, mut failed, mut error) = (0u64, 0u64, None);
            let mut latencies = Latencies::new();
            for id in 1..=requests {
                let sent = Instant::now();
                let frame = Message::text(emit_with_ack(id, &method, &id.to_string()));
                let result = tokio::time::timeout_at(deadline, async {
                    ws.send(frame).await?;
                    socketio::next_non_ping(&mut ws).await
                })
                .await;
                match result {
                    Ok(Ok(text)) => match socketio::parse(&text) {
                        Packet::Ack { id: got, args } if got == id && args == format!("[{id}]") => {
                            completed += 1;
                            latencies.record(sent.elapsed());
                        }
                        _ => {
                            failed += 1;
                            error.get_or_insert(format!("unexpected answer {text:?}"));
                        }
                    },
                    Ok(Err(e)) => {
                        failed += requests - id + 1;
                        error.get_or_insert(e.to_string());
                        break;
                    }
                    Err(_) => {
                        failed += requests - id + 1;
                        error.get_or_insert("time limit reached".into());
                        break;
                    }
                }
            }
            let _ = ws.send(Message::close(None, "")).await;
            (completed, failed, error, latencies)
        });
    }
    let mut report = EchoReport {
        sessions: config.connections,
        completed: 0,
        failed: 0,
        first_error: None,
        elapsed: Duration::ZERO,
        latencies: Latencies::new(),
    };
    while let Some(done) = tasks.join_next().await {
        let Ok((completed, failed, error, latencies)) = done else {
            continue;
        };
        report.completed += completed;
        report.failed += failed;
        if report.first_error.is_none() {
            report.first_error = error;
        }
        report.latencies.merge(latencies);
    }
    report.elapsed = start.elapsed();
    Ok(report)
}

/// What one subscriber saw: deliveries, latencies, the last delivery, the
/// first problem, the earliest and latest stamps.
type Received = (
    u64,
    Latencies,
    Option<Instant>,
    Option<String>,
    Option<(u64, u64)>,
);

/// The broadcast load in socket.io (the publisher is always a session
/// emitting `bench.publish`; `config.publisher` and `config.codec` do not
/// apply).
pub async fn broadcast(
    target: &Target,
    config: &BroadcastConfig,
) -> Result<BroadcastReport, LoadError> {
    let deadline = tokio::time::Instant::now() + config.time_limit;
    let subscribe = emit_with_ack(1, "subscribe", &format!("\"{}\"", config.channel));
    let permits = Arc::new(Semaphore::new(256));
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::unbounded_channel::<Result<(), String>>();
    let mut tasks: JoinSet<Received> = JoinSet::new();
    for i in 0..config.subscribers {
        let permit = Semaphore::acquire_owned(Arc::clone(&permits))
            .await
            .map_err(|_| LoadError::Protocol("semaphore closed".into()))?;
        let target = target.clone();
        let source = websocket::source_for(&config.sources, i);
        let subscribe = subscribe.clone();
        let ready_tx = ready_tx.clone();
        let messages = config.messages;
        tasks.spawn(async move {
            let opened = async {
                let mut ws = socketio::open(&target, source, Duration::from_secs(10)).await?;
                ws.send(Message::text(subscribe)).await?;
                let answer = socketio::next_non_ping(&mut ws).await?;
                if !matches!(socketio::parse(&answer), Packet::Ack { id: 1, .. }) {
                    return Err(LoadError::Protocol(format!(
                        "expected the subscribe ack, got {answer:?}"
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
            let received = receive(&mut ws, messages, deadline).await;
            let _ = ws.send(Message::close(None, "")).await;
            received
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
    let mut publisher = socketio::open(target, publisher_source, Duration::from_secs(10)).await?;
    let start = Instant::now();
    let params = format!(
        r#"{{"channel":"{}","messages":{},"rate":{}}}"#,
        config.channel, config.messages, config.rate
    );
    publisher
        .send(Message::text(emit_with_ack(1, PUBLISH_METHOD, &params)))
        .await?;
    // Keep the publisher session answering pings while the subscribers work.
    let publisher_task = tokio::spawn(async move { hold(&mut publisher).await });
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
    publisher_task.abort();
    report.elapsed = last_delivery.saturating_duration_since(start);
    report.publish_span = stamps.map(|(lo, hi)| Duration::from_micros(hi - lo));
    Ok(report)
}

/// Read `messages` publications (or until the deadline or a failure).
async fn receive(ws: &mut Session, messages: u64, deadline: tokio::time::Instant) -> Received {
    let mut latencies = Latencies::new();
    let (mut got, mut last, mut stamps, mut error) = (0u64, None, None, None);
    while got < messages {
        match tokio::time::timeout_at(deadline, socketio::next_non_ping(ws)).await {
            Ok(Ok(text)) => match socketio::parse(&text) {
                Packet::Event(args) if event_name(args) == Some("publication") => {
                    let now = websocket::wall_micros();
                    if let Some(t) = websocket::field_u64(args, "t") {
                        latencies.record_micros(now.saturating_sub(t));
                        stamps = Some(match stamps {
                            Some((lo, hi)) => (t.min(lo), t.max(hi)),
                            None => (t, t),
                        });
                    }
                    got += 1;
                    last = Some(Instant::now());
                }
                _ => {
                    error.get_or_insert(format!("unexpected packet {text:?}"));
                }
            },
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
    (got, latencies, last, error, stamps)
}
