//! The figures a mass-reconnect run is judged by, computed from a
//! [`Recorder`].

use std::time::Duration;

use belay_proto::Instant;

use crate::record::Recorder;

/// The figures of one outage or planned-restart run. Times are measured
/// from the incident (the outage start, "t = 0").
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OutageMetrics {
    /// Clients in the fleet.
    pub clients: usize,
    /// The largest number of attempts in any window `[t, t + 1 s)` with
    /// `t ≥ D` (the server's return): a sliding window over the attempt
    /// instants, not fixed one-second buckets.
    pub peak_after_return: usize,
    /// Where that window starts, relative to the incident.
    pub peak_at: Option<Duration>,
    /// Attempts from the incident until every client is connected (or until
    /// the horizon if that never happens).
    pub total_attempts: usize,
    /// Attempts that failed (refused while down, or rejected for lack of a
    /// token), in the same period.
    pub wasted_attempts: u64,
    /// Attempts made while the server was down (before `D`).
    pub attempts_while_down: usize,
    /// Attempts from the server's return (`D`) on: `total − while down`.
    pub attempts_after_return: usize,
    /// Time until half of the fleet is connected again, if within the horizon.
    pub to_50: Option<Duration>,
    /// Time until 99 % of the fleet is connected again.
    pub to_99: Option<Duration>,
    /// Time until every client is connected again.
    pub to_100: Option<Duration>,
    /// Clients connected at the end of the run.
    pub connected_at_end: usize,
    /// The horizon the run was limited to.
    pub horizon: Duration,
}

impl OutageMetrics {
    /// Attempts after the server's return, per client of the fleet.
    pub fn attempts_per_client_after_return(&self) -> f64 {
        self.attempts_after_return as f64 / self.clients.max(1) as f64
    }

    /// Compute the figures from a finished record of a server that was down
    /// for `down_for` from the incident on.
    pub fn from_record(record: &Recorder, down_for: Duration, horizon: Duration) -> Self {
        let from = record.from();
        let back = from.saturating_add(down_for);
        let (peak, peak_start) = peak_window(record.attempts(), back, Duration::from_secs(1));
        let clients = record.clients();
        let connected_after = |fraction: f64| {
            let needed = ((clients as f64 * fraction).ceil() as usize).max(1);
            record
                .connects()
                .get(needed - 1)
                .map(|(at, _)| at.saturating_duration_since(from))
                .filter(|d| *d <= horizon)
        };
        OutageMetrics {
            clients,
            peak_after_return: peak,
            peak_at: peak_start.map(|at| at.saturating_duration_since(from)),
            total_attempts: record.attempts().len(),
            wasted_attempts: record.failed(),
            attempts_while_down: record.attempts().partition_point(|&at| at < back),
            attempts_after_return: record.attempts().len()
                - record.attempts().partition_point(|&at| at < back),
            to_50: connected_after(0.5),
            to_99: connected_after(0.99),
            to_100: connected_after(1.0),
            connected_at_end: record.connected(),
            horizon,
        }
    }
}

/// The largest number of `instants` (sorted) inside any window
/// `[t, t + width)` with `t ≥ from`, and the `t` of the first such window.
///
/// The best window always starts at an instant of the list, so a two-pointer
/// sweep over the instants at or after `from` finds it exactly.
pub fn peak_window(
    instants: &[Instant],
    from: Instant,
    width: Duration,
) -> (usize, Option<Instant>) {
    let start = instants.partition_point(|&at| at < from);
    let tail = &instants[start..];
    let mut best = (0, None);
    let mut end = 0;
    for (i, &at) in tail.iter().enumerate() {
        let limit = at.saturating_add(width);
        end = end.max(i);
        while end < tail.len() && tail[end] < limit {
            end += 1;
        }
        if end - i > best.0 {
            best = (end - i, Some(at));
        }
    }
    best
}

/// Attempts counted in each `[from + k·width, from + (k+1)·width)` bucket;
/// only for comparing with the sliding window in tests and docs.
pub fn fixed_buckets(instants: &[Instant], from: Instant, width: Duration) -> Vec<usize> {
    let width = width.as_micros().max(1) as u64;
    let mut buckets = Vec::new();
    for at in instants.iter().filter(|&&at| at >= from) {
        let k = ((at.as_micros() - from.as_micros()) / width) as usize;
        if buckets.len() <= k {
            buckets.resize(k + 1, 0);
        }
        buckets[k] += 1;
    }
    buckets
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(list: &[u64]) -> Vec<Instant> {
        list.iter().map(|&m| Instant::from_millis(m)).collect()
    }

    #[test]
    fn the_window_slides_over_bucket_boundaries() {
        // Fixed buckets hold 3, 2 and 1, but [600, 1600) holds 4.
        let attempts = ms(&[0, 600, 900, 1100, 1400, 2500]);
        let (peak, at) = peak_window(&attempts, Instant::ZERO, Duration::from_secs(1));
        assert_eq!(peak, 4);
        assert_eq!(at, Some(Instant::from_millis(600)));
        assert_eq!(
            fixed_buckets(&attempts, Instant::ZERO, Duration::from_secs(1)),
            [3, 2, 1]
        );
    }

    #[test]
    fn the_window_is_half_open() {
        let attempts = ms(&[1000, 2000, 2000]);
        let (peak, _) = peak_window(&attempts, Instant::ZERO, Duration::from_secs(1));
        assert_eq!(peak, 2);
    }

    #[test]
    fn windows_start_no_earlier_than_from() {
        let attempts = ms(&[9_500, 9_600, 9_700, 10_100]);
        let (peak, at) = peak_window(
            &attempts,
            Instant::from_millis(10_000),
            Duration::from_secs(1),
        );
        assert_eq!((peak, at), (1, Some(Instant::from_millis(10_100))));
        assert_eq!(
            peak_window(&[], Instant::ZERO, Duration::from_secs(1)),
            (0, None)
        );
    }
}
