//! Benchmarks of the Redis cluster broker (`cluster-bench`,
//! `scripts/bench-cluster.sh`, docs/BENCHMARKS.md "Cluster on Redis").
//!
//! ```text
//!  cluster-bench ──spawns──▶ redis-server (own port, temp dir, no persistence)
//!       │        ──spawns──▶ N × `cluster-bench node` (Belay, --broker redis://…) ◀── /proc/PID
//!       │        ──spawns──▶ K × `cluster-bench hold` (load clients, ≤ 19,000 each)
//!       └── publishers, subscribers, reconnecting clients (this crate), 127.0.0.x sources
//! ```
//!
//! * [`redis`]: a redis-server of the benchmark's own, and `redis-benchmark`.
//! * [`node`]: a Belay node process (the benchmark server on the memory or
//!   the Redis broker; a private port and optionally a port shared with
//!   `SO_REUSEPORT`), and its parent-side handle.
//! * [`subscribers`]: subscribers spread over nodes, with offset checks;
//!   the `bench.publish` caller.
//! * [`publish`]: publishing through Redis on 1, 2, 4 nodes against the
//!   memory broker and `redis-benchmark`.
//! * [`capacity`]: idle then subscribed connections over nodes sharing one
//!   port, load clients split over processes, a broadcast to all.
//! * [`recovery`]: node A killed with SIGKILL, its clients resumed on B.
//!
//! Every loop is bounded in count and time, and all traffic is loopback.

pub mod capacity;
pub mod node;
pub mod publish;
pub mod recovery;
pub mod redis;
pub mod redis_cluster;
pub mod shards;
pub mod subscribers;

use crate::measure::procfs::{self, CLK_TCK};

/// CPU seconds (utime + stime) of the processes `pids`, summed; processes
/// that are gone count 0.
pub fn cpu_seconds(pids: &[u32]) -> f64 {
    pids.iter()
        .filter_map(|pid| procfs::sample(*pid).ok())
        .map(|s| s.cpu_ticks as f64 / CLK_TCK)
        .sum()
}

/// `values` as `median (min–max)` with `digits` decimals.
pub fn spread(values: &[f64], digits: usize) -> String {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let Some(m) = crate::measure::stats::median(&finite) else {
        return "-".into();
    };
    let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{m:.digits$} ({lo:.digits$}–{hi:.digits$})")
}

/// The median of `values`, NaN without any.
pub fn med(values: &[f64]) -> f64 {
    crate::measure::stats::median(values).unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads() {
        assert_eq!(spread(&[3.0, 1.0, 2.0], 1), "2.0 (1.0–3.0)");
        assert_eq!(spread(&[], 1), "-");
        assert_eq!(spread(&[f64::NAN, 4.0], 0), "4 (4–4)");
        assert!(med(&[]).is_nan());
    }
}
