//! The shared control state every connection task watches: the toxics in
//! force, the one-off resets, and whether the proxy was closed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use belay_proto::rng::SplitMix64;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::counters::Counters;
use crate::fault::Fault;
use crate::proxy::ProxyError;
use crate::toxic::Toxic;

/// A toxic in force, with the id and time it was added.
#[derive(Debug, Clone)]
pub(crate) struct Active {
    /// Unique within the proxy, in order of addition (seeds its draws).
    pub(crate) id: u64,
    /// When it was added; it acts on a connection from the later of this
    /// and the connection's start.
    pub(crate) added: Instant,
    pub(crate) toxic: Toxic,
}

/// What the connection tasks see.
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    /// The toxics in force, in order of addition.
    pub(crate) toxics: Arc<Vec<Active>>,
    /// The fault last set, while the toxics are still that fault's.
    pub(crate) fault: Option<Fault>,
    /// How many resets were ordered; a pair resets when this moves.
    pub(crate) resets: u64,
    /// New connections are reset on arrival until then.
    pub(crate) refuse_until: Option<Instant>,
    /// The proxy was closed: every pair closes.
    pub(crate) closed: bool,
    next_id: u64,
}

impl State {
    /// Whether a connection arriving `now` is refused by a reset's window.
    pub(crate) fn refusing(&self, now: Instant) -> bool {
        self.refuse_until.is_some_and(|until| now < until)
    }

    /// The fault as reported to callers: a reset while its refusal window
    /// lasts, [`Fault::Toxics`] once the toxics were edited.
    pub(crate) fn reported(&self, now: Instant) -> Fault {
        match self.refuse_until {
            Some(until) if now < until => Fault::Reset {
                refuse_ms: u64::try_from((until - now).as_millis()).unwrap_or(u64::MAX),
            },
            _ => match self.fault {
                Some(fault) => fault,
                None if self.toxics.is_empty() => Fault::Pass,
                None => Fault::Toxics,
            },
        }
    }

    /// Switch to `fault`: its toxics replace all others.
    pub(crate) fn apply(&mut self, fault: Fault, now: Instant) {
        self.refuse_until = None;
        let toxics = fault.toxics();
        self.toxics = Arc::new(Vec::new());
        for toxic in toxics {
            self.push(toxic, now);
        }
        self.fault = Some(fault);
        if let Fault::Reset { refuse_ms } = fault {
            self.resets += 1;
            self.fault = Some(Fault::Pass);
            if refuse_ms > 0 {
                self.refuse_until = Some(now + Duration::from_millis(refuse_ms));
            }
        }
    }

    /// Add `toxic` unless its name is taken.
    pub(crate) fn add(&mut self, toxic: Toxic, now: Instant) -> Result<(), ProxyError> {
        if self.toxics.iter().any(|a| a.toxic.name == toxic.name) {
            return Err(ProxyError::DuplicateToxic(toxic.name));
        }
        self.push(toxic, now);
        self.fault = None;
        Ok(())
    }

    /// Remove the toxic named `name`.
    pub(crate) fn remove(&mut self, name: &str) -> Option<Toxic> {
        let at = self.toxics.iter().position(|a| a.toxic.name == name)?;
        let removed = Arc::make_mut(&mut self.toxics).remove(at);
        self.fault = None;
        Some(removed.toxic)
    }

    /// Remove every toxic.
    pub(crate) fn clear(&mut self) {
        self.toxics = Arc::new(Vec::new());
        self.fault = None;
    }

    fn push(&mut self, toxic: Toxic, now: Instant) {
        self.next_id += 1;
        Arc::make_mut(&mut self.toxics).push(Active {
            id: self.next_id,
            added: now,
            toxic,
        });
    }
}

/// What the accept loop, the connection tasks and the handles share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) state: watch::Sender<State>,
    pub(crate) counters: Counters,
    /// Seeds each new connection's draws.
    pub(crate) rng: Mutex<SplitMix64>,
}

impl Shared {
    pub(crate) fn new(seed: u64) -> Arc<Self> {
        Arc::new(Shared {
            state: watch::Sender::new(State::default()),
            counters: Counters::default(),
            rng: Mutex::new(SplitMix64::new(seed)),
        })
    }

    /// A fresh view of the state for one task.
    pub(crate) fn watch(&self) -> watch::Receiver<State> {
        self.state.subscribe()
    }

    /// Switch to `fault` (its toxics replace all others).
    pub(crate) fn set(&self, fault: Fault) -> Result<(), ProxyError> {
        fault.validate().map_err(ProxyError::InvalidFault)?;
        let now = Instant::now();
        self.state.send_modify(|s| s.apply(fault, now));
        self.counters.fault_set();
        Ok(())
    }

    /// Add `toxic` (checked; its name must be free).
    pub(crate) fn add(&self, toxic: Toxic) -> Result<(), ProxyError> {
        toxic.validate().map_err(ProxyError::InvalidToxic)?;
        let now = Instant::now();
        let mut result = Ok(());
        self.state.send_if_modified(|s| {
            result = s.add(toxic, now);
            result.is_ok()
        });
        result
    }

    /// Add `toxic`, replacing any toxic of the same name.
    pub(crate) fn replace(&self, toxic: Toxic) -> Result<(), ProxyError> {
        toxic.validate().map_err(ProxyError::InvalidToxic)?;
        let now = Instant::now();
        let mut result = Ok(());
        self.state.send_modify(|s| {
            s.remove(&toxic.name);
            result = s.add(toxic, now);
        });
        result
    }

    /// Remove the toxic named `name`.
    pub(crate) fn remove(&self, name: &str) -> Result<Toxic, ProxyError> {
        let mut removed = None;
        self.state.send_if_modified(|s| {
            removed = s.remove(name);
            removed.is_some()
        });
        removed.ok_or_else(|| ProxyError::NoSuchToxic(name.to_owned()))
    }

    /// Remove every toxic.
    pub(crate) fn clear(&self) {
        self.state.send_modify(State::clear);
    }

    /// The seed of the next connection's draws.
    pub(crate) fn next_seed(&self) -> u64 {
        match self.rng.lock() {
            Ok(mut rng) => rng.next_u64(),
            Err(poisoned) => poisoned.into_inner().next_u64(),
        }
    }
}
