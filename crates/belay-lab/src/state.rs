//! The shared control state every connection task watches.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::counters::Counters;
use crate::fault::Fault;

/// The fault in force, as the connection tasks see it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct State {
    /// The standing mode (never [`Fault::Reset`]: a reset is an action).
    pub(crate) fault: Fault,
    /// How many resets were ordered; a pair resets when this moves.
    pub(crate) resets: u64,
    /// New connections are reset on arrival until then.
    pub(crate) refuse_until: Option<Instant>,
}

impl State {
    /// Whether a connection arriving `now` is refused.
    pub(crate) fn refusing(&self, now: Instant) -> bool {
        self.refuse_until.is_some_and(|until| now < until)
    }

    /// The fault as reported to callers: a reset while its refusal window lasts.
    pub(crate) fn reported(&self, now: Instant) -> Fault {
        match self.refuse_until {
            Some(until) if now < until => Fault::Reset {
                refuse_ms: u64::try_from((until - now).as_millis()).unwrap_or(u64::MAX),
            },
            _ => self.fault,
        }
    }

    /// Switch to `fault`.
    pub(crate) fn apply(&mut self, fault: Fault, now: Instant) {
        self.refuse_until = None;
        match fault {
            Fault::Reset { refuse_ms } => {
                self.resets += 1;
                self.fault = Fault::Pass;
                if refuse_ms > 0 {
                    self.refuse_until = Some(now + Duration::from_millis(refuse_ms));
                }
            }
            other => self.fault = other,
        }
    }
}

/// What the accept loop, the connection tasks and the handles share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) state: watch::Sender<State>,
    pub(crate) counters: Counters,
}

impl Shared {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Shared {
            state: watch::Sender::new(State::default()),
            counters: Counters::default(),
        })
    }

    /// A fresh view of the state for one task.
    pub(crate) fn watch(&self) -> watch::Receiver<State> {
        self.state.subscribe()
    }
}

/// Wait until `condition` no longer holds for the standing fault.
pub(crate) async fn wait_while(faults: &mut watch::Receiver<State>, condition: fn(&Fault) -> bool) {
    // An error means the proxy is gone: stop waiting.
    let _ = faults.wait_for(|s| !condition(&s.fault)).await;
}
