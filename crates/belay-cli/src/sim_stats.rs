//! `belay sim --stats`: what a run cost.

use std::time::Instant;

use belay_sim::EngineStats;

/// Measures one `belay sim` invocation.
pub(crate) struct RunStats {
    started: Instant,
}

impl RunStats {
    /// Start the clock.
    pub(crate) fn start() -> Self {
        RunStats {
            started: Instant::now(),
        }
    }

    /// One line: wall time, events, events per second, session steps, the
    /// largest agenda, peak resident memory.
    pub(crate) fn finish(&self, runs: &[EngineStats]) -> String {
        let wall = self.started.elapsed().as_secs_f64();
        let events: u64 = runs.iter().map(|s| s.events).sum();
        let steps: u64 = runs.iter().map(|s| s.session_steps).sum();
        let agenda = runs.iter().map(|s| s.peak_agenda).max().unwrap_or(0);
        let rss = peak_rss_kib().map_or_else(
            || "unknown".to_owned(),
            |kib| format!("{:.1} MiB", kib as f64 / 1024.0),
        );
        format!(
            "stats: {} runs, wall {wall:.3} s, {events} events ({:.2} M events/s), \
             {steps} session steps, largest agenda {agenda}, peak RSS {rss}",
            runs.len(),
            events as f64 / wall.max(1e-9) / 1e6,
        )
    }
}

/// `VmHWM` of this process from `/proc/self/status`, in KiB (Linux only).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stats_line_names_every_figure() {
        let line = RunStats::start().finish(&[EngineStats::default()]);
        for word in ["wall", "events/s", "session steps", "peak RSS"] {
            assert!(line.contains(word), "{line}");
        }
    }
}
