//! Expiry of idempotency outcomes while nobody sends keyed requests.
//!
//! The cache prunes itself on every keyed request, but a burst that stops
//! leaves its outcomes (up to `idempotency_max_bytes`) until the next one.
//! This task prunes at the cache's next deadline, so the memory comes back
//! when the retention ends, traffic or not.

use std::sync::Arc;
use std::time::Duration;

use crate::metrics::lock;
use crate::shared::Shared;

/// The longest sleep: a key stored meanwhile has a later deadline than any
/// held now, so waking this often only bounds how late a new first key is
/// noticed.
const RECHECK: Duration = Duration::from_secs(1);

/// Prune the cache at each deadline until the task is aborted.
pub(crate) async fn run(shared: Arc<Shared>) {
    loop {
        let now = shared.clock.now();
        let next = lock(&shared.node).idempotency().poll_timeout();
        let wake = next
            .map(|at| shared.clock.to_std(at))
            .unwrap_or_else(|| shared.clock.to_std(now) + RECHECK)
            .min(shared.clock.to_std(now) + RECHECK);
        tokio::time::sleep_until(wake.into()).await;
        let now = shared.clock.now();
        lock(&shared.node).prune_idempotency(now);
    }
}
