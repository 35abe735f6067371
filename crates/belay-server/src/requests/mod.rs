//! Running requests: admission (in-flight bound, idempotency), the method
//! call, and exactly one response (or the connection closes).
//!
//! **Idempotency keys are bound to their request.** A key is scoped to the
//! principal's user *and* the method, and the cache remembers a digest of
//! the params that took it, so the same key with other params is answered
//! `bad_request` (never another request's result), while a true retry, on
//! this connection or any other, gets the stored outcome. The decision is
//! taken on the connection's task in arrival order, so of two pipelined
//! requests with one key the first runs and the second waits for it.
//!
//! **Across nodes.** When the broker shares outcomes
//! ([`Broker::outcomes`](crate::broker::Broker::outcomes)), a key the local
//! cache admits is claimed in the shared store too before it runs, and its
//! outcome is stored there before the reply leaves: a retry that lands on
//! another node (after this one was killed) gets the stored outcome, waits
//! for the execution still running elsewhere, or learns that it was lost
//! (its node stopped renewing the claim). A store that cannot answer
//! refuses the request `unavailable` instead of running it unguarded.
//!
//! **Work of a departed connection.** A connection keeps the handles of its
//! request tasks; when it ends (other than by a drain, which waits for
//! them) it aborts them, except keyed executions: those finish so their
//! outcome can be replayed to the retry the client will send. Keyed
//! executions are bounded server-wide (`ServerConfig::max_keyed_running`).

use std::sync::Arc;

use belay_proto::message::{ErrorBody, Reply, Request};
use belay_proto::server::{lost_attempt, KeyedAdmit, KeyedRun, Ticket};
use tokio::sync::broadcast;
use tokio::task::AbortHandle;

use crate::auth::Principal;
use crate::mailbox::{Control, ControlSender};
use crate::method_table::Caller;
use crate::metrics::lock;
use crate::shared::Shared;

mod shared_store;

/// What to do with a request that passed authorization.
pub(crate) enum Admit {
    /// Run it, owning its idempotency key if it carries one.
    Run(Option<KeyOwner>),
    /// The same key is running: answer with its outcome when it is known.
    Wait(broadcast::Receiver<Reply>),
    /// Answer now (a stored outcome, or a refusal).
    Answer(Reply),
}

/// Decide, on the connection's task, what to do with `request`: the
/// node decides a keyed request ([`Node::begin_keyed`]: the key's scope,
/// its stored outcome, the bound on keyed executions); this keeps the
/// waiters of a key that is running.
///
/// [`Node::begin_keyed`]: belay_proto::server::Node::begin_keyed
pub(crate) fn admit(shared: &Arc<Shared>, principal: &Principal, request: &Request) -> Admit {
    let Some(key) = &request.idem else {
        return Admit::Run(None);
    };
    let now = shared.clock.now();
    // Lock order: waiters, then the node. A retry that finds the key in
    // flight subscribes before the first call can publish its result (the
    // first call completes the key in the node before it takes the
    // waiters' lock).
    let mut waiters = lock(&shared.idempotent_waiters);
    let admit =
        lock(&shared.node).begin_keyed(now, &principal.user, &request.method, key, &request.params);
    match admit {
        KeyedAdmit::Run(run) => Admit::Run(Some(KeyOwner::new(shared, run))),
        KeyedAdmit::Wait(run) => Admit::Wait(
            waiters
                .entry(run)
                .or_insert_with(|| broadcast::channel(1).0)
                .subscribe(),
        ),
        KeyedAdmit::Answer(reply) => Admit::Answer(reply),
        other => {
            crate::unhandled::Unhandled::new("keyed admission", &other).report();
            Admit::Answer(Reply::Error(ErrorBody::new(
                "internal",
                "the server cannot run this keyed request",
            )))
        }
    }
}

/// One request to run; its outcome goes back to the connection that
/// called it (the core sends the one `response`).
pub(crate) struct RequestTask {
    pub(crate) shared: Arc<Shared>,
    pub(crate) control: ControlSender,
    pub(crate) ticket: Ticket,
    pub(crate) principal: Principal,
    pub(crate) session: Arc<str>,
    pub(crate) request: Request,
}

/// Owns an idempotency key while its execution runs. Completing stores the
/// outcome and wakes the waiters; dropping it unfinished (the task was
/// aborted or panicked) forgets the key, and the waiters learn that the
/// first attempt was lost, so nothing waits for an outcome that never comes.
pub(crate) struct KeyOwner {
    shared: Arc<Shared>,
    run: Option<KeyedRun>,
}

impl KeyOwner {
    fn new(shared: &Arc<Shared>, run: KeyedRun) -> Self {
        KeyOwner {
            shared: Arc::clone(shared),
            run: Some(run),
        }
    }

    fn complete(mut self, reply: &Reply) {
        if let Some(run) = self.run.take() {
            let now = self.shared.clock.now();
            lock(&self.shared.node).complete_keyed(now, &run, reply);
            if let Some(waiters) = lock(&self.shared.idempotent_waiters).remove(&run) {
                let _ = waiters.send(reply.clone());
            }
        }
    }
}

impl Drop for KeyOwner {
    fn drop(&mut self) {
        if let Some(run) = self.run.take() {
            let mut waiters = lock(&self.shared.idempotent_waiters);
            lock(&self.shared.node).abandon_keyed(&run);
            // Dropping the sender tells every waiter the attempt was lost.
            waiters.remove(&run);
        }
    }
}

/// Run `task` to its one response (`start` is [`Admit::Run`] or
/// [`Admit::Wait`]; an [`Admit::Answer`] is sent as it is).
pub(crate) async fn run(task: RequestTask, start: Admit) {
    let reply = match start {
        Admit::Answer(reply) => reply,
        Admit::Wait(mut rx) => rx.recv().await.unwrap_or_else(|_| lost_attempt()),
        Admit::Run(owner) => match (owner, task.shared.broker.outcomes()) {
            (Some(owner), Some(store)) => match shared_store::run(&task, store).await {
                shared_store::Keyed::Outcome(reply) => {
                    owner.complete(&reply);
                    reply
                }
                // Dropping the local claim lets a retry ask again.
                shared_store::Keyed::Refused(reply) => reply,
            },
            (owner, _) => {
                let reply = call(&task).await;
                if let Some(owner) = owner {
                    owner.complete(&reply);
                }
                reply
            }
        },
    };
    let outcome = match &reply {
        Reply::Result(_) => "ok",
        Reply::Error(_) => "error",
    };
    task.shared.metrics.count_request(outcome);
    // A connection that is gone no longer waits (a keyed outcome is stored
    // for the retry all the same).
    let _ = task.control.send(Control::Reply(task.ticket, reply));
}

async fn call(task: &RequestTask) -> Reply {
    let caller = Caller {
        principal: task.principal.clone(),
        session: Arc::clone(&task.session),
        idempotency_key: task.request.idem.clone(),
        server: crate::Server {
            shared: Arc::clone(&task.shared),
        },
    };
    let params = || task.request.params.clone();
    match task.request.method.as_str() {
        crate::client_publish::METHOD => {
            return crate::client_publish::run(caller.into(), params()).await
        }
        crate::hosts::call::METHOD => {
            return crate::hosts::call::run(caller.into(), params()).await
        }
        crate::hosts::answer::METHOD => {
            return crate::hosts::answer::run(caller.into(), params()).await
        }
        _ => {}
    }
    match task
        .shared
        .methods
        .call(&task.request.method, caller, params())
        .await
    {
        Ok(result) => Reply::Result(result.into()),
        Err(error) => Reply::Error(error),
    }
}

/// The request tasks of one connection.
#[derive(Default)]
pub(crate) struct RequestSet {
    tasks: Vec<(AbortHandle, bool)>,
}

impl RequestSet {
    /// Track a task; `keyed` ones survive the connection.
    pub(crate) fn push(&mut self, handle: AbortHandle, keyed: bool) {
        self.tasks.retain(|(task, _)| !task.is_finished());
        self.tasks.push((handle, keyed));
    }

    /// The connection is gone: stop every task whose outcome nobody can
    /// receive (keyed executions finish, for the client's retry).
    pub(crate) fn abandon(&mut self) {
        for (task, keyed) in self.tasks.drain(..) {
            if !keyed {
                task.abort();
            }
        }
    }
}
