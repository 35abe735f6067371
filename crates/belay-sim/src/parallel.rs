//! Independent runs on every core, results in input order.
//!
//! Each run is single-threaded and deterministic, so spreading runs over
//! threads changes nothing but the wall time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `run(i)` for every `i < jobs`, on up to `available_parallelism` threads;
/// the results come back indexed by `i`.
pub(crate) fn map_parallel<T, F>(jobs: usize, run: F) -> Vec<T>
where
    T: Send,
    F: Fn(usize) -> T + Sync,
{
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs);
    if threads <= 1 {
        return (0..jobs).map(run).collect();
    }
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<T>>> = Mutex::new((0..jobs).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= jobs {
                    break;
                }
                let result = run(i);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(result);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every job ran"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_input_order() {
        let squares = map_parallel(20, |i| i * i);
        assert_eq!(squares, (0..20).map(|i| i * i).collect::<Vec<_>>());
    }
}
