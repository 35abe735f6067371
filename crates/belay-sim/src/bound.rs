//! What the best possible protocol can do when notices of a server's
//! death arrive spread over a window (docs/SIMULATION.md, "Detection
//! spread").
//!
//! `N` clients lose a server that is down for `D` and then admits `C`
//! connections per second; client `i` notices the loss at a moment spread
//! uniformly over `[0, W)`. Whatever the clients and the server agree on,
//! and even if they knew `D` and `W`:
//!
//! * **Attempts per client after the return ≥ 1.** A client learns that the
//!   server is back, and gets in, only by an attempt that reaches it; every
//!   client is disconnected at `D` (the server forgot it), so each makes at
//!   least one attempt from `D` on.
//! * **All connected ≥ `T* = max(D + N / C, W)`.** Admission lets in at most
//!   `C` per second from `D` on (`N / C` seconds for the fleet), and the
//!   last client cannot attempt before it notices (just before `W`).
//! * **Peak attempts per second after the return ≥ `N / (T* − D)`**, for a
//!   protocol that has everyone in by `T*`: each client's successful attempt
//!   falls in `[D, T*]`, so the busiest second there sees at least the
//!   average, `C` when `T* = D + N / C`, `N / (W − D)` when the notices
//!   take longer than admission. (Clients need not attempt the moment they
//!   notice, so the noticing rate `N / W` bounds nothing.)
//!
//! The first two bound their columns on their own, the third that of any
//! protocol that reaches the second; the simulator measures how close one
//! protocol comes to all three at once.

use std::time::Duration;

/// The bound of each column for one spread-detection outage.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct SpreadBound {
    /// Fewest attempts per second after the return, in the busiest second.
    pub peak: f64,
    /// Fewest attempts per client after the return.
    pub attempts_per_client: f64,
    /// Earliest moment every client can be connected, from the incident.
    pub all_connected: Duration,
}

/// The bound for `clients` clients, a server down for `down_for` that then
/// admits `rate` per second, and notices spread over `window`.
pub fn spread_bound(
    clients: usize,
    rate: u64,
    down_for: Duration,
    window: Duration,
) -> SpreadBound {
    let n = clients as f64;
    let c = rate.max(1) as f64;
    let down = down_for.as_secs_f64();
    let all_connected = (down + n / c).max(window.as_secs_f64());
    SpreadBound {
        peak: n / (all_connected - down),
        attempts_per_client: 1.0,
        all_connected: Duration::from_secs_f64(all_connected),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_fleet_is_bounded_by_admission_until_notices_outrun_it() {
        let s = Duration::from_secs;
        for w in [0, 5, 10, 20] {
            let b = spread_bound(10_000, 500, s(10), s(w));
            assert_eq!(b.peak, 500.0, "W = {w}");
            assert_eq!(b.all_connected, s(30));
            assert_eq!(b.attempts_per_client, 1.0);
        }
        // Notices over 15 s: all can still be in by 30 s, at the admission rate.
        assert_eq!(spread_bound(10_000, 500, s(10), s(15)).peak, 500.0);
        // Notices over 45 s: in by 45 s, 10,000 over the 35 s after the return.
        let b = spread_bound(10_000, 500, s(10), s(45));
        assert!((b.peak - 285.71).abs() < 0.01, "{}", b.peak);
        // A long spread: the last notice comes after the fleet could be in.
        assert_eq!(spread_bound(10_000, 500, s(10), s(40)).all_connected, s(40));
    }
}
