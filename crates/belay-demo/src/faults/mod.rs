//! The fault bench: the faults of spec/MISSION §10, switched at run time,
//! applied only through belay-server's extension points, as a user's own
//! test bench could:
//!
//! | fault | applied by | what a client sees |
//! |---|---|---|
//! | freeze | [`FaultStreams`] (stream layer) | sockets stay open, nothing is read or written, not even the server's own close or FIN, until the freeze ends |
//! | flapping | [`FaultStreams`] | every session's socket is cut (no close frame) this long after its upgrade, or after flapping was switched on |
//! | restart | [`FaultStreams`] + the demo router | every socket is cut at once; upgrades get 503 + `Retry-After` for the window |
//! | slow replies | [`FaultBench::layer_methods`] (method layer) | every call is answered this much later |
//! | service down | the method layer + [`ServiceBroker`] (broker wrapper) | pings go on; subscriptions end `unsubscribed` `unavailable`, subscribes are refused; calls go unanswered (a keyed call runs once the service is back, so its retry gets the one outcome) |
//!
//! The server keeps running its own rules through all of them: a frozen
//! session the server's heartbeat gives up on is closed by the server
//! (4000) while frozen, and the stream holds that close and the FIN back
//! until the freeze ends, so the fault stays silent for the client.
//!
//! Sessions over the SSE fallback go through the same stream layer (see
//! `belay_server::stream`: the layer holds or cuts their I/O without seeing
//! their bytes), so freeze, flapping and restart reach them too, and a
//! restart refuses new streams (`POST /sse`) as it refuses upgrades.

mod broker;
mod calls;
mod stream;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use belay_server::broker::{LiveSender, SubscriberId};
use belay_server::stream::BoxedStream;
use belay_server::Server;
use tokio::sync::watch;

pub use broker::ServiceBroker;
pub use stream::FaultStreams;

/// The faults in force.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Faults {
    /// Sockets stay open, but nothing is read or written.
    pub freeze: bool,
    /// Pings continue; subscriptions are dropped with `unsubscribed`,
    /// subscribes are refused, requests go unanswered.
    pub service_down: bool,
    /// Every request is answered this much later.
    pub slow_replies: Option<Duration>,
    /// Every session is dropped (no close frame) this long after it opened.
    pub flapping: Option<Duration>,
    /// Upgrades are refused until then (a restart in progress).
    pub refuse_until: Option<Instant>,
}

impl Faults {
    /// Whether upgrades are refused at `now`.
    pub fn refusing(&self, now: Instant) -> bool {
        self.refuse_until.is_some_and(|until| now < until)
    }
}

/// One session's stream as the bench knows it: where to wake it when a
/// fault changes.
#[derive(Debug, Default)]
struct StreamCell {
    waker: Mutex<Option<std::task::Waker>>,
}

impl StreamCell {
    fn register(&self, waker: &std::task::Waker) {
        let mut slot = lock(&self.waker);
        if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *slot = Some(waker.clone());
        }
    }

    fn wake(&self) {
        if let Some(waker) = lock(&self.waker).take() {
            waker.wake();
        }
    }
}

/// What every stream, the method layer and the broker wrapper share.
struct Bench {
    faults: Mutex<Faults>,
    /// `faults.freeze`, read on every poll of every stream.
    frozen: AtomicBool,
    /// Bumped by every change: a stream re-reads the faults when it sees a
    /// new value.
    generation: AtomicU64,
    /// Bumped by every restart: streams opened before it are cut.
    restarts: AtomicU64,
    /// The streams to wake when a fault changes.
    streams: Mutex<Vec<Weak<StreamCell>>>,
    /// Streams the server let go of while frozen: their FIN waits for the
    /// end of the freeze.
    held: Mutex<Vec<BoxedStream>>,
    /// Whether the service is down, for calls waiting for it to return.
    service_down: watch::Sender<bool>,
    /// Subscriptions granted while the service was up, to end when it goes
    /// down.
    subscriptions: Mutex<std::collections::HashMap<SubscriberId, LiveSender>>,
}

impl std::fmt::Debug for Bench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bench")
            .field("faults", &self.faults)
            .finish_non_exhaustive()
    }
}

/// The demo's faults: a switchboard, and the extension points that apply
/// them. Cheap to clone; all clones are the same bench.
#[derive(Debug, Clone)]
pub struct FaultBench {
    bench: Arc<Bench>,
}

impl Default for FaultBench {
    fn default() -> Self {
        FaultBench::new()
    }
}

impl FaultBench {
    /// No fault in force.
    pub fn new() -> FaultBench {
        FaultBench {
            bench: Arc::new(Bench {
                faults: Mutex::new(Faults::default()),
                frozen: AtomicBool::new(false),
                generation: AtomicU64::new(0),
                restarts: AtomicU64::new(0),
                streams: Mutex::new(Vec::new()),
                held: Mutex::new(Vec::new()),
                service_down: watch::channel(false).0,
                subscriptions: Mutex::new(std::collections::HashMap::new()),
            }),
        }
    }

    /// The faults in force.
    pub fn faults(&self) -> Faults {
        lock(&self.bench.faults).clone()
    }

    /// Whether upgrades are refused now (a restart window).
    pub fn refusing(&self) -> bool {
        lock(&self.bench.faults).refusing(Instant::now())
    }

    /// Change the faults in force; sessions react at once. `detail` is what
    /// `server`'s event feed says (e.g. "service_down on"). A restart
    /// window that is over is forgotten first.
    pub fn set(
        &self,
        server: &Server,
        detail: impl Into<String>,
        change: impl FnOnce(&mut Faults),
    ) -> Faults {
        let now = Instant::now();
        let faults = {
            let mut faults = lock(&self.bench.faults);
            if !faults.refusing(now) {
                faults.refuse_until = None;
            }
            change(&mut faults);
            faults.clone()
        };
        self.apply(&faults);
        server.announce("fault", detail);
        faults
    }

    /// Emulate a restart: every session is dropped at once without a close
    /// frame, and upgrades are refused for `down`.
    pub fn restart(&self, server: &Server, down: Duration) {
        let until = Instant::now() + down;
        self.bench.restarts.fetch_add(1, Ordering::AcqRel);
        self.set(
            server,
            format!(
                "restart: sessions dropped, upgrades refused for {} ms",
                down.as_millis()
            ),
            |f| f.refuse_until = Some(until),
        );
    }

    /// Make the streams, the calls and the broker follow `faults`.
    fn apply(&self, faults: &Faults) {
        let bench = &self.bench;
        {
            // Under the lock a dropped stream takes to be held: none is held
            // after the freeze ended.
            let mut held = lock(&bench.held);
            bench.frozen.store(faults.freeze, Ordering::Release);
            if !faults.freeze {
                held.clear();
            }
        }
        bench.generation.fetch_add(1, Ordering::AcqRel);
        bench.service_down.send_replace(faults.service_down);
        if faults.service_down {
            self.end_subscriptions();
        }
        let mut streams = lock(&bench.streams);
        streams.retain(|cell| match cell.upgrade() {
            Some(cell) => {
                cell.wake();
                true
            }
            None => false,
        });
    }

    /// Track a new stream's cell.
    fn track(&self, cell: &Arc<StreamCell>) {
        let mut streams = lock(&self.bench.streams);
        if streams.len() >= 64 && streams.len().is_power_of_two() {
            streams.retain(|cell| cell.strong_count() > 0);
        }
        streams.push(Arc::downgrade(cell));
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
