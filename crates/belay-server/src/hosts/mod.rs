//! The relay for resident hosts (docs/HOSTS.md, spec/PROTOCOL.md §10).
//!
//! A host is a Belay client whose credentials name it (`Principal::host`).
//! It calls [`heartbeat`] at the interval the relay sets; the answer says
//! whether anyone needs it (the decision is belay-proto's
//! [`HostRecord`]). While it is needed it holds a session subscribed to
//! `$host-calls:ID`, which is how the relay reaches it: clients call its
//! methods with `$call` ([`call`]), the relay publishes each call on that
//! channel, and the host answers with `$answer` ([`answer`]). Its state
//! (`asleep`, `waking`, `ready`, `offline`) is published on
//! `$host-state:ID` whenever the relay sees it change.
//!
//! Everything here is bounded: [`ServerConfig::max_hosts`](crate::ServerConfig::max_hosts)
//! records of at most a few hundred bytes each, and
//! [`ServerConfig::max_calls_per_host`](crate::ServerConfig::max_calls_per_host)
//! calls per host, of which one connection holds at most its share
//! ([`max_calls_per_caller`]), so one caller cannot starve the others.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use belay_proto::host::{max_calls_per_caller, HostRecord, HostState, STATE_CHANNEL_PREFIX};
use belay_proto::message::{ErrorBody, Reply};
use tokio::sync::{oneshot, Notify};

use crate::metrics::lock;
use crate::shared::Shared;

pub(crate) mod answer;
pub(crate) mod call;
pub(crate) mod heartbeat;

pub(crate) use heartbeat::heartbeat;

/// The registry of hosts, in [`Shared`].
#[derive(Default)]
pub(crate) struct HostRegistry {
    inner: Mutex<Inner>,
    next_call: AtomicU64,
}

#[derive(Default)]
struct Inner {
    hosts: HashMap<Arc<str>, Entry>,
    /// Client subscriptions to `$host:ID` of hosts not registered yet
    /// (after a relay restart, clients resubscribe before their host's
    /// next heartbeat); moved into the record when the host registers. A
    /// subscription is already bounded where it is held.
    early_subscribers: HashMap<Arc<str>, u32>,
}

struct Entry {
    record: HostRecord,
    /// The state last published on `$host-state:ID`.
    published: HostState,
    /// Woken when a session of the host attaches.
    ready: Arc<Notify>,
    /// Calls published to the host and waiting for its answer.
    delivered: Vec<(u64, oneshot::Sender<Reply>)>,
    /// The calls each caller (session id) holds, for its share; only
    /// callers holding one, so at most `max_calls_per_host` entries.
    callers: HashMap<Arc<str>, usize>,
}

/// Why the registry refused to register a host.
#[derive(Debug)]
pub(crate) struct RegistryFull;

/// Why a call to a host cannot start.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum CallRefusal {
    /// No host of that id has registered.
    Unknown,
    /// It stopped beating.
    Offline,
    /// It has as many calls as it may.
    Busy,
    /// This caller holds its share of the host's calls.
    CallerBusy,
}

/// A call that started: its id, and what wakes its wait.
pub(crate) struct CallTicket {
    pub(crate) id: u64,
    pub(crate) ready: Arc<Notify>,
}

/// One host as a listing shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct HostView {
    pub(crate) host: String,
    pub(crate) state: &'static str,
    pub(crate) needed: bool,
    pub(crate) calls: u32,
}

/// A state to publish, taken out of the lock.
type Announcement = Option<(Arc<str>, HostState)>;

impl HostRegistry {
    /// A heartbeat from `host`: registered if new (refused when the
    /// registry is full); answers whether it is needed, and its state.
    pub(crate) fn beat(
        &self,
        shared: &Arc<Shared>,
        host: &str,
    ) -> Result<(bool, HostState), RegistryFull> {
        let now = shared.clock.now();
        let timing = &shared.config.host_timing;
        let (answer, note) = {
            let mut inner = lock(&self.inner);
            let entry = inner.entry(host, shared)?;
            entry.record.handle_beat(now);
            let answer = (
                entry.record.needed(now, timing),
                entry.record.state(now, timing),
            );
            (answer, entry.note(host, shared))
        };
        announce(shared, note);
        Ok(answer)
    }

    /// A session of `host` now holds its calls channel.
    pub(crate) fn attached(&self, shared: &Arc<Shared>, host: &str) {
        let note = {
            let mut inner = lock(&self.inner);
            // A host may connect before its first heartbeat (one that does
            // not sleep); when the registry is full it is served all the
            // same, only not counted.
            let Ok(entry) = inner.entry(host, shared) else {
                return;
            };
            entry.record.handle_attached();
            entry.ready.notify_waiters();
            entry.note(host, shared)
        };
        announce(shared, note);
    }

    /// A session of `host` let go of its calls channel; when it was the
    /// last, the calls it was given settle `host_lost` (it may have run
    /// them).
    pub(crate) fn detached(&self, shared: &Arc<Shared>, host: &str) {
        let now = shared.clock.now();
        let (lost, note) = {
            let mut inner = lock(&self.inner);
            let Some(entry) = inner.hosts.get_mut(host) else {
                return;
            };
            entry.record.handle_detached(now);
            let lost = if entry.record.is_attached() {
                Vec::new()
            } else {
                std::mem::take(&mut entry.delivered)
            };
            (lost, entry.note(host, shared))
        };
        for (_, answer) in lost {
            let _ = answer.send(Reply::Error(ErrorBody::new(
                "host_lost",
                "the host's session ended during the call; it may have run",
            )));
        }
        announce(shared, note);
    }

    /// A client subscribed to `$host:ID` (`up`) or left it.
    pub(crate) fn subscribers(&self, shared: &Arc<Shared>, host: &str, up: bool) {
        let note = {
            let mut inner = lock(&self.inner);
            match inner.hosts.get_mut(host) {
                Some(entry) => {
                    if up {
                        entry.record.handle_subscribed();
                    } else {
                        entry.record.handle_unsubscribed();
                    }
                    entry.note(host, shared)
                }
                None => {
                    let early = inner.early_subscribers.entry(Arc::from(host)).or_default();
                    *early = if up {
                        early.saturating_add(1)
                    } else {
                        early.saturating_sub(1)
                    };
                    if *early == 0 {
                        inner.early_subscribers.remove(host);
                    }
                    None
                }
            }
        };
        announce(shared, note);
    }

    /// Start a call to `host` for `caller` (its session id).
    pub(crate) fn start_call(
        &self,
        shared: &Arc<Shared>,
        host: &str,
        caller: &Arc<str>,
    ) -> Result<CallTicket, CallRefusal> {
        let now = shared.clock.now();
        let timing = &shared.config.host_timing;
        let (ticket, note) = {
            let mut inner = lock(&self.inner);
            let entry = inner.hosts.get_mut(host).ok_or(CallRefusal::Unknown)?;
            if entry.record.state(now, timing) == HostState::Offline {
                let note = entry.note(host, shared);
                drop(inner);
                announce(shared, note);
                return Err(CallRefusal::Offline);
            }
            let max_calls = shared.config.max_calls_per_host;
            if entry.record.calls() as usize >= max_calls {
                return Err(CallRefusal::Busy);
            }
            let held = entry.callers.get(caller).copied().unwrap_or(0);
            if held >= max_calls_per_caller(max_calls) {
                return Err(CallRefusal::CallerBusy);
            }
            entry.callers.insert(Arc::clone(caller), held + 1);
            entry.record.handle_call_started();
            let ticket = CallTicket {
                id: self.next_call.fetch_add(1, Ordering::Relaxed),
                ready: Arc::clone(&entry.ready),
            };
            (ticket, entry.note(host, shared))
        };
        announce(shared, note);
        Ok(ticket)
    }

    /// Whether a session of `host` holds its calls channel.
    pub(crate) fn is_attached(&self, host: &str) -> bool {
        lock(&self.inner)
            .hosts
            .get(host)
            .is_some_and(|entry| entry.record.is_attached())
    }

    /// Wait for the answer to `call`, about to be published to `host`.
    /// `None` when the host is not attached any more (publish nothing).
    pub(crate) fn expect_answer(&self, host: &str, call: u64) -> Option<oneshot::Receiver<Reply>> {
        let mut inner = lock(&self.inner);
        let entry = inner.hosts.get_mut(host)?;
        if !entry.record.is_attached() {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        entry.delivered.push((call, tx));
        Some(rx)
    }

    /// The host's answer to `call`; `false` when no such call waits.
    pub(crate) fn answer(&self, host: &str, call: u64, reply: Reply) -> bool {
        let waiting = {
            let mut inner = lock(&self.inner);
            let Some(entry) = inner.hosts.get_mut(host) else {
                return false;
            };
            let Some(at) = entry.delivered.iter().position(|(id, _)| *id == call) else {
                return false;
            };
            entry.delivered.swap_remove(at).1
        };
        waiting.send(reply).is_ok()
    }

    /// `call` of `caller` to `host` ended (answered, refused, or its
    /// caller left).
    pub(crate) fn end_call(&self, shared: &Arc<Shared>, host: &str, call: u64, caller: &str) {
        let now = shared.clock.now();
        let note = {
            let mut inner = lock(&self.inner);
            let Some(entry) = inner.hosts.get_mut(host) else {
                return;
            };
            entry.delivered.retain(|(id, _)| *id != call);
            if let Some(held) = entry.callers.get_mut(caller) {
                *held = held.saturating_sub(1);
                if *held == 0 {
                    entry.callers.remove(caller);
                }
            }
            entry.record.handle_call_ended(now);
            entry.note(host, shared)
        };
        announce(shared, note);
    }

    /// Every host, for the admin listing.
    pub(crate) fn list(&self, shared: &Arc<Shared>) -> Vec<HostView> {
        let now = shared.clock.now();
        let timing = &shared.config.host_timing;
        let mut views: Vec<HostView> = lock(&self.inner)
            .hosts
            .iter()
            .map(|(host, entry)| HostView {
                host: host.to_string(),
                state: entry.record.state(now, timing).as_str(),
                needed: entry.record.needed(now, timing),
                calls: entry.record.calls(),
            })
            .collect();
        views.sort_by(|a, b| a.host.cmp(&b.host));
        views
    }

    /// Registered hosts.
    pub(crate) fn len(&self) -> usize {
        lock(&self.inner).hosts.len()
    }
}

impl Inner {
    /// The entry of `host`, registering it if there is room (forgetting
    /// offline hosts nobody refers to when there is not).
    fn entry(&mut self, host: &str, shared: &Shared) -> Result<&mut Entry, RegistryFull> {
        let now = shared.clock.now();
        let timing = &shared.config.host_timing;
        if !self.hosts.contains_key(host) {
            if self.hosts.len() >= shared.config.max_hosts {
                self.hosts
                    .retain(|_, entry| !entry.record.is_forgettable(now, timing));
            }
            if self.hosts.len() >= shared.config.max_hosts {
                return Err(RegistryFull);
            }
            let mut record = HostRecord::new(now);
            for _ in 0..self.early_subscribers.remove(host).unwrap_or(0) {
                record.handle_subscribed();
            }
            let entry = Entry {
                published: record.state(now, timing),
                record,
                ready: Arc::default(),
                delivered: Vec::new(),
                callers: HashMap::new(),
            };
            return Ok(self.hosts.entry(Arc::from(host)).or_insert(entry));
        }
        self.hosts.get_mut(host).ok_or(RegistryFull)
    }
}

impl Entry {
    /// The state to publish, if it changed since the last one.
    fn note(&mut self, host: &str, shared: &Shared) -> Announcement {
        let state = self
            .record
            .state(shared.clock.now(), &shared.config.host_timing);
        if state == self.published {
            return None;
        }
        self.published = state;
        Some((Arc::from(host), state))
    }
}

/// Publish a changed state on `$host-state:ID`. The broker takes the
/// publication in the order of these calls; its outcome is not waited for
/// (a state nobody could be told is told at the next change).
fn announce(shared: &Arc<Shared>, note: Announcement) {
    let Some((host, state)) = note else {
        return;
    };
    // A call ending while the runtime shuts down has nobody left to tell.
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let server = crate::Server {
        shared: Arc::clone(shared),
    };
    let publishing = server.publish(
        &format!("{STATE_CHANNEL_PREFIX}{host}"),
        serde_json::json!({ "state": state.as_str() }),
    );
    runtime.spawn(async move {
        if let Err(error) = publishing.await {
            tracing::debug!(%host, %error, "host state not published");
        }
    });
}
