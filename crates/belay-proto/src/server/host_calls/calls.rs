//! The [`HostCalls`] machine and every call's life: started, delivered,
//! answered or settled by time; the host table's inputs are in `table`.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use crate::host::{max_calls_per_caller, HostState};
use crate::message::{Payload, Reply};
use crate::time::Instant;

use super::table::Host;
use super::{
    CallId, CallRequest, Delivery, HostCallError, HostCallOutput, HostCallsConfig, NoSuchCall,
};

/// The relay's hosts and the calls to them, clock-free.
///
/// A client calls a method of a host with `$call`; the relay delivers the
/// call on `$host-calls:ID` once a session of the host holds that channel,
/// and the host answers with `$answer`. The host may be asleep: the call
/// makes it needed, so its next heartbeat learns it must connect, and the
/// call waits for that up to the wake bound ([`HostTiming::wake_bound`](crate::host::HostTiming::wake_bound)).
/// Every decision of that life is taken here, on the `now` the driver
/// passes in:
///
/// ```text
///  $call ──▶ handle_call ─┬─ unknown / offline / busy / caller's share ─▶ Err(HostCallError)
///                         ├─ host attached ─▶ Deliver ─────────────────┐
///                         └─ host asleep: waits (state `waking`)       │
///  session holds $host-calls:ID ─▶ handle_attached ─▶ Deliver ─────────┤
///  wake bound passed ─▶ handle_timeout ─▶ Settled(Err(Asleep))         │
///                                                                      ▼
///  $answer ─▶ handle_answer ─▶ Settled(Ok(reply))          delivered, waiting
///  deadline passed ─▶ handle_timeout ─▶ Settled(Err(Timeout))          │
///  last session let go ─▶ handle_detached ─▶ Settled(Err(Lost)) ◀──────┘
/// ```
///
/// Polling contract (as the other machines of the core): after every
/// `handle_*` call, drain [`HostCalls::poll_output`]; sleep until
/// [`HostCalls::poll_timeout`] (or a call's own
/// [`HostCalls::call_timeout`]) and call [`HostCalls::handle_timeout`]
/// then; early calls are no-ops. `poll_timeout` changes with
/// `handle_call` (a new deadline), with deliveries (the deadline replaces
/// the wake bound) and with every call that ends.
///
/// ```
/// use belay_proto::host::HostState;
/// use belay_proto::message::Reply;
/// use belay_proto::server::{CallRequest, HostCallOutput, HostCalls, HostCallsConfig};
/// use belay_proto::Instant;
///
/// let mut calls = HostCalls::new(HostCallsConfig::default());
/// let t0 = Instant::from_millis(0);
/// calls.handle_beat(t0, "pc-1").unwrap();
/// let call = calls
///     .handle_call(t0, CallRequest::new("pc-1", "session-7", "ping", serde_json::json!({})))
///     .unwrap();
/// // Asleep: the call waits, and the host is `waking`.
/// assert!(matches!(
///     calls.poll_output(),
///     Some(HostCallOutput::StateChanged { state: HostState::Waking, .. })
/// ));
/// // Its session holds its calls channel: the call is delivered, it is `ready`.
/// calls.handle_attached(Instant::from_millis(3_000), "pc-1");
/// assert!(matches!(calls.poll_output(), Some(HostCallOutput::Deliver(d)) if d.call == call));
/// assert!(matches!(
///     calls.poll_output(),
///     Some(HostCallOutput::StateChanged { state: HostState::Ready, .. })
/// ));
/// let reply = Reply::Result(serde_json::json!("pong").into());
/// calls.handle_answer(Instant::from_millis(3_100), "pc-1", call, reply).unwrap();
/// assert!(matches!(
///     calls.poll_output(),
///     Some(HostCallOutput::Settled { call: c, outcome: Ok(_), .. }) if c == call
/// ));
/// ```
///
/// Bounded: [`HostCallsConfig::max_hosts`] records of a few hundred bytes,
/// [`HostCallsConfig::max_calls_per_host`] calls per host.
#[derive(Debug)]
pub struct HostCalls {
    pub(super) config: HostCallsConfig,
    pub(super) hosts: HashMap<Arc<str>, Host>,
    /// Subscriptions to `$host:ID` of hosts not registered yet (after a
    /// relay restart, clients resubscribe before their host's next
    /// heartbeat); moved into the record when the host registers.
    pub(super) early_subscribers: HashMap<Arc<str>, u32>,
    pub(super) calls: HashMap<CallId, Call>,
    /// Each call's next deadline: the wake bound while it waits for its
    /// host, the answer deadline once delivered.
    pub(super) timers: BTreeSet<(Instant, CallId)>,
    pub(super) next_call: u64,
    pub(super) outputs: VecDeque<HostCallOutput>,
}

#[derive(Debug)]
pub(super) struct Call {
    pub(super) host: Arc<str>,
    pub(super) caller: Arc<str>,
    pub(super) started: Instant,
    /// Its timer (in `timers`).
    pub(super) until: Instant,
    /// `Some` until delivered: the method and params to deliver.
    pub(super) request: Option<(String, Payload)>,
    /// Once delivered: the sessions that could have received it.
    pub(super) delivered_to: DeliveredTo,
}

/// Where a call went when it was delivered (the broker hands it to every
/// session of the host holding its calls channel at that moment): a session
/// here, and the other relays holding one. Once none of them holds the host
/// any more, nobody can answer the call.
#[derive(Debug, Clone, Default)]
pub(super) struct DeliveredTo {
    pub(super) here: bool,
    /// Sorted.
    pub(super) elsewhere: Vec<Arc<str>>,
}

impl DeliveredTo {
    /// Whether a session that got the call may still answer it: held here
    /// (and it went here), or on a relay it went to.
    pub(super) fn still_held(&self, here: bool, elsewhere: &[Arc<str>]) -> bool {
        (self.here && here)
            || self
                .elsewhere
                .iter()
                .any(|relay| elsewhere.binary_search(relay).is_ok())
    }
}

impl HostCalls {
    /// No hosts, no calls.
    pub fn new(config: HostCallsConfig) -> Self {
        HostCalls {
            next_call: config.first_call_id,
            config,
            hosts: HashMap::new(),
            early_subscribers: HashMap::new(),
            calls: HashMap::new(),
            timers: BTreeSet::new(),
            outputs: VecDeque::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &HostCallsConfig {
        &self.config
    }

    /// A `$call` at `now`: refused at once (unknown host, offline host,
    /// the host's calls or this caller's share full), or started. A started
    /// call is delivered at once when the host is attached; else it waits
    /// for the host up to the wake bound.
    pub fn handle_call(
        &mut self,
        now: Instant,
        request: CallRequest,
    ) -> Result<CallId, HostCallError> {
        let CallRequest {
            host,
            caller,
            method,
            params,
        } = request;
        let timing = &self.config.timing;
        let max_calls = self.config.max_calls_per_host;
        let entry = self
            .hosts
            .get_mut(&*host)
            .ok_or(HostCallError::UnknownHost)?;
        if entry.record.state(now, timing) == HostState::Offline {
            self.note(now, &host);
            return Err(HostCallError::Offline);
        }
        if entry.record.calls() as usize >= max_calls {
            return Err(HostCallError::HostBusy);
        }
        let held = entry.callers.get(&caller).copied().unwrap_or(0);
        if held >= max_calls_per_caller(max_calls) {
            return Err(HostCallError::CallerBusy);
        }
        entry.callers.insert(Arc::clone(&caller), held + 1);
        entry.record.handle_call_started();
        let attached = entry.record.is_attached();
        let id = CallId(self.next_call);
        self.next_call = self.next_call.wrapping_add(1);
        let until = now.saturating_add(timing.wake_bound());
        self.timers.insert((until, id));
        let call = Call {
            host: Arc::clone(&host),
            caller,
            started: now,
            until,
            request: Some((method, params)),
            delivered_to: DeliveredTo::default(),
        };
        self.calls.insert(id, call);
        if attached {
            self.deliver(id);
        }
        self.note(now, &host);
        Ok(id)
    }

    /// The host `host` answered `call` with `reply`: the call settles with
    /// it. Refused when no call of that id waits for this host's answer.
    pub fn handle_answer(
        &mut self,
        now: Instant,
        host: &str,
        call: CallId,
        reply: Reply,
    ) -> Result<(), NoSuchCall> {
        match self.calls.get(&call) {
            Some(waiting) if &*waiting.host == host && waiting.request.is_none() => {}
            _ => return Err(NoSuchCall(call)),
        }
        self.settle(now, call, Ok(reply));
        self.note(now, host);
        Ok(())
    }

    /// The driver ended `call` itself (its caller left, or its delivery
    /// failed): it stops counting, with no output. `false` when it had
    /// already ended.
    pub fn handle_call_ended(&mut self, now: Instant, call: CallId) -> bool {
        let Some(ended) = self.end(now, call) else {
            return false;
        };
        self.note(now, &ended.host);
        true
    }

    /// Settle the calls whose deadline passed by `now`: one still waiting
    /// for its host [`HostCallError::Asleep`], one delivered
    /// [`HostCallError::Timeout`]. Calls before the next deadline do
    /// nothing.
    pub fn handle_timeout(&mut self, now: Instant) {
        let mut hosts = Vec::new();
        while let Some(&(at, id)) = self.timers.first() {
            if at > now {
                break;
            }
            let Some(call) = self.calls.get(&id) else {
                self.timers.remove(&(at, id));
                continue;
            };
            let error = if call.request.is_some() {
                HostCallError::Asleep
            } else {
                HostCallError::Timeout
            };
            hosts.push(Arc::clone(&call.host));
            self.settle(now, id, Err(error));
        }
        hosts.dedup();
        for host in hosts {
            self.note(now, &host);
        }
    }

    /// The next instant [`handle_timeout`](Self::handle_timeout) has work.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.first().map(|&(at, _)| at)
    }

    /// The next instant `call` may settle by time (`None`: it ended).
    #[must_use]
    pub fn call_timeout(&self, call: CallId) -> Option<Instant> {
        self.calls.get(&call).map(|call| call.until)
    }

    /// The next thing for the driver to do.
    #[must_use]
    pub fn poll_output(&mut self) -> Option<HostCallOutput> {
        self.outputs.pop_front()
    }

    /// Calls waiting for their host or its answer.
    pub fn call_count(&self) -> usize {
        self.calls.len()
    }

    /// Hand `id` (waiting for its host) to the driver to publish; its
    /// timer becomes the answer deadline.
    pub(super) fn deliver(&mut self, id: CallId) {
        let deadline_after = self.config.timing.call_deadline(self.config.answer_timeout);
        let Some(call) = self.calls.get_mut(&id) else {
            return;
        };
        let Some((method, params)) = call.request.take() else {
            return;
        };
        if let Some(host) = self.hosts.get(&call.host) {
            call.delivered_to = DeliveredTo {
                here: host.record.is_attached_here(),
                elsewhere: host.held_elsewhere.clone(),
            };
        }
        self.timers.remove(&(call.until, id));
        call.until = call.started.saturating_add(deadline_after);
        self.timers.insert((call.until, id));
        self.outputs.push_back(HostCallOutput::Deliver(Delivery {
            call: id,
            host: Arc::clone(&call.host),
            method,
            params,
        }));
    }

    /// End `id` and tell its caller `outcome`.
    pub(super) fn settle(
        &mut self,
        now: Instant,
        id: CallId,
        outcome: Result<Reply, HostCallError>,
    ) {
        if let Some(call) = self.end(now, id) {
            self.outputs.push_back(HostCallOutput::Settled {
                call: id,
                host: call.host,
                outcome,
            });
        }
    }

    /// Forget `id`: its timer, its caller's share, its count on the host.
    fn end(&mut self, now: Instant, id: CallId) -> Option<Call> {
        let call = self.calls.remove(&id)?;
        self.timers.remove(&(call.until, id));
        if let Some(entry) = self.hosts.get_mut(&call.host) {
            if let Some(held) = entry.callers.get_mut(&call.caller) {
                *held = held.saturating_sub(1);
                if *held == 0 {
                    entry.callers.remove(&call.caller);
                }
            }
            entry.record.handle_call_ended(now);
        }
        Some(call)
    }
}
