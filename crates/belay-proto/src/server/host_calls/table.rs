//! The host table of [`HostCalls`]: registration (bounded, forgetting
//! offline hosts), heartbeats, sessions attaching and leaving, subscribers,
//! and the state announced on `$host-state:ID`.

use std::collections::HashMap;
use std::sync::Arc;

use crate::host::{HostRecord, HostState, SharedHost};
use crate::time::Instant;

use super::HostCallOutput;
use super::{
    BeatAnswer, CallId, HostCallError, HostCalls, HostCallsConfig, HostView, RegistryFull,
};

/// One host: its record, the state last announced, its callers' shares.
#[derive(Debug)]
pub(super) struct Host {
    pub(super) record: HostRecord,
    /// The state last announced.
    pub(super) published: HostState,
    /// The calls each caller holds (only callers holding one).
    pub(super) callers: HashMap<Arc<str>, usize>,
    /// The other relays holding a session of it, by the last shared view
    /// (sorted).
    pub(super) held_elsewhere: Vec<Arc<str>>,
}

impl HostCalls {
    /// A heartbeat from `host` at `now`: registered if new (refused when
    /// the table is full); whether it is needed, and its state.
    pub fn handle_beat(&mut self, now: Instant, host: &str) -> Result<BeatAnswer, RegistryFull> {
        let timing = &self.config.timing;
        let entry = register(
            &mut self.hosts,
            &mut self.early_subscribers,
            &self.config,
            now,
            host,
        )?;
        entry.record.handle_beat(now);
        let answer = BeatAnswer {
            needed: entry.record.needed(now, timing),
            state: entry.record.state(now, timing),
        };
        self.note(now, host);
        Ok(answer)
    }

    /// A session of `host` now holds its calls channel: the calls waiting
    /// for it are delivered. A host may attach before its first heartbeat;
    /// when the table is full it is served all the same, only not counted.
    pub fn handle_attached(&mut self, now: Instant, host: &str) {
        let Ok(entry) = register(
            &mut self.hosts,
            &mut self.early_subscribers,
            &self.config,
            now,
            host,
        ) else {
            return;
        };
        entry.record.handle_attached();
        self.deliver_waiting(host);
        self.note(now, host);
    }

    /// A session of `host` let go of its calls channel. The calls
    /// delivered while only the sessions gone now held it settle
    /// [`HostCallError::Lost`] (they may have run); calls still waiting
    /// for the host go on waiting.
    pub fn handle_detached(&mut self, now: Instant, host: &str) {
        let Some(entry) = self.hosts.get_mut(host) else {
            return;
        };
        entry.record.handle_detached(now);
        self.settle_lost_where_gone(now, host);
        self.note(now, host);
    }

    /// What the other relays sharing the broker say of `host` at `now`
    /// (registered if new, like a heartbeat: it beats on another relay).
    /// A session held elsewhere gets the calls waiting here delivered (the
    /// broker carries them there). The calls delivered while only relays
    /// that no longer hold the host held it settle
    /// [`HostCallError::Lost`], as when a last local session leaves: a
    /// relay that died took its sessions with it, and a session of the
    /// host on another relay now never saw them. Refused, with nothing
    /// changed, when the table is full.
    pub fn handle_shared(
        &mut self,
        now: Instant,
        host: &str,
        shared: SharedHost,
    ) -> Result<(), RegistryFull> {
        let entry = register(
            &mut self.hosts,
            &mut self.early_subscribers,
            &self.config,
            now,
            host,
        )?;
        entry.held_elsewhere = shared.holding_relays();
        entry.record.handle_shared(now, shared);
        self.settle_lost_where_gone(now, host);
        if self
            .hosts
            .get(host)
            .is_some_and(|entry| entry.record.is_attached())
        {
            self.deliver_waiting(host);
        }
        self.note(now, host);
        Ok(())
    }

    /// Hosts whose view from the other relays this relay should read
    /// again now: those with calls here waiting for a host no session here
    /// holds (it may connect elsewhere), or delivered to another relay's
    /// session (that relay may go). Sorted.
    pub fn hosts_to_look_up(&self) -> Vec<Arc<str>> {
        let mut hosts: Vec<Arc<str>> = (self.calls.values())
            .filter(|call| {
                let not_here = self
                    .hosts
                    .get(&*call.host)
                    .is_some_and(|entry| !entry.record.is_attached_here());
                match call.request {
                    Some(_) => not_here,
                    None => not_here || !call.delivered_to.elsewhere.is_empty(),
                }
            })
            .map(|call| Arc::clone(&call.host))
            .collect();
        hosts.sort_unstable();
        hosts.dedup();
        hosts
    }

    /// What this relay tells the others at `now`: the hosts a session here
    /// holds, and the hosts needed here (subscribers, calls, grace; and
    /// subscribers of hosts not registered here, which beat elsewhere).
    /// Each sorted.
    pub fn hosts_held_and_needed(&self, now: Instant) -> (Vec<Arc<str>>, Vec<Arc<str>>) {
        let timing = &self.config.timing;
        let mut held = Vec::new();
        let mut needed = Vec::new();
        for (host, entry) in &self.hosts {
            if entry.record.is_attached_here() {
                held.push(Arc::clone(host));
            }
            if entry.record.needed_here(now, timing) {
                needed.push(Arc::clone(host));
            }
        }
        needed.extend(self.early_subscribers.keys().cloned());
        held.sort_unstable();
        needed.sort_unstable();
        needed.dedup();
        (held, needed)
    }

    /// Deliver every call waiting for `host`, in id order.
    fn deliver_waiting(&mut self, host: &str) {
        let mut waiting: Vec<CallId> = (self.calls.iter())
            .filter(|(_, call)| &*call.host == host && call.request.is_some())
            .map(|(id, _)| *id)
            .collect();
        waiting.sort_unstable();
        for id in waiting {
            self.deliver(id);
        }
    }

    /// Settle [`HostCallError::Lost`] the calls delivered to `host` that no
    /// session still holding it received.
    fn settle_lost_where_gone(&mut self, now: Instant, host: &str) {
        let Some(entry) = self.hosts.get(host) else {
            return;
        };
        let (here, elsewhere) = (entry.record.is_attached_here(), &entry.held_elsewhere);
        let mut lost: Vec<CallId> = (self.calls.iter())
            .filter(|(_, call)| {
                &*call.host == host
                    && call.request.is_none()
                    && !call.delivered_to.still_held(here, elsewhere)
            })
            .map(|(id, _)| *id)
            .collect();
        lost.sort_unstable();
        for id in lost {
            self.settle(now, id, Err(HostCallError::Lost));
        }
    }

    /// A client subscribed to `$host:ID`.
    pub fn handle_subscribed(&mut self, now: Instant, host: &str) {
        self.subscription(now, host, true);
    }

    /// A client's subscription to `$host:ID` ended.
    pub fn handle_unsubscribed(&mut self, now: Instant, host: &str) {
        self.subscription(now, host, false);
    }

    fn subscription(&mut self, now: Instant, host: &str, up: bool) {
        if let Some(entry) = self.hosts.get_mut(host) {
            if up {
                entry.record.handle_subscribed();
            } else {
                entry.record.handle_unsubscribed();
            }
            self.note(now, host);
            return;
        }
        let early = self.early_subscribers.entry(Arc::from(host)).or_default();
        *early = if up {
            early.saturating_add(1)
        } else {
            early.saturating_sub(1)
        };
        if *early == 0 {
            self.early_subscribers.remove(host);
        }
    }

    /// Whether a session of `host` holds its calls channel.
    pub fn is_attached(&self, host: &str) -> bool {
        self.hosts
            .get(host)
            .is_some_and(|entry| entry.record.is_attached())
    }

    /// Whether a session of `host` on this relay holds its calls channel.
    pub fn is_attached_here(&self, host: &str) -> bool {
        self.hosts
            .get(host)
            .is_some_and(|entry| entry.record.is_attached_here())
    }

    /// Hosts recorded.
    pub fn host_count(&self) -> usize {
        self.hosts.len()
    }

    /// Every host as seen at `now`, in no particular order.
    pub fn hosts(&self, now: Instant) -> impl Iterator<Item = HostView> + '_ {
        let timing = &self.config.timing;
        self.hosts.iter().map(move |(host, entry)| HostView {
            host: Arc::clone(host),
            state: entry.record.state(now, timing),
            needed: entry.record.needed(now, timing),
            calls: entry.record.calls(),
        })
    }

    /// Announce `host`'s state if it changed since the last announcement.
    pub(super) fn note(&mut self, now: Instant, host: &str) {
        let Some((host, entry)) = self.hosts.get_key_value(host) else {
            return;
        };
        let state = entry.record.state(now, &self.config.timing);
        if state == entry.published {
            return;
        }
        let host = Arc::clone(host);
        if let Some(entry) = self.hosts.get_mut(&host) {
            entry.published = state;
        }
        self.outputs
            .push_back(HostCallOutput::StateChanged { host, state });
    }
}

/// The entry of `host`, registered if there is room (offline hosts nobody
/// refers to are forgotten when there is not).
fn register<'a>(
    hosts: &'a mut HashMap<Arc<str>, Host>,
    early_subscribers: &mut HashMap<Arc<str>, u32>,
    config: &HostCallsConfig,
    now: Instant,
    host: &str,
) -> Result<&'a mut Host, RegistryFull> {
    let timing = &config.timing;
    if !hosts.contains_key(host) {
        if hosts.len() >= config.max_hosts {
            hosts.retain(|_, entry| !entry.record.is_forgettable(now, timing));
        }
        if hosts.len() >= config.max_hosts {
            return Err(RegistryFull);
        }
        let mut record = HostRecord::new(now);
        for _ in 0..early_subscribers.remove(host).unwrap_or(0) {
            record.handle_subscribed();
        }
        let entry = Host {
            published: record.state(now, timing),
            record,
            callers: HashMap::new(),
            held_elsewhere: Vec::new(),
        };
        return Ok(hosts.entry(Arc::from(host)).or_insert(entry));
    }
    hosts.get_mut(host).ok_or(RegistryFull)
}
