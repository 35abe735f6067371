//! The fleet of a herd run: real [`belay_client::Client`]s, each running the
//! core's `Session` with the run's configuration, and what they record.
//!
//! * Every dial is recorded as the client makes it: the driver announces
//!   each dial (`ClientEvent::Connecting`) just before it dials, and a small
//!   task per client notes the instant.
//! * Every change of a client's readiness (`Status::ready`: transport,
//!   protocol and service up) is recorded by a small task per client
//!   watching its status, which also keeps the counts the run waits on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use belay_client::{BuildError, Client, ClientEvent};
use belay_proto::Config;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinSet;

use super::figures::ReadyChange;

/// How many clients are ready now, and how many of those became ready
/// after the kill.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Clients ready now.
    pub ready: usize,
    /// Clients ready now whose readiness began after the kill.
    pub ready_since_kill: usize,
}

/// What the fleet records, with one origin for every instant.
#[derive(Debug)]
struct Log {
    origin: Instant,
    killed: AtomicBool,
    dials: Mutex<Vec<Instant>>,
    changes: Mutex<Vec<(Instant, bool)>>,
    counts: watch::Sender<Counts>,
}

/// N clients against one URL.
pub struct Fleet {
    log: Arc<Log>,
    clients: Vec<Client>,
    watchers: JoinSet<()>,
}

impl Fleet {
    /// An empty fleet.
    pub fn new() -> Fleet {
        Fleet {
            log: Arc::new(Log {
                origin: Instant::now(),
                killed: AtomicBool::new(false),
                dials: Mutex::default(),
                changes: Mutex::default(),
                counts: watch::Sender::new(Counts::default()),
            }),
            clients: Vec::new(),
            watchers: JoinSet::new(),
        }
    }

    /// Start one more client on `url` with `config` and core seed `seed`
    /// (an unusable `url` starts none).
    pub fn add(&mut self, url: &str, config: &Config, seed: u64) -> Result<(), BuildError> {
        let client = Client::builder(url)
            .config(config.clone())
            .seed(seed)
            // WebSocket only: the bench measures dials, not the fallback.
            .fallback(None)
            .connect()?;
        let mut events = client.events();
        let dials = Arc::clone(&self.log);
        self.watchers.spawn(async move {
            loop {
                match events.recv().await {
                    Ok(ClientEvent::Connecting { .. }) => lock(&dials.dials).push(Instant::now()),
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => break,
                }
            }
        });
        let mut status = client.status();
        let log = Arc::clone(&self.log);
        self.watchers.spawn(async move {
            let mut ready = false;
            let mut since_kill = false;
            loop {
                let now_ready = status.borrow_and_update().ready;
                if now_ready != ready {
                    ready = now_ready;
                    lock(&log.changes).push((Instant::now(), ready));
                    let after_kill = log.killed.load(Ordering::Acquire);
                    log.counts.send_modify(|counts| {
                        if ready {
                            counts.ready += 1;
                            if after_kill {
                                since_kill = true;
                                counts.ready_since_kill += 1;
                            }
                        } else {
                            counts.ready -= 1;
                            if since_kill {
                                since_kill = false;
                                counts.ready_since_kill -= 1;
                            }
                        }
                    });
                }
                if status.changed().await.is_err() {
                    return;
                }
            }
        });
        self.clients.push(client);
        Ok(())
    }

    /// Clients started.
    pub fn len(&self) -> usize {
        self.clients.len()
    }

    /// Whether no client was started.
    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// Wait until `want` holds for the counts, or `bound` passes; the
    /// counts then.
    pub async fn wait_for(&self, want: impl Fn(&Counts) -> bool, bound: Duration) -> Counts {
        let mut counts = self.log.counts.subscribe();
        let _ = tokio::time::timeout(bound, counts.wait_for(|c| want(c))).await;
        let now = *counts.borrow();
        now
    }

    /// The counts now.
    pub fn counts(&self) -> Counts {
        *self.log.counts.borrow()
    }

    /// Note the instant of the kill: readiness from now on counts as
    /// "since the kill". Returns it.
    pub fn mark_kill(&self) -> Instant {
        let at = Instant::now();
        self.log.killed.store(true, Ordering::Release);
        at
    }

    /// Every dial and readiness change so far, in microseconds since `zero`.
    pub fn recorded(&self, zero: Instant) -> (Vec<i64>, Vec<ReadyChange>) {
        let dials = lock(&self.log.dials)
            .iter()
            .map(|&t| micros(t, zero))
            .collect();
        let changes = lock(&self.log.changes)
            .iter()
            .map(|&(t, ready)| ReadyChange {
                at_us: micros(t, zero),
                ready,
            })
            .collect();
        (dials, changes)
    }

    /// When the fleet was created (no recorded instant is earlier).
    pub fn origin(&self) -> Instant {
        self.log.origin
    }

    /// Stop every client and wait for its tasks and its watcher.
    pub async fn close(mut self) {
        let mut closing: JoinSet<()> = JoinSet::new();
        for client in self.clients.drain(..) {
            closing.spawn(async move { client.close().await });
        }
        while closing.join_next().await.is_some() {}
        while self.watchers.join_next().await.is_some() {}
    }
}

impl Default for Fleet {
    fn default() -> Self {
        Fleet::new()
    }
}

/// Signed microseconds from `zero` to `t`.
pub(crate) fn micros(t: Instant, zero: Instant) -> i64 {
    match t.checked_duration_since(zero) {
        Some(after) => i64::try_from(after.as_micros()).unwrap_or(i64::MAX),
        None => -i64::try_from((zero - t).as_micros()).unwrap_or(i64::MAX),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
