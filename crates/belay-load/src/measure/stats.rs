//! Latency samples and their percentiles.

use std::time::Duration;

/// Latency samples in microseconds.
#[derive(Debug, Default, Clone)]
pub struct Latencies {
    samples: Vec<u32>,
    sorted: bool,
}

impl Latencies {
    /// No samples.
    pub fn new() -> Self {
        Latencies::default()
    }

    /// Record one sample (saturating at about 71 minutes).
    pub fn record(&mut self, latency: Duration) {
        self.record_micros(u64::try_from(latency.as_micros()).unwrap_or(u64::MAX));
    }

    /// Record one sample in microseconds.
    pub fn record_micros(&mut self, micros: u64) {
        self.samples.push(u32::try_from(micros).unwrap_or(u32::MAX));
        self.sorted = false;
    }

    /// Add every sample of `other`.
    pub fn merge(&mut self, other: Latencies) {
        self.samples.extend(other.samples);
        self.sorted = false;
    }

    /// How many samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether there are no samples.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The `p`-th percentile (`0.0..=100.0`) by the nearest-rank method:
    /// the smallest sample with at least `p` % of the samples at or below
    /// it. `None` without samples.
    pub fn percentile(&mut self, p: f64) -> Option<Duration> {
        if self.samples.is_empty() {
            return None;
        }
        if !self.sorted {
            self.samples.sort_unstable();
            self.sorted = true;
        }
        let n = self.samples.len();
        let rank = ((p.clamp(0.0, 100.0) / 100.0) * n as f64).ceil() as usize;
        let index = rank.clamp(1, n) - 1;
        Some(Duration::from_micros(u64::from(self.samples[index])))
    }
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

/// Milliseconds with three decimals, or `-` when absent.
pub fn ms(d: Option<Duration>) -> String {
    d.map_or_else(|| "-".into(), |d| format!("{:.3}", d.as_secs_f64() * 1e3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(values: &[u64]) -> Latencies {
        let mut l = Latencies::new();
        for v in values {
            l.record_micros(*v);
        }
        l
    }

    #[test]
    fn nearest_rank_percentiles() {
        let mut l = of(&(1..=100).rev().collect::<Vec<_>>());
        assert_eq!(l.percentile(50.0), Some(Duration::from_micros(50)));
        assert_eq!(l.percentile(99.0), Some(Duration::from_micros(99)));
        assert_eq!(l.percentile(100.0), Some(Duration::from_micros(100)));
        assert_eq!(l.percentile(0.0), Some(Duration::from_micros(1)));
        let mut small = of(&[7, 3]);
        assert_eq!(small.percentile(50.0), Some(Duration::from_micros(3)));
        assert_eq!(small.percentile(99.0), Some(Duration::from_micros(7)));
        assert_eq!(of(&[5]).percentile(99.0), Some(Duration::from_micros(5)));
    }

    #[test]
    fn empty_and_merged() {
        assert_eq!(Latencies::new().percentile(50.0), None);
        let mut a = of(&[10, 20]);
        a.percentile(50.0);
        a.merge(of(&[1]));
        assert_eq!(a.len(), 3);
        assert_eq!(a.percentile(0.0), Some(Duration::from_micros(1)));
    }

    #[test]
    fn huge_samples_saturate() {
        let mut l = Latencies::new();
        l.record(Duration::from_secs(1 << 40));
        assert_eq!(
            l.percentile(50.0),
            Some(Duration::from_micros(u64::from(u32::MAX)))
        );
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN, 1.0]), Some(1.0));
    }
}
