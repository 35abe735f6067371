//! How far a set of runs has got, in virtual time, for a progress bar.
//!
//! The runs only bump atomic counters; whoever shows the progress (the CLI,
//! with indicatif) polls them from another thread.

use std::sync::atomic::{AtomicU64, Ordering};

/// Virtual milliseconds simulated so far, over every run of a batch.
#[derive(Debug, Default)]
pub struct Progress {
    done_ms: AtomicU64,
    total_ms: AtomicU64,
}

impl Progress {
    /// No work announced yet.
    pub fn new() -> Self {
        Progress::default()
    }

    /// Announce `ms` more virtual milliseconds of work.
    pub fn add_total(&self, ms: u64) {
        self.total_ms.fetch_add(ms, Ordering::Relaxed);
    }

    /// `ms` virtual milliseconds were simulated.
    pub fn advance(&self, ms: u64) {
        self.done_ms.fetch_add(ms, Ordering::Relaxed);
    }

    /// `(done, total)` in virtual milliseconds; `done` never exceeds `total`
    /// once every run has announced its work.
    pub fn snapshot(&self) -> (u64, u64) {
        let total = self.total_ms.load(Ordering::Relaxed);
        let done = self.done_ms.load(Ordering::Relaxed);
        (done.min(total), total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_adds_up_and_never_overshoots() {
        let p = Progress::new();
        p.add_total(100);
        p.advance(60);
        p.advance(70);
        assert_eq!(p.snapshot(), (100, 100));
    }
}
