//! The tokio runtime a Belay server process runs on (`belay serve`, and
//! belay-load's `server-bench`, `cluster-bench` and `host-bench`), with the
//! one allocator setting the runtime has to make.
//!
//! Both binaries run on jemalloc (`.cargo/config.toml`: a background thread
//! purges freed pages after 1 s). What it cannot purge is memory a worker
//! thread keeps in its thread cache: up to 200 freed objects per size class,
//! scattered over the pages of a burst that is otherwise gone (a storm of
//! 100,000 channels), each one pinning its page. A worker that goes idle
//! hands its cache back, at most once a second, so those pages can be
//! purged too. Measured with `belay abuse --only subscribe-storm`: RSS after
//! the storm 1.51× its baseline before, 1.12× after (docs/ABUSE.md).

use std::cell::Cell;
use std::io;
use std::time::{Duration, Instant};

use tikv_jemalloc_ctl::{Access, AsName};

/// How often, at most, an idle worker hands its thread cache back.
const CACHE_RETURN_EVERY: Duration = Duration::from_secs(1);

/// A multi-threaded runtime with every driver enabled, whose workers return
/// their allocator thread cache when they park (at most once a second).
pub fn build() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_park(return_thread_cache_if_due)
        .build()
}

/// [`build`] with `workers` worker threads (`None`: tokio's default, one
/// per CPU, or `TOKIO_WORKER_THREADS`), so a benchmark knows the server's
/// CPU budget (`belay serve --worker-threads`).
pub fn build_with_workers(workers: Option<usize>) -> io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = workers {
        builder.worker_threads(workers);
    }
    builder
        .enable_all()
        .on_thread_park(return_thread_cache_if_due)
        .build()
}

fn return_thread_cache_if_due() {
    thread_local!(static LAST_RETURN: Cell<Option<Instant>> = const { Cell::new(None) });
    let now = Instant::now();
    LAST_RETURN.with(|last| {
        if last
            .get()
            .is_some_and(|at| now.duration_since(at) < CACHE_RETURN_EVERY)
        {
            return;
        }
        last.set(Some(now));
        // Disabling a thread's cache flushes it (jemalloc's
        // `thread.tcache.enabled`); enabling it again starts an empty one.
        // Either write fails only when the allocator is not jemalloc, and
        // then there is no cache to return.
        let enabled = b"thread.tcache.enabled\0".name();
        let _ = enabled.write(false);
        let _ = enabled.write(true);
    });
}
