//! A keyed execution on a node whose broker shares outcomes across nodes
//! ([`OutcomeStore`]): claim the key in the shared store, run while renewing
//! the claim, store the outcome before the reply leaves; or answer with the
//! outcome another node stored, or wait for the execution another node runs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use belay_proto::message::{ErrorBody, Reply};
use belay_proto::server::{lost_attempt, params_digest, Begin, SharedOutcome, Violation};

use crate::broker::{OutcomeKey, OutcomeStore};

use super::{call, RequestTask};

/// What the shared store made of a keyed request.
pub(super) enum Keyed {
    /// The request's outcome (run here, or stored by another node): the
    /// local cache keeps it too.
    Outcome(Reply),
    /// Not run and nothing to keep (the store was away, the params
    /// conflict, the first attempt was lost): the local claim is dropped.
    Refused(Reply),
}

/// The first wait for another node's execution; each next one doubles, up
/// to [`LONGEST_WAIT`].
const FIRST_WAIT: Duration = Duration::from_millis(20);
const LONGEST_WAIT: Duration = Duration::from_secs(1);

/// Run `task` (keyed, admitted by the local cache) through `store`.
pub(super) async fn run(task: &RequestTask, store: Arc<dyn OutcomeStore>) -> Keyed {
    let Some(idem) = &task.request.idem else {
        return Keyed::Outcome(call(task).await);
    };
    let key = OutcomeKey {
        scope: format!("{}\u{0}{}", task.principal.user, task.request.method),
        key: idem.clone(),
    };
    let digest = params_digest(&task.request.params);
    let claim = SharedOutcome::Running {
        digest,
        owner: next_owner(),
    };
    let config = &task.shared.config;
    let found = match store.claim(&key, &claim, config.idempotency_lease).await {
        Ok(found) => found,
        Err(error) => return Keyed::Refused(unavailable(&error.0)),
    };
    match SharedOutcome::decide(found.as_ref(), digest) {
        Begin::New => Keyed::Outcome(run_claimed(task, &*store, &key, &claim, digest).await),
        Begin::Done(reply) => Keyed::Outcome(reply),
        Begin::InFlight => {
            wait_elsewhere(&*store, &key, digest, config.idempotency_retention).await
        }
        Begin::Conflict => Keyed::Refused(Violation::IdempotencyConflict.refusal()),
        _ => Keyed::Refused(unavailable("unexpected idempotency record")),
    }
}

/// Run the method holding the claim, renewing its lease, and store the
/// outcome before returning it (so the reply never leaves before a retry
/// elsewhere could find it).
async fn run_claimed(
    task: &RequestTask,
    store: &dyn OutcomeStore,
    key: &OutcomeKey,
    claim: &SharedOutcome,
    digest: u64,
) -> Reply {
    let config = &task.shared.config;
    let lease = config.idempotency_lease;
    // Released at once if this future is dropped before the outcome is
    // stored (the task aborted or panicked), instead of lapsing.
    let mut held = Held {
        store,
        key,
        claim,
        settled: false,
    };
    let execution = call(task);
    tokio::pin!(execution);
    let mut renew = tokio::time::interval((lease / 3).max(Duration::from_millis(1)));
    renew.tick().await;
    let reply = loop {
        tokio::select! {
            reply = &mut execution => break reply,
            _ = renew.tick() => store.renew(key, claim, lease),
        }
    };
    let outcome = SharedOutcome::finished(digest, &reply, config.idempotency_max_bytes / 8);
    let stored = store
        .complete(key, claim, &outcome, config.idempotency_retention)
        .await;
    held.settled = true;
    if let Err(error) = stored {
        // The method ran: its caller gets the reply. A retry on another
        // node finds the claim and, once it lapses, is told the attempt
        // was lost rather than running it again.
        tracing::warn!(%error, "idempotent outcome not stored in the shared store");
    }
    reply
}

/// A claim this node holds while its execution runs.
struct Held<'a> {
    store: &'a dyn OutcomeStore,
    key: &'a OutcomeKey,
    claim: &'a SharedOutcome,
    /// The outcome was stored (or its store answered): nothing to release.
    settled: bool,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.store.release(self.key, self.claim);
        }
    }
}

/// Another node runs the key: poll the store until the outcome is stored,
/// the claim lapses (its node died), or `longest` has passed.
async fn wait_elsewhere(
    store: &dyn OutcomeStore,
    key: &OutcomeKey,
    digest: u64,
    longest: Duration,
) -> Keyed {
    let give_up = crate::clock::deadline_in(longest);
    let mut wait = FIRST_WAIT;
    loop {
        if crate::clock::left_until(give_up) < wait {
            return Keyed::Refused(lost_attempt());
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(LONGEST_WAIT);
        let found = match store.look(key).await {
            Ok(found) => found,
            Err(error) => return Keyed::Refused(unavailable(&error.0)),
        };
        match found
            .as_ref()
            .map(|record| SharedOutcome::decide(Some(record), digest))
        {
            None => return Keyed::Refused(lost_attempt()),
            Some(Begin::InFlight) => continue,
            Some(Begin::Done(reply)) => return Keyed::Outcome(reply),
            Some(Begin::Conflict) => {
                return Keyed::Refused(Violation::IdempotencyConflict.refusal())
            }
            Some(_) => return Keyed::Refused(unavailable("unexpected idempotency record")),
        }
    }
}

fn unavailable(reason: &str) -> Reply {
    Reply::Error(ErrorBody::new("unavailable", reason))
}

/// A name for one execution, unique across the cluster's nodes: this
/// process (its id and start time) and a counter.
fn next_owner() -> String {
    static NODE: OnceLock<String> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let node = NODE.get_or_init(|| {
        let started = crate::clock::unix_nanos();
        format!("{:x}.{started:x}", std::process::id())
    });
    format!("{node}.{:x}", NEXT.fetch_add(1, Ordering::Relaxed))
}
