//! Running one request: authorization already passed; idempotency, the
//! method call, and exactly one response (or the connection closes).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use belay_proto::message::{ErrorBody, Reply, Request, Response, ServerMessage};
use belay_proto::server::Begin;
use tokio::sync::broadcast;

use crate::auth::Principal;
use crate::connection::{queue, Control, Outbound};
use crate::metrics::lock;
use crate::rpc::CallContext;
use crate::server::Shared;

pub(crate) struct RequestTask {
    pub(crate) shared: Arc<Shared>,
    pub(crate) out: Outbound,
    pub(crate) control: crate::mailbox::ControlSender,
    pub(crate) in_flight: Arc<AtomicUsize>,
    pub(crate) delay: Option<Duration>,
    pub(crate) principal: Principal,
    pub(crate) session: Arc<str>,
    pub(crate) request: Request,
}

/// Counts a request in flight for as long as it runs (drain waits on it).
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn enter(counter: &Arc<AtomicUsize>) -> Self {
        counter.fetch_add(1, Ordering::AcqRel);
        InFlight(Arc::clone(counter))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

pub(crate) async fn run(task: RequestTask) {
    let _in_flight = InFlight::enter(&task.in_flight);
    if let Some(delay) = task.delay {
        tokio::time::sleep(delay).await;
    }
    let id = task.request.id;
    let reply = match task.request.idem.clone() {
        Some(key) => idempotent(&task, key).await,
        None => call(&task).await,
    };
    let outcome = match &reply {
        Reply::Result(_) => "ok",
        Reply::Error(_) => "error",
    };
    task.shared.metrics.count_request(outcome);
    if !queue(&task.out, &ServerMessage::Response(Response { id, reply })) {
        let _ = task.control.send(Control::SlowConsumer);
    }
}

async fn call(task: &RequestTask) -> Reply {
    let ctx = CallContext {
        principal: task.principal.clone(),
        session: Arc::clone(&task.session),
        idempotency_key: task.request.idem.clone(),
    };
    match task
        .shared
        .methods
        .call(&task.request.method, ctx, task.request.params.clone())
        .await
    {
        Ok(result) => Reply::Result(result),
        Err(error) => Reply::Error(error.into_body()),
    }
}

/// A retried request with the same key (for the same user) gets the first
/// result instead of running twice; a retry while the first still runs waits
/// for it.
async fn idempotent(task: &RequestTask, key: String) -> Reply {
    let scope = task.principal.user.clone();
    let now = task.shared.clock.now();
    // Lock order: waiters, then the cache. A retry that finds the key in
    // flight subscribes before the first call can publish its result (the
    // first call completes the cache before it takes the waiters' lock).
    let (begin, waiter) = {
        let mut waiters = lock(&task.shared.idempotent_waiters);
        let begin = lock(&task.shared.idempotency).begin(now, &scope, &key);
        let waiter = matches!(begin, Begin::InFlight).then(|| {
            waiters
                .entry((scope.clone(), key.clone()))
                .or_insert_with(|| broadcast::channel(1).0)
                .subscribe()
        });
        (begin, waiter)
    };
    match begin {
        Begin::Done(reply) => reply,
        Begin::Full => Reply::Error(ErrorBody::new(
            "rate_limited",
            "too many idempotent requests in flight",
        )),
        Begin::InFlight => match waiter {
            Some(mut rx) => rx.recv().await.unwrap_or_else(|_| {
                Reply::Error(ErrorBody::new("unavailable", "the first attempt was lost"))
            }),
            None => call(task).await,
        },
        Begin::New => {
            let reply = call(task).await;
            let now = task.shared.clock.now();
            lock(&task.shared.idempotency).complete(now, &scope, &key, reply.clone());
            if let Some(waiters) = lock(&task.shared.idempotent_waiters).remove(&(scope, key)) {
                let _ = waiters.send(reply.clone());
            }
            reply
        }
        _ => call(task).await,
    }
}
