//! The figures of one herd run, computed from what the fleet recorded:
//! every dial's instant and every change of a client's readiness, all in
//! microseconds since the server was killed. The definitions are the
//! simulator's (docs/SIMULATION.md, "Metrics"), so the two can be set side
//! by side.

use std::time::Duration;

/// A client became ready (`true`) or stopped being ready (`false`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadyChange {
    /// Microseconds since the kill (negative: before it).
    pub at_us: i64,
    /// Whether the client is ready from then on.
    pub ready: bool,
}

/// What happened after the kill, reduced to the figures of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// Dials from the kill to the end of the run.
    pub attempts_total: u64,
    /// Dials before the server was back up.
    pub attempts_while_down: u64,
    /// Those of them made while the new server was starting (from its
    /// spawn until it said it listens): some of them reach it.
    pub attempts_while_starting: u64,
    /// Dials from the server's return to the end of the run.
    pub attempts_after_return: u64,
    /// Most dials in any window `[t, t + 1 s)` with `t` at or after the return.
    pub peak_after_return: u64,
    /// Clients that lost readiness after the kill (all of them, if every
    /// client noticed the outage).
    pub noticed: u64,
    /// The first instant (since the kill) at which half, 99 % and all of the
    /// clients were ready at once, after the return; `None`: not within the run.
    pub t50: Option<Duration>,
    /// See [`Figures::t50`].
    pub t99: Option<Duration>,
    /// See [`Figures::t50`].
    pub t100: Option<Duration>,
    /// Clients ready when the run ended.
    pub connected_at_end: u64,
    /// Clients that became ready per second over the last 10 s of the run
    /// (the goodput a stalled server still manages).
    pub goodput_last_10s: f64,
    /// Dials in each second `[k, k + 1)` s after the kill.
    pub attempts_per_s: Vec<u64>,
    /// Clients ready at the end of each second after the kill.
    pub connected_per_s: Vec<u64>,
}

/// The figures of a run of `clients` clients, whose new server was
/// spawned `spawn_us` and came back `up_us` after the kill, and that ended
/// `end_us` after it. `dials_us` and
/// `changes` may come in any order; entries before the kill are ignored
/// except that every client counts as ready at the kill (the run starts
/// with the whole fleet connected).
pub fn compute(
    clients: u64,
    spawn_us: i64,
    up_us: i64,
    end_us: i64,
    dials_us: &[i64],
    changes: &[ReadyChange],
) -> Figures {
    let mut dials: Vec<i64> = dials_us
        .iter()
        .copied()
        .filter(|&t| (0..end_us).contains(&t))
        .collect();
    dials.sort_unstable();
    let after: Vec<i64> = dials.iter().copied().filter(|&t| t >= up_us).collect();
    let mut changes: Vec<ReadyChange> = changes
        .iter()
        .copied()
        .filter(|c| (0..end_us).contains(&c.at_us))
        .collect();
    changes.sort_by_key(|c| (c.at_us, c.ready));
    let seconds = usize::try_from(end_us.max(0).unsigned_abs().div_ceil(1_000_000)).unwrap_or(0);
    let mut attempts_per_s = vec![0u64; seconds];
    for &t in &dials {
        if let Some(slot) = attempts_per_s.get_mut(usize::try_from(t / 1_000_000).unwrap_or(0)) {
            *slot += 1;
        }
    }
    let mut ready = clients;
    let mut noticed = 0;
    let (mut t50, mut t99, mut t100) = (None, None, None);
    let mut connected_per_s = vec![0u64; seconds];
    let mut next_second = 0usize;
    let mut recent = 0u64;
    let last_window = end_us - 10_000_000;
    for change in &changes {
        while next_second < seconds && change.at_us >= (next_second as i64 + 1) * 1_000_000 {
            connected_per_s[next_second] = ready;
            next_second += 1;
        }
        if change.ready {
            ready += 1;
            if change.at_us >= last_window {
                recent += 1;
            }
        } else {
            ready = ready.saturating_sub(1);
            noticed += 1;
        }
        if change.ready && change.at_us >= up_us {
            let at = Duration::from_micros(change.at_us.unsigned_abs());
            let reached = |share: f64| ready as f64 >= (clients as f64 * share).ceil();
            if t50.is_none() && reached(0.5) {
                t50 = Some(at);
            }
            if t99.is_none() && reached(0.99) {
                t99 = Some(at);
            }
            if t100.is_none() && ready >= clients {
                t100 = Some(at);
            }
        }
    }
    for slot in connected_per_s.iter_mut().skip(next_second) {
        *slot = ready;
    }
    let window_s = (end_us.min(10_000_000) as f64 / 1e6).max(1e-6);
    Figures {
        attempts_total: dials.len() as u64,
        attempts_while_down: (dials.len() - after.len()) as u64,
        attempts_while_starting: dials
            .iter()
            .filter(|&&t| (spawn_us..up_us).contains(&t))
            .count() as u64,
        attempts_after_return: after.len() as u64,
        peak_after_return: peak_in_window(&after, 1_000_000),
        noticed,
        t50,
        t99,
        t100,
        connected_at_end: ready,
        goodput_last_10s: recent as f64 / window_s,
        attempts_per_s,
        connected_per_s,
    }
}

/// The most instants of sorted `times` in any window `[t, t + width)`
/// (a sliding window over the instants, two pointers).
pub fn peak_in_window(times: &[i64], width: i64) -> u64 {
    let mut start = 0;
    let mut best = 0;
    for (end, &t) in times.iter().enumerate() {
        while times[start] <= t - width {
            start += 1;
        }
        best = best.max(end + 1 - start);
    }
    best as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000;

    fn change(at_us: i64, ready: bool) -> ReadyChange {
        ReadyChange { at_us, ready }
    }

    #[test]
    fn the_peak_is_a_sliding_window_not_fixed_buckets() {
        // 0.6 s and 1.4 s are in different whole seconds, but within 1 s.
        assert_eq!(peak_in_window(&[600_000, 1_400_000], S), 2);
        assert_eq!(peak_in_window(&[0, S], S), 1);
        assert_eq!(peak_in_window(&[], S), 0);
        assert_eq!(peak_in_window(&[5, 5, 5], S), 3);
    }

    #[test]
    fn a_two_client_run_has_its_figures() {
        // Both drop at the kill; the server is back at 2 s; the first
        // client gets in at 2.5 s, the second after a refusal at 3.2 s.
        let dials = [-5 * S, S / 2, S, 2_100_000, 2_200_000, 3_200_000];
        let changes = [
            change(-6 * S, true),
            change(1_000, false),
            change(2_000, false),
            change(2_500_000, true),
            change(3_300_000, true),
        ];
        let f = compute(2, 900_000, 2 * S, 4 * S, &dials, &changes);
        assert_eq!(f.attempts_total, 5);
        assert_eq!(f.attempts_while_down, 2);
        assert_eq!(f.attempts_while_starting, 1);
        assert_eq!(f.attempts_after_return, 3);
        assert_eq!(f.peak_after_return, 2);
        assert_eq!(f.noticed, 2);
        assert_eq!(f.t50, Some(Duration::from_micros(2_500_000)));
        assert_eq!(f.t99, Some(Duration::from_micros(3_300_000)));
        assert_eq!(f.t100, f.t99);
        assert_eq!(f.connected_at_end, 2);
        assert_eq!(f.attempts_per_s, vec![1, 1, 2, 1]);
        assert_eq!(f.connected_per_s, vec![0, 0, 1, 2]);
    }

    #[test]
    fn a_run_that_never_recovers_has_no_times_and_its_goodput() {
        let changes = [change(10, false), change(20, false), change(15 * S, true)];
        let f = compute(2, 2 * S, 2 * S, 20 * S, &[3 * S], &changes);
        assert_eq!(f.noticed, 2);
        assert_eq!(f.t50, Some(Duration::from_secs(15)));
        assert_eq!(f.t99, None);
        assert_eq!(f.t100, None);
        assert_eq!(f.connected_at_end, 1);
        assert!((f.goodput_last_10s - 0.1).abs() < 1e-9);
        assert_eq!(f.connected_per_s.len(), 20);
        assert_eq!(f.connected_per_s[14], 0);
        assert_eq!(f.connected_per_s[15], 1);
        assert_eq!(f.connected_per_s[19], 1);
    }
}
