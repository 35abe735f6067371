//! [`OutcomeStore`]: idempotent outcomes shared by every node of a cluster.
//!
//! Each node keeps its own [`IdempotencyCache`](belay_proto::server::IdempotencyCache)
//! (pipelined retries on one connection, retries on the same node). A
//! broker that serves several nodes also offers an outcome store
//! ([`Broker::outcomes`](super::Broker::outcomes)): before a keyed request
//! runs, its node claims the key there, so a retry that reaches another
//! node (after the first one was killed) is answered with the stored
//! outcome instead of running again. Records and their meaning are
//! belay-proto's [`SharedOutcome`]; the store sets, compares and expires
//! them.
//!
//! While an execution runs, its node renews the claim's lease
//! ([`OutcomeStore::renew`]); a node that dies stops renewing, the claim
//! lapses, and a retry waiting elsewhere is told the first attempt was lost
//! (`unavailable`, retry again), never left waiting.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use belay_proto::server::SharedOutcome;

/// A key as the shared store knows it: the scope (user and method) and the
/// client's key. The store keeps both in full, so two users' keys never
/// share a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutcomeKey {
    /// `"{user}\0{method}"`.
    pub scope: String,
    /// The request's `idem`.
    pub key: String,
}

/// Why the shared store could not answer. The request is then refused
/// with `unavailable` (retryable) rather than run without the guarantee.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("idempotency store unavailable: {0}")]
pub struct OutcomeError(pub String);

/// A store operation on its way: resolves to its answer or why it failed.
pub type OutcomeFuture<T> = Pin<Box<dyn Future<Output = Result<T, OutcomeError>> + Send>>;

/// Idempotency records shared by every node.
pub trait OutcomeStore: Send + Sync + 'static {
    /// Take `key` for `claim` (a [`SharedOutcome::Running`]) with a lease
    /// of `lease`, unless it holds a record: resolves to `None` when the
    /// key was taken, else to the record found (left as it was). A record
    /// the store cannot read counts as unavailable.
    fn claim(
        &self,
        key: &OutcomeKey,
        claim: &SharedOutcome,
        lease: Duration,
    ) -> OutcomeFuture<Option<SharedOutcome>>;

    /// The record held for `key` now, if any.
    fn look(&self, key: &OutcomeKey) -> OutcomeFuture<Option<SharedOutcome>>;

    /// Replace `claim` (still held) with `outcome`, kept for `retention`.
    /// A claim that lapsed meanwhile is replaced only if nobody took the
    /// key since. The store bounds the bytes its node has written and
    /// drops its oldest outcomes to stay within them.
    fn complete(
        &self,
        key: &OutcomeKey,
        claim: &SharedOutcome,
        outcome: &SharedOutcome,
        retention: Duration,
    ) -> OutcomeFuture<()>;

    /// Extend `claim`'s lease to `lease` from now (it runs still). Fire
    /// and forget: a renewal that fails shows as a lapsed claim.
    fn renew(&self, key: &OutcomeKey, claim: &SharedOutcome, lease: Duration);

    /// Forget `claim` (the execution ended without an outcome to keep).
    /// Fire and forget: a release that fails lapses with the lease.
    fn release(&self, key: &OutcomeKey, claim: &SharedOutcome);
}
