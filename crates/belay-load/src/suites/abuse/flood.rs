//! The loop most abuses are made of: N sessions from the attacker's
//! address, each sending frames (paced or flat out), reading and counting
//! what comes back (or never reading), and reopening when the server
//! closes it, until the attack ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::future::join_all;
use futures_util::{Sink, SinkExt, StreamExt};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_websockets::Message;

use super::attack::{answer_kind, Attack};
use crate::clients::websocket::Session;

/// How the sessions of a flood behave.
#[derive(Debug, Clone)]
pub struct Flood<F> {
    /// Sessions at once.
    pub sessions: usize,
    /// Frames per second per session (`None`: as fast as it can).
    pub rate: Option<f64>,
    /// Whether the sessions read (and count) what the server sends; a
    /// session that does not read never answers pings either.
    pub read: bool,
    /// Frames sent once after `welcome`, before the flood.
    pub setup: Vec<String>,
    /// Frames per session and opening; after that it holds the session
    /// open (reading, if it reads) until the attack ends.
    pub frames_per_session: u64,
    /// How often a slot opens a new session after the server closed one.
    pub reopens: usize,
    /// Frame `n` (counting across a slot's sessions) of slot `slot`.
    pub frame: F,
}

impl<F: Fn(usize, u64) -> Message> Flood<F> {
    /// `sessions` sessions sending `frame` at `rate`, reading, reopening up
    /// to 20 times, with no frame limit.
    pub fn new(sessions: usize, rate: Option<f64>, frame: F) -> Self {
        Flood {
            sessions,
            rate,
            read: true,
            setup: Vec::new(),
            frames_per_session: u64::MAX,
            reopens: 20,
            frame,
        }
    }

    /// Run the flood until the attack ends.
    pub async fn run(&self, attack: &Attack) {
        let sessions = self.sessions.min(attack.fd_budget);
        join_all((0..sessions).map(|slot| self.slot(attack, slot))).await;
    }

    async fn slot(&self, attack: &Attack, slot: usize) {
        let mut n = 0;
        for _ in 0..=self.reopens {
            if !attack.running() {
                return;
            }
            match attack.open().await {
                Some(ws) => self.session(attack, slot, ws, &mut n).await,
                // Refused: try again a little later.
                None => {
                    attack
                        .bounded(tokio::time::sleep(Duration::from_millis(100)))
                        .await;
                }
            }
        }
    }

    async fn session(&self, attack: &Attack, slot: usize, ws: Session, n: &mut u64) {
        let (mut sink, mut stream) = ws.split();
        // Flat out and reading: frames not yet answered, at most WINDOW.
        let window = (self.read && self.rate.is_none()).then(Window::default);
        let writer = async {
            for frame in &self.setup {
                if !send(attack, &mut sink, Message::text(frame.clone()), true).await {
                    return;
                }
            }
            if self
                .write(attack, slot, &mut sink, n, window.as_ref())
                .await
            {
                // Hold the session until the end (the reader may still count).
                tokio::time::sleep_until(attack.until).await;
            }
        };
        if !self.read {
            writer.await;
            return;
        }
        let reader = async {
            while let Some(Some(Ok(message))) = attack.bounded(stream.next()).await {
                attack.effort.received.fetch_add(1, Ordering::Relaxed);
                if let Some(window) = &window {
                    window.answered();
                }
                if message.is_pong() {
                    attack.effort.note("ws pong", 1);
                }
                if let Some((code, _)) = message.as_close() {
                    attack.effort.note(&format!("close {}", u16::from(code)), 1);
                    return;
                }
                if let Some(text) = message.as_text() {
                    attack.effort.note(&answer_kind(text), 1);
                }
            }
        };
        tokio::select! {
            () = writer => {}
            () = reader => {}
        }
    }

    /// Send frames until the attack ends, the frame budget is spent or a
    /// send fails (`false` then).
    async fn write<S>(
        &self,
        attack: &Attack,
        slot: usize,
        sink: &mut S,
        n: &mut u64,
        window: Option<&Window>,
    ) -> bool
    where
        S: Sink<Message> + Unpin,
    {
        let batch_every = Duration::from_millis(100);
        let per_batch = self.rate.map(|r| r * batch_every.as_secs_f64());
        let mut owed = 0.0;
        let mut next = Instant::now();
        let mut left = self.frames_per_session;
        while attack.running() && left > 0 {
            let count = match per_batch {
                Some(frames) => {
                    owed += frames;
                    let whole = owed.floor();
                    owed -= whole;
                    whole as u64
                }
                None => 32,
            };
            for _ in 0..count.min(left) {
                if let Some(window) = window {
                    if !window.sent(attack).await {
                        return true;
                    }
                }
                *n += 1;
                left -= 1;
                if !send(attack, sink, (self.frame)(slot, *n), false).await {
                    return false;
                }
            }
            match attack.bounded(sink.flush()).await {
                Some(Ok(())) => {}
                Some(Err(_)) => return false,
                None => return true,
            }
            if per_batch.is_some() {
                next += batch_every;
                attack.bounded(tokio::time::sleep_until(next)).await;
            } else {
                // Flat out: let this session's reader (and the others) run.
                tokio::task::yield_now().await;
            }
        }
        true
    }
}

/// Frames a flat-out reading session may have unanswered: it floods as
/// fast as the server answers, instead of being closed as a slow reader.
pub const WINDOW: u64 = 256;

/// Frames in flight of one session, shared by its writer and its reader.
#[derive(Debug, Default)]
struct Window {
    in_flight: AtomicU64,
    answered: Notify,
}

impl Window {
    /// Account for one more frame to send, first waiting (100 ms at most,
    /// in case the server answers no more) while [`WINDOW`] are in flight;
    /// `false` when the attack ended meanwhile.
    async fn sent(&self, attack: &Attack) -> bool {
        if self.in_flight.load(Ordering::Relaxed) >= WINDOW {
            let wait = tokio::time::timeout(Duration::from_millis(100), self.answered.notified());
            if attack.bounded(wait).await.is_none() {
                return false;
            }
        }
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// One frame came back.
    fn answered(&self) {
        let _ = self
            .in_flight
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(n.saturating_sub(1))
            });
        self.answered.notify_one();
    }
}

/// Send `message` (flushing if `flush`), counted; `false` when the
/// connection failed or the attack ended.
pub async fn send<S>(attack: &Attack, sink: &mut S, message: Message, flush: bool) -> bool
where
    S: Sink<Message> + Unpin,
{
    let len = message.as_payload().len();
    let sent = if flush {
        attack.bounded(sink.send(message)).await
    } else {
        attack.bounded(sink.feed(message)).await
    };
    match sent {
        Some(Ok(())) => {
            attack.effort.sent_frame(len);
            true
        }
        Some(Err(_)) => {
            attack.effort.note("send failed", 1);
            false
        }
        None => false,
    }
}
