//! Requests with an idempotency key, server-wide: a key is scoped to the
//! caller's user *and* the method (so two users, or two methods, never
//! share an outcome), the cache remembers a digest of the params that
//! took it (the same key with other params is a conflict, never another
//! request's result), and keyed executions running at once are bounded
//! (past the bound: `rate_limited`, the key left free for the retry).

use crate::message::{ErrorBody, Payload, Reply};
use crate::server::{params_digest, Begin, IdempotencyCache, Violation};
use crate::time::Instant;

use super::Node;

/// A keyed execution the node admitted: the driver runs it and reports
/// its end with [`Node::complete_keyed`] or [`Node::abandon_keyed`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyedRun {
    scope: String,
    key: String,
}

impl KeyedRun {
    /// The key's scope (user and method).
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// The key.
    pub fn key(&self) -> &str {
        &self.key
    }
}

/// What to do with a keyed request.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum KeyedAdmit {
    /// Run it; it owns its key until it ends.
    Run(KeyedRun),
    /// The same key is running: answer with its outcome when it is known
    /// (the driver waits on `run`'s end).
    Wait(KeyedRun),
    /// Answer now: a stored outcome, or a refusal.
    Answer(Reply),
}

impl Node {
    /// A request for `method` with `params` and idempotency `key` from
    /// `user`: run it, wait for the same key's execution, or answer now.
    pub fn begin_keyed(
        &mut self,
        now: Instant,
        user: &str,
        method: &str,
        key: &str,
        params: &Payload,
    ) -> KeyedAdmit {
        let run = KeyedRun {
            scope: format!("{user}\u{0}{method}"),
            key: key.to_owned(),
        };
        match self
            .idempotency
            .begin(now, &run.scope, key, params_digest(params))
        {
            Begin::New if self.keyed_running >= self.config.max_keyed_running() => {
                self.idempotency.abandon(&run.scope, key);
                KeyedAdmit::Answer(Reply::Error(ErrorBody::new(
                    "rate_limited",
                    "too many idempotent requests running",
                )))
            }
            Begin::New => {
                self.keyed_running += 1;
                KeyedAdmit::Run(run)
            }
            Begin::InFlight => KeyedAdmit::Wait(run),
            Begin::Done(reply) => KeyedAdmit::Answer(reply),
            Begin::Conflict => KeyedAdmit::Answer(Violation::IdempotencyConflict.refusal()),
            _ => KeyedAdmit::Answer(Reply::Error(ErrorBody::new(
                "rate_limited",
                "too many idempotent requests in flight",
            ))),
        }
    }

    /// `run` finished with `reply`: stored for the retries.
    pub fn complete_keyed(&mut self, now: Instant, run: &KeyedRun, reply: &Reply) {
        self.keyed_running = self.keyed_running.saturating_sub(1);
        self.idempotency.complete(now, &run.scope, &run.key, reply);
    }

    /// `run` ended without an outcome (aborted): its key is free again.
    pub fn abandon_keyed(&mut self, run: &KeyedRun) {
        self.keyed_running = self.keyed_running.saturating_sub(1);
        self.idempotency.abandon(&run.scope, &run.key);
    }

    /// Keyed executions running now.
    pub fn keyed_running(&self) -> usize {
        self.keyed_running
    }

    /// The outcomes cache (its size, for metrics; its deadline, for the
    /// driver's expiry timer).
    pub fn idempotency(&self) -> &IdempotencyCache {
        &self.idempotency
    }

    /// Forget the outcomes whose retention ended by `now`.
    pub fn prune_idempotency(&mut self, now: Instant) {
        self.idempotency.prune(now);
    }
}
