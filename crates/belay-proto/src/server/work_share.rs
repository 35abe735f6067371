//! [`WorkPacer`]: one source's share of the server's work, taken by delay.
//!
//! Per-connection limits bound what one connection may send, but one source
//! (an IPv4 address or an IPv6 /64) may hold a thousand connections, each
//! within its own rate: together they can keep every worker thread busy,
//! and a well-behaved client's frame then waits behind theirs. The pacer
//! gives each source a share of the work in **units** ([`work_units`]: one
//! per frame, one more per 256 bytes of it), refilling at `rate` units per
//! second up to `burst`. Within the share, frames are read and handled at
//! once; after a frame past it, the connection that read it reads nothing
//! more until the time the share allows. Nothing is refused: the source's
//! connections are only read more slowly (TCP pushes back on the sender).
//!
//! It is a GCRA (the "virtual scheduling" form of a token bucket): one
//! timestamp, `full_at`, the time the source's bucket would be full again.
//! Reserving `u` units moves it `u / rate` later; the frame may go once
//! `full_at` is at most `burst / rate` ahead of now. Each reservation gets
//! its own time, so the source's waiting connections take turns without
//! waking together.
//!
//! A connection waits for one frame at a time, so what a source can owe is
//! bounded by its connections; and no wait is longer than [`MAX_WORK_WAIT`]:
//! past it the debt is forgiven (the source then gets a little more than its
//! share, at most one frame per connection per `MAX_WORK_WAIT`), so a paced
//! connection still reads often enough for its heartbeat.
//!
//! ```text
//!  frame of n bytes ──▶ reserve(now, work_units(n)) ──▶ None: go on reading
//!                                                   └─▶ Some(t): read nothing more until t
//! ```

use std::time::Duration;

use crate::time::Instant;

/// Bytes of a frame that cost one more unit (on top of the one every frame
/// costs): about what a core parses in well under a microsecond.
pub const WORK_UNIT_BYTES: usize = 256;

/// The longest a frame waits for its source's share.
pub const MAX_WORK_WAIT: Duration = Duration::from_millis(500);

/// The work units of a frame of `len` bytes: 1, plus 1 per
/// [`WORK_UNIT_BYTES`].
pub fn work_units(len: usize) -> u32 {
    u32::try_from(len / WORK_UNIT_BYTES)
        .unwrap_or(u32::MAX)
        .saturating_add(1)
}

/// One source's work share. Pure: the caller passes `now` and the share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkPacer {
    /// When the source's bucket is full again (at or before now: full).
    full_at: Instant,
}

impl WorkPacer {
    /// A pacer with a full bucket.
    pub fn new(now: Instant) -> Self {
        WorkPacer { full_at: now }
    }

    /// Take `units` of the share at `now`, refilling at `rate` units/s up
    /// to `burst` units. `None`: within the share; `Some(t)`: past it, the
    /// next frame waits until `t` (at most [`MAX_WORK_WAIT`] after `now`). A `rate` that is not
    /// positive means no share: always `None`.
    pub fn reserve(&mut self, now: Instant, units: u32, rate: f64, burst: u32) -> Option<Instant> {
        if rate.is_nan() || rate <= 0.0 {
            return None;
        }
        let cost = micros(f64::from(units) / rate);
        let tolerance = micros(f64::from(burst) / rate);
        let full_at = self.full_at.max(now).saturating_add(cost);
        let go = full_at.saturating_sub(tolerance);
        if go <= now {
            self.full_at = full_at;
            return None;
        }
        let latest = now.saturating_add(MAX_WORK_WAIT);
        if go > latest {
            // Forgive what is owed past the longest wait.
            self.full_at = latest.saturating_add(tolerance);
            return Some(latest);
        }
        self.full_at = full_at;
        Some(go)
    }

    /// Whether the bucket is full at `now` (nothing owed: the source may be
    /// forgotten).
    pub fn is_full(&self, now: Instant) -> bool {
        self.full_at <= now
    }
}

/// `secs` as whole microseconds (the core's clock resolution), rounded.
fn micros(secs: f64) -> Duration {
    // Saturating: a tiny rate makes a cost of years, not a panic.
    Duration::from_micros((secs * 1e6).round().min(u64::MAX as f64) as u64)
}

#[cfg(test)]
mod tests;
