//! The relay for resident hosts (docs/HOSTS.md, spec/PROTOCOL.md §10).
//!
//! A host is a Belay client whose credentials name it (`Principal::host`).
//! It calls [`heartbeat`] at the interval the relay sets; the answer says
//! whether anyone needs it. While it is needed it holds a session
//! subscribed to `$host-calls:ID`, which is how the relay reaches it:
//! clients call its methods with `$call` ([`call`]), the relay publishes
//! each call on that channel, and the host answers with `$answer`
//! ([`answer`]). Its state (`asleep`, `waking`, `ready`, `offline`) is
//! published on `$host-state:ID` whenever the relay sees it change.
//!
//! Every decision (registration, needed, state, admitting a call, the
//! wake bound, delivery, matching an answer, the answer deadline,
//! `host_lost`) is belay-proto's [`HostCalls`], held by the server's
//! [`Node`](belay_proto::server::Node) and driven here on the server's
//! clock (`shared.clock`): this module feeds it what the relay
//! sees and does what it outputs (publish a call or a state, answer a
//! waiting caller). A call's own task sleeps until that call's next
//! deadline ([`HostCalls::call_timeout`]) and then lets the machine
//! decide.
//!
//! Everything here is bounded: [`ServerConfig::max_hosts`](crate::ServerConfig::max_hosts)
//! records of at most a few hundred bytes each, and
//! [`ServerConfig::max_calls_per_host`](crate::ServerConfig::max_calls_per_host)
//! calls per host, of which one connection holds at most its share
//! ([`max_calls_per_caller`](belay_proto::host::max_calls_per_caller)), so
//! one caller cannot starve the others.

use std::sync::Arc;

use belay_proto::host::HostState;
use belay_proto::message::Reply;
use belay_proto::server::{
    BeatAnswer, CallId, CallRequest, Delivery, HostCallError, HostCallOutput, HostCalls,
    RegistryFull,
};
use belay_proto::Instant;
use tokio::sync::oneshot;

use crate::metrics::lock;
use crate::shared::Shared;

mod across_nodes;
pub(crate) mod answer;
pub(crate) mod call;
pub(crate) mod heartbeat;
mod publish;

pub(crate) use heartbeat::heartbeat;

pub(crate) use crate::host_waiters::HostRegistry;

/// One host as a listing shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct HostView {
    pub(crate) host: String,
    pub(crate) state: &'static str,
    pub(crate) needed: bool,
    pub(crate) calls: u32,
}

/// What to do once the registry's lock is released.
enum Effect {
    /// Publish a call on `$host-calls:ID`.
    Deliver(Delivery),
    /// Publish a state on `$host-state:ID`.
    Announce(Arc<str>, HostState),
}

impl HostRegistry {
    /// A heartbeat from `host`: registered if new (refused when the
    /// registry is full); answers whether it is needed, and its state.
    pub(crate) fn beat(
        &self,
        shared: &Arc<Shared>,
        host: &str,
    ) -> Result<BeatAnswer, RegistryFull> {
        self.drive(shared, |calls, now| calls.handle_beat(now, host))
    }

    /// A session of `host` now holds its calls channel.
    pub(crate) fn attached(&self, shared: &Arc<Shared>, host: &str) {
        self.drive(shared, |calls, now| calls.handle_attached(now, host));
    }

    /// A session of `host` let go of its calls channel.
    pub(crate) fn detached(&self, shared: &Arc<Shared>, host: &str) {
        self.drive(shared, |calls, now| calls.handle_detached(now, host));
    }

    /// A client subscribed to `$host:ID` (`up`) or left it.
    pub(crate) fn subscribers(&self, shared: &Arc<Shared>, host: &str, up: bool) {
        self.drive(shared, |calls, now| {
            if up {
                calls.handle_subscribed(now, host);
            } else {
                calls.handle_unsubscribed(now, host);
            }
        });
    }

    /// Start a call; its reply arrives on the receiver.
    pub(crate) fn start_call(
        &self,
        shared: &Arc<Shared>,
        request: CallRequest,
    ) -> Result<(CallId, oneshot::Receiver<Reply>), HostCallError> {
        let (tx, rx) = oneshot::channel();
        // The caller waits from before the call's first output: an answer
        // may come as soon as the delivery is out.
        let id = self.drive(shared, |calls, now| {
            let id = calls.handle_call(now, request)?;
            lock(&self.waiting).insert(id, tx);
            Ok(id)
        })?;
        Ok((id, rx))
    }

    /// When `call` may next settle by time (`None`: it ended).
    pub(crate) fn call_timeout(shared: &Shared, call: CallId) -> Option<Instant> {
        lock(&shared.node).host_calls().call_timeout(call)
    }

    /// Let the machine settle the calls whose deadline passed.
    pub(crate) fn timeout(&self, shared: &Arc<Shared>) {
        self.drive(shared, |calls, now| calls.handle_timeout(now));
    }

    /// The host's answer to `call`; `false` when no such call waits.
    pub(crate) fn answer(
        &self,
        shared: &Arc<Shared>,
        host: &str,
        call: CallId,
        reply: Reply,
    ) -> bool {
        self.drive(shared, |calls, now| {
            calls.handle_answer(now, host, call, reply)
        })
        .is_ok()
    }

    /// `call` ended outside the machine: its caller left (`reply` `None`),
    /// or it could not be delivered (its caller gets `reply`).
    pub(crate) fn end_call(&self, shared: &Arc<Shared>, call: CallId, reply: Option<Reply>) {
        let (ended, waiter) = self.drive(shared, |calls, now| {
            let ended = calls.handle_call_ended(now, call);
            (ended, lock(&self.waiting).remove(&call))
        });
        if let (true, Some(waiter), Some(reply)) = (ended, waiter, reply) {
            let _ = waiter.send(reply);
        }
    }

    /// Every host, for the admin listing.
    pub(crate) fn list(&self, shared: &Arc<Shared>) -> Vec<HostView> {
        let now = shared.clock.now();
        let node = lock(&shared.node);
        let mut views: Vec<HostView> = node
            .host_calls()
            .hosts(now)
            .map(|view| HostView {
                host: view.host.to_string(),
                state: view.state.as_str(),
                needed: view.needed,
                calls: view.calls,
            })
            .collect();
        views.sort_by(|a, b| a.host.cmp(&b.host));
        views
    }

    /// Registered hosts.
    pub(crate) fn len(shared: &Shared) -> usize {
        lock(&shared.node).host_calls().host_count()
    }

    /// Feed the machine one input at the server's `now`, answer the
    /// callers it settled (under the lock: a oneshot send never waits),
    /// then publish what it asked for once the lock is released, in its
    /// order.
    fn drive<R>(
        &self,
        shared: &Arc<Shared>,
        input: impl FnOnce(&mut HostCalls, Instant) -> R,
    ) -> R {
        let mut effects = Vec::new();
        let result = {
            let mut node = lock(&shared.node);
            let calls = node.host_calls_mut();
            let result = input(calls, shared.clock.now());
            while let Some(output) = calls.poll_output() {
                match output {
                    HostCallOutput::Deliver(delivery) => effects.push(Effect::Deliver(delivery)),
                    HostCallOutput::StateChanged { host, state } => {
                        effects.push(Effect::Announce(host, state));
                    }
                    HostCallOutput::Settled {
                        call,
                        host,
                        outcome,
                    } => {
                        let reply = outcome.unwrap_or_else(|error| {
                            Reply::Error(error.error_body(&host, &calls.config().timing))
                        });
                        if let Some(waiter) = lock(&self.waiting).remove(&call) {
                            let _ = waiter.send(reply);
                        }
                    }
                    other => {
                        crate::unhandled::Unhandled::new("host-call output", &other).report();
                    }
                }
            }
            result
        };
        for effect in effects {
            match effect {
                Effect::Deliver(delivery) => publish::deliver(shared, delivery),
                Effect::Announce(host, state) => publish::announce(shared, &host, state),
            }
        }
        result
    }
}
