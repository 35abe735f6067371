//! Idle sessions: open N, answer pings, hold them, close them.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;
use tokio_websockets::Message;

use crate::clients::sse::SseSession;
use crate::clients::target::Target;
use crate::clients::websocket::{self, Session};
use crate::LoadError;

/// How to open the fleet.
#[derive(Debug, Clone)]
pub struct IdleConfig {
    /// Sessions to open (at most 1,000,000).
    pub connections: usize,
    /// Source addresses, used round-robin (empty: let the kernel choose).
    pub sources: Vec<IpAddr>,
    /// Handshakes in flight at once.
    pub concurrency: usize,
    /// Bound on opening one session.
    pub open_timeout: Duration,
    /// Bound on opening the whole fleet.
    pub total_timeout: Duration,
    /// Open the sessions over the SSE fallback instead of WebSocket.
    pub sse: bool,
}

impl IdleConfig {
    /// `connections` sessions, 256 handshakes at a time, 10 s per session,
    /// 300 s in all.
    pub fn new(connections: usize, sources: Vec<IpAddr>) -> Self {
        IdleConfig {
            connections: connections.min(1_000_000),
            sources,
            concurrency: 256,
            open_timeout: Duration::from_secs(10),
            total_timeout: Duration::from_secs(300),
            sse: false,
        }
    }
}

/// Sessions held open until [`Fleet::close`].
#[derive(Debug)]
pub struct Fleet {
    /// Sessions that got `welcome`.
    pub opened: usize,
    /// Sessions that failed to open, with the first error seen.
    pub failed: usize,
    /// The first failure, if any.
    pub first_error: Option<String>,
    /// Time to open the fleet.
    pub open_time: Duration,
    alive: Arc<AtomicUsize>,
    traffic: Arc<Traffic>,
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
}

/// Heartbeat traffic of a WebSocket fleet since it opened, counted by the
/// sessions: frames and their bytes on the wire (payload and WebSocket
/// header; TCP/IP not counted), in each direction.
#[derive(Debug, Default)]
pub struct Traffic {
    frames_down: AtomicU64,
    bytes_down: AtomicU64,
    frames_up: AtomicU64,
    bytes_up: AtomicU64,
}

/// One reading of [`Traffic`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrafficCount {
    /// Frames the server sent.
    pub frames_down: u64,
    /// Their bytes.
    pub bytes_down: u64,
    /// Frames the clients sent.
    pub frames_up: u64,
    /// Their bytes.
    pub bytes_up: u64,
}

impl TrafficCount {
    /// What happened between `earlier` and this reading.
    pub fn since(self, earlier: TrafficCount) -> TrafficCount {
        TrafficCount {
            frames_down: self.frames_down - earlier.frames_down,
            bytes_down: self.bytes_down - earlier.bytes_down,
            frames_up: self.frames_up - earlier.frames_up,
            bytes_up: self.bytes_up - earlier.bytes_up,
        }
    }
}

impl Traffic {
    fn read(&self) -> TrafficCount {
        TrafficCount {
            frames_down: self.frames_down.load(Ordering::Relaxed),
            bytes_down: self.bytes_down.load(Ordering::Relaxed),
            frames_up: self.frames_up.load(Ordering::Relaxed),
            bytes_up: self.bytes_up.load(Ordering::Relaxed),
        }
    }

    fn down(&self, payload: usize) {
        self.frames_down.fetch_add(1, Ordering::Relaxed);
        self.bytes_down
            .fetch_add(frame_len(payload, false) as u64, Ordering::Relaxed);
    }

    fn up(&self, payload: usize) {
        self.frames_up.fetch_add(1, Ordering::Relaxed);
        self.bytes_up
            .fetch_add(frame_len(payload, true) as u64, Ordering::Relaxed);
    }
}

/// A WebSocket frame's length on the wire (RFC 6455 §5.2): a 2-byte
/// header, 2 or 8 more for longer payloads, 4 for a client's mask.
fn frame_len(payload: usize, masked: bool) -> usize {
    let extended = match payload {
        0..=125 => 0,
        126..=65_535 => 2,
        _ => 8,
    };
    2 + extended + if masked { 4 } else { 0 } + payload
}

impl Fleet {
    /// The heartbeat traffic since the fleet opened (WebSocket sessions).
    pub fn traffic(&self) -> TrafficCount {
        self.traffic.read()
    }

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

/// Open the fleet; every session answers pings until [`Fleet::close`].
pub async fn open(target: &Target, config: &IdleConfig) -> Fleet {
    let start = Instant::now();
    let deadline = tokio::time::Instant::now() + config.total_timeout;
    let permits = Arc::new(Semaphore::new(config.concurrency.max(1)));
    let alive = Arc::new(AtomicUsize::new(0));
    let traffic = Arc::new(Traffic::default());
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
        let traffic = Arc::clone(&traffic);
        let mut stop = stop_rx.clone();
        let result_tx = result_tx.clone();
        let sse = config.sse;
        tasks.spawn(async move {
            let opened = if sse {
                SseSession::open(&target, source, bound)
                    .await
                    .map(Held::Sse)
            } else {
                websocket::open(&target, source, bound)
                    .await
                    .map(Held::WebSocket)
            };
            drop(permit);
            let ws = match opened {
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
            hold(ws, &traffic, &mut stop).await;
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
        traffic,
        stop,
        tasks,
    }
}

/// One open session of either kind.
enum Held {
    WebSocket(Session),
    Sse(SseSession),
}

/// Answer pings until told to stop or the server closes, counting the
/// frames both ways.
async fn hold(held: Held, traffic: &Traffic, stop: &mut watch::Receiver<bool>) {
    let mut ws = match held {
        Held::WebSocket(ws) => ws,
        Held::Sse(mut sse) => {
            tokio::select! {
                _ = sse.next_non_ping() => {}
                _ = stop.changed() => sse.close().await,
            }
            return;
        }
    };
    loop {
        tokio::select! {
            text = websocket::next_text(&mut ws) => match text {
                Ok(text) if websocket::message_type(&text) == Some("ping") => {
                    traffic.down(text.len());
                    if ws.send(Message::text(websocket::PONG)).await.is_err() {
                        return;
                    }
                    traffic.up(websocket::PONG.len());
                }
                Ok(text) => traffic.down(text.len()),
                Err(_) => return,
            },
            _ = stop.changed() => {
                let _ = ws.send(Message::close(None, "")).await;
                return;
            }
        }
    }
}

/// What `belay load idle` reports.
#[derive(Debug)]
pub struct IdleReport {
    /// Sessions that got `welcome`.
    pub opened: usize,
    /// Sessions that failed to open.
    pub failed: usize,
    /// The first failure, if any.
    pub first_error: Option<String>,
    /// Time to open them.
    pub open_time: Duration,
    /// Sessions still open at the end of the hold.
    pub alive_after_hold: usize,
}

/// Open, hold for `hold`, close.
pub async fn run(
    target: &Target,
    config: &IdleConfig,
    hold: Duration,
) -> Result<IdleReport, LoadError> {
    let fleet = open(target, config).await;
    tokio::time::sleep(hold).await;
    let report = IdleReport {
        opened: fleet.opened,
        failed: fleet.failed,
        first_error: fleet.first_error.clone(),
        open_time: fleet.open_time,
        alive_after_hold: fleet.alive(),
    };
    fleet.close().await;
    Ok(report)
}
