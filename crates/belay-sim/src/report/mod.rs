//! Tables of results: markdown for people, CSV for tools.

mod csv;
mod herd;
mod markdown;

pub use csv::{blip_csv, flapping_csv, outage_csv};
pub use herd::{cost_sweep_markdown, spread_markdown, work_markdown};
pub use markdown::{blip_markdown, flapping_markdown, outage_markdown};

use std::time::Duration;

/// `12345` as `12,345`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration in seconds with one decimal (`30.0 s`), or `not within H`.
pub(crate) fn seconds_or_horizon(value: Option<Duration>, horizon: Duration) -> String {
    match value {
        Some(d) => format!("{:.1} s", d.as_secs_f64()),
        None => format!("not within {}", crate::format_duration(horizon)),
    }
}

/// A duration in seconds for CSV: `30.052`, or empty when absent.
pub(crate) fn csv_seconds(value: Option<Duration>) -> String {
    value.map_or_else(String::new, |d| format!("{:.3}", d.as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(204_000), "204,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn missing_times_name_the_horizon() {
        let h = Duration::from_secs(90);
        assert_eq!(seconds_or_horizon(None, h), "not within 90s");
        assert_eq!(
            seconds_or_horizon(Some(Duration::from_millis(30_049)), h),
            "30.0 s"
        );
        assert_eq!(csv_seconds(Some(Duration::from_millis(1500))), "1.500");
        assert_eq!(csv_seconds(None), "");
    }
}
